"""The judge's channel to the solution's process: it never waits without a deadline (writing the requests included),
and it does not tell the solution which of its answers failed."""

from __future__ import annotations

import signal
import time
from types import FrameType

from drill.envs.coderepair import sandbox
from drill.envs.coderepair.problems import problem, problems

STOPS_READING = (
    "import os, time\n"
    "def f(x):\n"
    "    os.write(4, b'{\"id\": 1, \"value\": 0}\\n')  # this call's reply, forged on the channel\n"
    "    time.sleep(30)  # and the process never reads its input again\n"
)
class Hung(Exception):
    """Not an OSError: the judge's own error handling must not swallow it."""


TESTS = [sandbox.TestCase("test_1", "", "def _drill_test(candidate):\n    assert candidate(0) == 0\n"),
         sandbox.TestCase("test_2", "", "def _drill_test(candidate):\n    assert candidate('x' * 300_000) == 0\n")]


def test_a_child_that_stops_reading_its_input_cannot_hold_the_judge() -> None:
    """The second request is larger than the pipe: a blocking write waited for ever (the child, asleep, holds the
    pipe open), past the call's and the run's time limits; it is a timeout like any other now."""

    def hung(number: int, frame: FrameType | None) -> None:
        raise Hung("the judge was still writing to a child that had stopped reading after 10 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        started = time.monotonic()
        report = sandbox.run_tests(STOPS_READING, "f", TESTS, {}, sandbox.Limits(call_seconds=0.5))
        took = time.monotonic() - started
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert [o.passed for o in report.outcomes] == [True, False], report
    assert report.stopped == "timeout" and "stopped reading its input" in report.message, report
    assert took < 5, took


def test_no_test_asks_the_solution_anything_after_a_wrong_answer() -> None:
    """HumanEval/95's asserts read `assert candidate(d) == True, "..." + str(candidate(d))`: the message's call came
    only after a failure, so the solution knew which answers were wrong and could pass that to the next episode
    (through the page cache, a snippet that kept the buggy function went from 0.62 to 1.69 on humaneval-95-b; 77's
    last message asks about 1728 after a wrong answer for 1729). Answered wrong at once, every test of every problem
    asks the child one thing: the call that fails."""
    asked_more = {}
    for p in problems():
        for test in p.visible + p.hidden:
            asked: list[object] = []
            sandbox._judge(test, p.namespace(), lambda *args: asked.append(args) or "\0wrong", test.name, [])
            if len(asked) != 1:
                asked_more[f"{p.id} {test.name}"] = asked
    assert not asked_more, asked_more
    shown = problem("HumanEval/95").visible[0].source
    assert "str(candidate(" in shown, shown  # the agent still sees the assert as HumanEval wrote it


def test_text_from_the_solution_reaches_the_report_as_utf_8() -> None:
    """An exception's message is the solution's own text, and JSON carries a lone surrogate: in the report it made an
    observation that cannot be encoded, and a tokenizer refuses such text (`TextInputSequence must be str`), so one
    solution could stop a training run. It is shown escaped, like a returned string's repr."""
    raises = "def f(x):\n    raise ValueError('bad ' + chr(0xD800))\n"
    tests = [sandbox.TestCase("test_1", "", "def _drill_test(candidate):\n    assert candidate(0) == 0\n"),
             sandbox.TestCase("test_2", "", "def _drill_test(candidate):\n"
                                            "    assert candidate(1) == 0, candidate(2)\n")]
    returns = "def f(x):\n    return chr(0xDC80) if x == 2 else 1\n"
    at_load = "raise SystemExit(chr(0xDFFF))\ndef f(x):\n    return 0\n"
    for source in (raises, returns, at_load):
        report = sandbox.run_tests(source, "f", tests, {})
        for text in [report.message, *(o.detail for o in report.outcomes)]:
            text.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate
    assert "raised ValueError: bad \\ud800" in sandbox.run_tests(raises, "f", tests, {}).outcomes[0].detail


SUBCLASSES = ("import enum\n"
              "from collections import Counter, namedtuple\n"
              "class Liar(int):\n"
              "    def __eq__(self, other):\n"
              "        return True\n"
              "    __hash__ = int.__hash__\n"
              "    def __int__(self):\n"
              "        return 10\n"
              "class Lying(tuple):\n"
              "    def __eq__(self, other):\n"
              "        return True\n"
              "    __hash__ = tuple.__hash__\n"
              "    def __iter__(self):\n"
              "        return iter((10, 24))\n"
              "class Color(enum.IntEnum):\n"
              "    RED = 3\n"
              "def f(kind):\n"
              "    if kind == 'counter':\n"
              "        return Counter('abca')\n"
              "    if kind == 'namedtuple':\n"
              "        return namedtuple('Result', 'sum product')(3, 1)\n"
              "    if kind == 'enum':\n"
              "        return Color.RED\n"
              "    return Lying((Liar(-1), Liar(-1)))\n")
EXPECTED = {"counter": "{'a': 2, 'b': 1, 'c': 1}", "namedtuple": "(3, 1)", "enum": "3", "liar": "(10, 24)"}


def test_an_honest_subclass_of_a_plain_type_keeps_its_credit_and_a_liar_is_judged_by_what_it_holds() -> None:
    """HumanEval's harness compares with `==`, so a correct `histogram` (HumanEval/111) that returns a Counter or a
    `sum_product` (HumanEval/8) that returns a namedtuple passes it; here such answers failed every test ("returned an
    object of type Counter, not plain data": -0.01 instead of 1.69 on all six variants) until the child sent them as
    what they hold. What crosses is read through the base type's own methods: an overridden `__eq__`, `__iter__` or
    `__int__` is never called, and the value the liar holds fails."""
    code = "def _drill_test(candidate):\n    assert candidate({!r}) == {}\n"
    tests = [sandbox.TestCase(f"test_{kind}", "", code.format(kind, value)) for kind, value in EXPECTED.items()]
    report = sandbox.run_tests(SUBCLASSES, "f", tests, {})
    assert [o.passed for o in report.outcomes] == [True, True, True, False], report
    assert "candidate('liar') returned (-1, -1)" in report.outcomes[-1].detail, report.outcomes[-1]
