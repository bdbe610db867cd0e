"""The coderepair environment: one file with a planted bug, visible tests to run, hidden tests that decide.

The agent's workspace is one file, `solution.py` (the HumanEval prompt and the buggy solution). It reads and
edits it by line, runs the visible tests (each run is one sandboxed process, `sandbox.py`), and submits: the
submission runs the visible and the hidden tests together, in one process, and ends the episode. The hidden
tests exist only in this process's memory; they are never written where the agent's code runs.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from drill.core.env import Env, check_split
from drill.core.tools import Tool
from drill.core.types import Event, Observation, StepResult
from drill.envs.coderepair import jail, sandbox
from drill.envs.coderepair.problems import problem
from drill.envs.coderepair.sandbox import SANDBOXES, Limits, RunReport
from drill.envs.coderepair.tasks import CodeRepairTask, all_tasks, tasks

FILE = "solution.py"
MAX_FILE_CHARS = 20_000
READ_LINES = 200
DETAIL_CHARS = 700

INSTRUCTIONS = (
    "You are fixing a bug in a Python function. Your workspace is one file, solution.py. Read it with "
    "read_file, change it with replace_lines, and check your fix with run_tests, which runs the visible tests "
    "(you cannot see or edit the test code itself). When the function is correct, call submit: hidden tests "
    "you have not seen decide whether the fix is right, so fix the function for every input its docstring "
    "describes, not just for the tests shown."
)


def list_files() -> None:
    """List the files in your workspace."""


def read_file(path: str, start: int = 1, end: int = 0) -> None:
    """Show lines of a file, numbered.

    Args:
        path: The file, e.g. solution.py.
        start: The first line to show (1-based).
        end: The last line to show; 0 shows to the end (at most 200 lines at a time).
    """


def run_tests() -> None:
    """Run the visible tests against solution.py in a sandbox; shows each test, pass or fail, with the
    assertion and what the function returned or raised."""


def replace_lines(path: str, start: Annotated[int, Field(ge=1)], end: Annotated[int, Field(ge=0)],
                  text: str) -> None:
    """Replace lines start..end (inclusive, 1-based) of a file with text. Use end = start - 1 to insert text
    before line start, and an empty text to delete the lines. Keep the indentation right.

    Args:
        path: The file, e.g. solution.py.
        start: The first line to replace.
        end: The last line to replace.
        text: The new lines (without line numbers).
    """


def submit() -> None:
    """Submit solution.py as your fix. The visible and hidden tests run once and the episode ends."""


TOOLS: dict[str, Tool] = {fn.__name__: Tool.from_function(fn)
                          for fn in (list_files, read_file, run_tests, replace_lines, submit)}


def numbered(text: str, start: int = 1, end: int = 0) -> str:
    lines = text.splitlines()
    end = len(lines) if end <= 0 else min(end, len(lines))
    end = min(end, start + READ_LINES - 1)
    return "\n".join(f"{n:4d}| {lines[n - 1]}" for n in range(start, end + 1))


def docstring(task: CodeRepairTask) -> str:
    tree = ast.parse(task.canonical)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == task.entry_point:
            return ast.get_docstring(node) or ""
    return ""


def render_report(report: RunReport, label: str = "visible") -> str:
    """A test report as a user would paste it: failures first, each with its assertion and what happened."""
    failed = [o for o in report.outcomes if not o.passed]
    head = f"{report.total} {label} tests: {report.passed} passed, {len(failed)} failed"
    lines = [head]
    if report.stopped:
        lines.append(f"the run stopped early: {report.message.splitlines()[0]}")
    for outcome in failed:
        detail = outcome.detail if len(outcome.detail) <= DETAIL_CHARS else outcome.detail[: DETAIL_CHARS - 4] + " ..."
        source = "\n".join("    " + line for line in outcome.source.splitlines())
        lines.append(f"FAILED {outcome.name}\n{source}\n  " + detail.replace("\n", "\n  "))
    passed = [o.name for o in report.outcomes if o.passed]
    if passed:
        lines.append("PASSED " + ", ".join(passed))
    return "\n".join(lines)


def first_report(task: CodeRepairTask, limits: Limits, isolation: str = "jail") -> str:
    """The visible tests' report on the buggy file: the failing-test report of the task statement."""
    return _first_report(task.problem_id, task.entry_point, task.buggy, limits, isolation)


@functools.lru_cache(maxsize=4096)
def _first_report(problem_id: str, entry_point: str, buggy: str, limits: Limits, isolation: str) -> str:
    p = problem(problem_id)
    return render_report(sandbox.run_tests(buggy, entry_point, p.visible, p.namespace(), limits, seed_prefix=p.id,
                                           sandbox=isolation))


class CodeRepairEnv(Env[CodeRepairTask]):
    """Fix a HumanEval function with a planted bug. Options: `max_turns`, `per_problem` (variants of each
    problem in a split; 0: all), `call_seconds` (per-call time limit in the sandbox), `sandbox` ("jail", the
    default: refuses with one line where the jail cannot be built; "audit-hook": the weaker mode, by name only)."""

    name = "coderepair"
    roles = ("coder",)
    task_type = CodeRepairTask

    def __init__(self, max_turns: int = 30, per_problem: int = 1, call_seconds: float = 2.0,
                 sandbox: str = "jail") -> None:
        super().__init__(max_turns=max_turns, per_problem=per_problem, call_seconds=call_seconds, sandbox=sandbox)
        if max_turns < 2:
            raise ValueError("max_turns must be at least 2 (one edit and a submission)")
        if call_seconds <= 0:
            raise ValueError("call_seconds must be positive")
        if sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {sandbox!r}")
        problem_here = jail.unavailable() if sandbox == "jail" else None
        if problem_here:
            raise jail.JailUnavailable(jail.refusal(problem_here))
        self.sandbox = sandbox
        self.max_turns = max_turns
        self.per_problem = per_problem
        self.limits = Limits(call_seconds=call_seconds, run_seconds=max(20.0, 10 * call_seconds))

    def tasks(self, split: str = "test") -> list[CodeRepairTask]:
        check_split(split)
        return tasks(split, self.per_problem)

    def task(self, task_id: str) -> CodeRepairTask:
        for task in all_tasks():
            if task.id == task_id:
                return task
        raise KeyError(f"{self.name}: no task with id {task_id!r}")

    # -- episode ---------------------------------------------------------------------------------

    def _reset(self, task: CodeRepairTask, seed: int) -> Observation:
        self.current = task
        self.source = task.buggy
        self.turn = 0
        doc = "\n".join("    " + line for line in docstring(task).splitlines())
        statement = (
            f"solution.py defines `{task.entry_point}`, and it has a bug. The function should do what its "
            f"docstring says:\n\n{doc}\n\nA user ran the tests and pasted this report:\n\n"
            f"{first_report(task, self.limits, self.sandbox)}\n\nFix the function in solution.py, then submit."
        )
        return self._observation(statement)

    def _observation(self, content: str, error: str | None = None) -> Observation:
        return Observation(role="coder", content=content, step=self.turn, error=error,
                           tools=[t.spec for t in TOOLS.values()], instructions=INSTRUCTIONS)

    def _tools(self) -> Mapping[str, Tool]:
        return TOOLS

    def _acting(self) -> tuple[str, int]:
        return "coder", self.turn

    def _end_turn(self, content: str, events: list[Event], error: str | None = None,
                  finished: bool = False) -> StepResult:
        self.turn += 1
        if not finished and self.turn >= self.max_turns:
            events = [*events, Event(name="out_of_turns", step=self.turn - 1, role="coder")]
            content += f"\n\nThe turn limit ({self.max_turns}) is reached without a submission; the episode ends."
            finished = True
        return StepResult(observation=self._observation(content, error), events=events, done=finished)

    def _reject(self, message: str, event: Event) -> StepResult:
        return self._end_turn("Your action was not carried out.", [event], message)

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        if tool in ("read_file", "replace_lines") and arguments["path"] != FILE:
            return self.invalid(f"{tool}: there is no file {arguments['path']!r}; the workspace holds only {FILE}",
                                "rule", tool)
        if tool == "list_files":
            return self._end_turn(f"{FILE}  ({len(self.source.splitlines())} lines)", [])
        if tool == "read_file":
            return self._read(arguments["start"], arguments["end"])
        if tool == "replace_lines":
            return self._replace(arguments["start"], arguments["end"], arguments["text"])
        if tool == "run_tests":
            return self._run()
        return self._submit()

    def _read(self, start: int, end: int) -> StepResult:
        total = len(self.source.splitlines())
        if start < 1 or start > max(total, 1) or (end and end < start):
            return self.invalid(f"read_file: lines {start}..{end} are outside {FILE}, which has {total} lines",
                                "rule", "read_file")
        return self._end_turn(numbered(self.source, start, end), [])

    def _replace(self, start: int, end: int, text: str) -> StepResult:
        lines = self.source.splitlines()
        if start > len(lines) + 1 or end < start - 1 or end > len(lines):
            return self.invalid(f"replace_lines: lines {start}..{end} do not fit {FILE}, which has {len(lines)} "
                                "lines (use end = start - 1 to insert)", "rule", "replace_lines")
        new = lines[: start - 1] + text.splitlines() + lines[end:]
        source = "\n".join(new) + "\n"
        if len(source) > MAX_FILE_CHARS:
            return self.invalid(f"replace_lines: {FILE} would be {len(source)} characters; the limit is "
                                f"{MAX_FILE_CHARS}", "rule", "replace_lines")
        self.source = source
        added = len(text.splitlines())
        event = Event(name="edited", step=self.turn, role="coder",
                      data={"start": start, "end": end, "lines": added})
        shown = numbered(source, max(1, start - 2), start + added + 1)
        return self._end_turn(f"Replaced lines {start}..{end} with {added} line(s). Now:\n{shown}", [event])

    def _run(self) -> StepResult:
        p = self.current.problem
        report = sandbox.run_tests(self.source, self.current.entry_point, p.visible, p.namespace(), self.limits,
                                   seed_prefix=p.id, sandbox=self.sandbox)
        event = Event(name="tests_run", step=self.turn, role="coder",
                      data={"passed": report.passed, "total": report.total, "errors": report.errors,
                            "stopped": report.stopped or ""})
        return self._end_turn(render_report(report), [event])

    def _submit(self) -> StepResult:
        p = self.current.problem
        report = sandbox.run_tests(self.source, self.current.entry_point, p.visible + p.hidden, p.namespace(),
                                   self.limits, seed_prefix=p.id, sandbox=self.sandbox)
        visible = report.outcomes[: len(p.visible)]
        hidden = report.outcomes[len(p.visible):]
        data = {"visible_passed": sum(o.passed for o in visible), "visible_total": len(visible),
                "hidden_passed": sum(o.passed for o in hidden), "hidden_total": len(hidden),
                "errors": report.errors, "stopped": report.stopped or "",
                "changed": self.source != self.current.buggy}
        event = Event(name="submitted", step=self.turn, role="coder", data=data)
        content = (f"Submitted. Visible tests: {data['visible_passed']}/{data['visible_total']} passed; hidden tests: "
                   f"{data['hidden_passed']}/{data['hidden_total']} passed.")
        if report.stopped:
            content += f"\nThe run stopped early: {report.message.splitlines()[0]}"
        return self._end_turn(content, [event], finished=True)
