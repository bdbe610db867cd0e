"""Code repair with execution feedback: fix a HumanEval function with a planted bug; hidden tests decide.

    from drill.envs import coderepair
    env = coderepair.load(max_turns=30)             # tasks("test"): one variant per test problem by default
    score = coderepair.rubric().score(episode, task)
    coderepair.baselines["heuristic"]()              # also "random", "oracle"

See README.md in this folder for what the agent sees, the tools, the reward and the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable

from drill.core.policy import Policy
from drill.envs.coderepair import jail, sandbox
from drill.envs.coderepair.baselines import HeuristicPolicy, OraclePolicy, RandomPolicy
from drill.envs.coderepair.env import TOOLS, CodeRepairEnv
from drill.envs.coderepair.rubric import DEFAULT_WEIGHTS, rubric
from drill.envs.coderepair.jail import JailUnavailable
from drill.envs.coderepair.sandbox import SANDBOXES, Limits, RunReport, run_tests
from drill.envs.coderepair.spec import SPEC
from drill.envs.coderepair.tasks import TIERS, CodeRepairTask, tasks

__all__ = ["DEFAULT_WEIGHTS", "SANDBOXES", "SPEC", "TIERS", "TOOLS", "CodeRepairEnv", "CodeRepairTask",
           "HeuristicPolicy", "JailUnavailable", "Limits", "OraclePolicy", "RandomPolicy", "RunReport", "baselines",
           "jail", "load", "rubric", "run_tests", "sandbox", "tasks"]


def load(max_turns: int = 30, per_problem: int = 1, call_seconds: float = 2.0, sandbox: str = "jail") -> CodeRepairEnv:
    return CodeRepairEnv(max_turns=max_turns, per_problem=per_problem, call_seconds=call_seconds, sandbox=sandbox)


baselines: dict[str, Callable[[], Policy]] = {"random": RandomPolicy, "heuristic": HeuristicPolicy,
                                             "oracle": OraclePolicy}
