"""Scripted coderepair policies: random, the inverse-mutation search heuristic, and the oracle.

All three are stateless: each action is derived from the episode so far (`PolicyInput.history`).
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Sequence

from drill.core.policy import PolicyInput
from drill.core.tools import random_arguments
from drill.core.types import Action, PolicyInfo
from drill.envs.coderepair.env import FILE, TOOLS
from drill.envs.coderepair.mutations import Mutation, mutations
from drill.envs.coderepair.tasks import CodeRepairTask

KIND_ORDER = ("comparison", "arithmetic", "off-by-one", "boolean", "dropped negation", "swapped arguments",
              "swapped branches", "wrong variable")
_LINE = re.compile(r"^\s*(\d+)\| ?(.*)$")
_ENTRY = re.compile(r"solution\.py defines `(\w+)`")


class RandomPolicy:
    """A uniformly random tool with schema-random arguments (the file named half the time)."""

    info = PolicyInfo(name="random")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            rng = random.Random(f"coderepair-random:{item.task.id}:{item.seed}:{len(item.history)}")
            spec = TOOLS[rng.choice(sorted(TOOLS))].spec
            arguments = random_arguments(spec, rng)
            if "path" in arguments and rng.random() < 0.5:
                arguments["path"] = FILE
            actions.append(Action(tool=spec.name, arguments=arguments))
        return actions


def _line_range(source: str, mutation: Mutation) -> tuple[int, int]:
    first = source.count("\n", 0, mutation.start) + 1
    return first, source.count("\n", 0, max(mutation.end - 1, mutation.start)) + 1


def candidates(source: str, entry_point: str) -> list[Mutation]:
    """The single-token inverse mutations the heuristic tries: the direct swaps first (< for <=, + for -, ±1,
    and/or, a dropped `not`, swapped arguments or branches, one other variable), then the wider family
    (every other comparison or arithmetic operator, an inserted `not`, every other variable)."""
    rank = lambda m: (KIND_ORDER.index(m.kind) if m.kind in KIND_ORDER else 99, m.start, m.new)
    swaps = sorted((m for m in mutations(source, 0, entry_point) if m.kind in KIND_ORDER), key=rank)
    keys = {m.key for m in swaps}
    wider = sorted((m for m in mutations(source, 0, entry_point, search=True) if m.key not in keys), key=rank)
    return swaps + wider


class HeuristicPolicy:
    """Read the file, then try single-token inverse mutations (operator swaps, ±1, swapped arguments or branches,
    an inserted `not`, another variable) one at a time with `run_tests`, and submit the first that passes every
    visible test. Out of turns or candidates, it puts the file back and submits it as it was."""

    info = PolicyInfo(name="heuristic")

    def __init__(self, max_turns: int = 30) -> None:
        self.max_turns = max_turns

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(item) for item in inputs]

    def _act(self, item: PolicyInput) -> Action:
        history = list(item.history)
        if not history:
            return Action.call("read_file", path=FILE, start=1, end=0)
        shown = (history[1].observation if len(history) > 1 else item.observation).content
        source = "\n".join(m.group(2) for line in shown.splitlines() if (m := _LINE.match(line))) + "\n"
        match = _ENTRY.search(history[0].observation.content)
        try:
            options = candidates(source, match.group(1) if match else "")
        except SyntaxError:
            options = []
        last = history[-1].action
        edits = sum(1 for t in history if t.action.tool == "replace_lines")
        restore = self._restore(source, options[edits - 1]) if 0 < edits <= len(options) else None
        if last.tool == "replace_lines":
            return Action.call("submit") if restore is not None and last == restore else Action.call("run_tests")
        if last.tool == "run_tests" and history[-1].events:
            run = history[-1].events[0]
            if run.name == "tests_run" and run.data["passed"] == run.data["total"]:
                return Action.call("submit")
        turns_left = self.max_turns - len(history)
        if edits < len(options) and turns_left >= 4:
            return self._edit(source, options[edits], options[edits - 1] if edits else None)
        if restore is not None and turns_left >= 2:
            return restore
        return Action.call("submit")

    @staticmethod
    def _restore(source: str, mutation: Mutation) -> Action:
        first, last = _line_range(source, mutation)
        lines = source.splitlines()
        return Action.call("replace_lines", path=FILE, start=first, end=last, text="\n".join(lines[first - 1:last]))

    @staticmethod
    def _edit(source: str, mutation: Mutation, previous: Mutation | None) -> Action:
        first, last = _line_range(source, mutation)
        if previous is not None:
            p_first, p_last = _line_range(source, previous)
            first, last = min(first, p_first), max(last, p_last)
        lines = mutation.apply(source).splitlines()
        return Action.call("replace_lines", path=FILE, start=first, end=last, text="\n".join(lines[first - 1:last]))


class OraclePolicy:
    """Replace the lines the bug touched with the canonical ones, then submit."""

    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            task: CodeRepairTask = item.task  # type: ignore[assignment]
            if item.history:
                actions.append(Action.call("submit"))
                continue
            actions.append(fix(task))
        return actions


def fix(task: CodeRepairTask) -> Action:
    """The one replace_lines that turns the buggy file into the canonical one."""
    buggy, good = task.buggy.splitlines(), task.canonical.splitlines()
    blocks = [b for b in difflib.SequenceMatcher(a=buggy, b=good, autojunk=False).get_opcodes() if b[0] != "equal"]
    start, end = blocks[0][1], blocks[-1][2]
    g_start, g_end = blocks[0][3], blocks[-1][4]
    return Action.call("replace_lines", path=FILE, start=start + 1, end=end, text="\n".join(good[g_start:g_end]))
