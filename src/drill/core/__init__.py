"""The Drill contract: records, the `Env` base, tools, rubrics, the policy protocol, rollouts, check_env."""

from drill.core.check import EnvCheckError, check_env
from drill.core.env import Env, check_split
from drill.core.policy import Policy, PolicyInput, parse_role_assignment
from drill.core.rollout import run_episodes
from drill.core.rubric import Component, Rubric, RubricError
from drill.core.tools import MAX_ARGUMENT_CHARS, Tool, ToolArgumentError, random_arguments
from drill.core.types import (
    SPLITS,
    Action,
    Episode,
    Event,
    Generation,
    Observation,
    PolicyInfo,
    Score,
    StepResult,
    Task,
    ToolSpec,
    Turn,
)

__all__ = [
    "MAX_ARGUMENT_CHARS", "SPLITS", "Action", "Component", "Env", "EnvCheckError", "Episode", "Event", "Generation",
    "Observation", "Policy", "PolicyInfo", "PolicyInput", "Rubric", "RubricError", "Score", "StepResult",
    "Task", "Tool", "ToolArgumentError", "ToolSpec", "Turn", "check_env", "check_split", "parse_role_assignment",
    "random_arguments", "run_episodes",
]
