"""Coderepair's registry entry: how `drill eval/watch/train coderepair` load, score, summarize and describe it."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from drill.core.spec import Chart, Column, EnvOption, EnvSpec, TaskFilter, percent
from drill.core.types import Episode
from drill.envs.coderepair.baselines import HeuristicPolicy, OraclePolicy, RandomPolicy
from drill.envs.coderepair.env import CodeRepairEnv
from drill.envs.coderepair.sandbox import SANDBOXES
from drill.envs.coderepair.rubric import (
    DEFAULT_WEIGHTS,
    all_passed,
    hidden_passed,
    rubric,
    submission,
)
from drill.envs.coderepair.tasks import TIERS, CodeRepairTask


def summarize(episodes: Sequence[Episode], tasks: Mapping[str, CodeRepairTask]) -> dict[str, Any]:
    """Mean total, hidden-test share, solve rate (every test passes), submit rate, turns and test runs."""
    return {
        "total": statistics.fmean(e.score.total for e in episodes if e.score),
        "hidden_passed": statistics.fmean(hidden_passed(e, tasks[e.task_id]) for e in episodes),
        "solved": statistics.fmean(all_passed(e, tasks[e.task_id]) for e in episodes),
        "submitted": statistics.fmean(submission(e) is not None for e in episodes),
        "turns": statistics.fmean(len(e.turns) for e in episodes),
        "test_runs": statistics.fmean(e.count("tests_run") + e.count("submitted") for e in episodes),
    }


def success(episode: Episode, task: CodeRepairTask) -> bool:
    """The submitted code passes every test, hidden and visible (`rubric.all_passed`)."""
    return all_passed(episode, task) == 1.0


def describe(task: CodeRepairTask) -> str:
    return (f"{task.id} ({task.problem_id}, {task.tier}): planted {', '.join(task.kinds)}; breaks "
            f"{task.visible_failed} visible and {task.hidden_failed} hidden tests")


SPEC: EnvSpec[CodeRepairTask] = EnvSpec(
    name="coderepair",
    summary="fix a HumanEval function with a planted bug; hidden tests in a sandbox decide",
    load=CodeRepairEnv,
    rubric=lambda options, params: rubric(),
    baselines=lambda options: {"random": RandomPolicy,
                               "heuristic": functools.partial(HeuristicPolicy, options.get("max_turns", 30)),
                               "oracle": OraclePolicy},
    summarize=summarize,
    success=success,
    columns=(Column("total"), Column("hidden_passed", percent), Column("solved", percent),
             Column("submitted", percent), Column("turns", "{:.1f}".format), Column("test_runs", "{:.1f}".format)),
    describe=describe,
    options=(
        EnvOption("max_turns", int, 30, "Turns before the episode ends unsubmitted.", flag="--max-turns"),
        EnvOption("per_problem", int, 1, "Variants of each problem in a split (0: all; the test split has 76).",
                  flag="--per-problem"),
        EnvOption("call_seconds", float, 2.0, "Sandbox wall-clock limit per call of the function.",
                  flag="--call-seconds"),
        EnvOption("sandbox", str, "jail", "Where agent code runs: jail (bubblewrap namespaces, seccomp, an "
                  "unprivileged uid; refuses where it cannot be built) or audit-hook (the weaker Python hook alone, "
                  "by name only; warns).", choices=SANDBOXES),
    ),
    group=lambda task: task.tier,
    group_name="tier",
    filters=(TaskFilter("tier", "--tier", TIERS, "Only this tier (repeatable)."),),
    charts=(Chart("components.png", "components", "coderepair: mean reward components per policy", "mean"),),
    batch=16,
    notes={"splits": "by HumanEval problem: no test problem appears in train under any mutation",
           "sandbox": "an OS jail (bubblewrap namespaces, seccomp, unprivileged uid, read-only minimal root); "
                      "the audit hook alone only with -E sandbox=audit-hook",
           "weights": ", ".join(f"{k}={v}" for k, v in DEFAULT_WEIGHTS.items())},
)
