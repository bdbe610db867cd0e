"""ChaosOps: incident response in a production fleet run partly by AI agents (see README.md).

Four roles (SRE, Oversight, Dev, Manager) coordinate under partial observability to diagnose, fix
and resolve one of nine failures, and to flag the fleet agent that caused it when one did.

    from drill.envs import chaosops
    env = chaosops.load()
    episodes = run_episodes(chaosops.load, [(task, 0) for task in env.tasks()], chaosops.baselines["oracle"](),
                            chaosops.rubric())
"""

from __future__ import annotations

from drill.envs.chaosops.baselines import HeuristicPolicy, OraclePolicy, RandomPolicy, baselines
from drill.envs.chaosops.env import TASKS, ChaosOpsEnv, ChaosOpsObservation, ChaosOpsTask
from drill.envs.chaosops.failures import FAILURES, TIERS, FailureType, FixStep, TierSpec
from drill.envs.chaosops.rubric import rubric
from drill.envs.chaosops.spec import SPEC
from drill.envs.chaosops.views import RoleView
from drill.envs.chaosops.world import WorldSim

__all__ = [
    "FAILURES", "TASKS", "TIERS", "ChaosOpsEnv", "ChaosOpsObservation", "ChaosOpsTask", "FailureType", "FixStep",
    "HeuristicPolicy", "OraclePolicy", "RandomPolicy", "RoleView", "SPEC", "TierSpec", "WorldSim", "baselines", "load",
    "rubric",
]


def load(text_views: bool = True) -> ChaosOpsEnv:
    """A ChaosOps environment; the scenario comes from the task, the details from the seed.

    `text_views=False` skips the text views, for runs where every policy is scripted (they read `observation.view`).
    """
    return ChaosOpsEnv(text_views=text_views)
