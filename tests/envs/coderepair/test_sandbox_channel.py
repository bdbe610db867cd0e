"""The judge never waits on the solution's process without a deadline: writing the requests included."""

from __future__ import annotations

import signal
import time
from types import FrameType

from drill.envs.coderepair import sandbox

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
