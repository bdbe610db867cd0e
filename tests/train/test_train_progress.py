"""`Heartbeat`: while a phase of a step runs, a line every `every` seconds says what, how far and for how long; no
phase, no lines."""

from __future__ import annotations

import time

from drill.train.progress import Heartbeat


def test_a_phase_is_reported_until_it_ends() -> None:
    lines: list[str] = []
    beat = Heartbeat(lines.append, every=0.05)
    try:
        beat.phase("step 1: playing 4 episodes", total=4)
        beat.done()
        time.sleep(0.4)
        beat.phase(None)
        quiet = len(lines)
        time.sleep(0.2)
    finally:
        beat.stop()
    assert quiet >= 2 and len(lines) == quiet
    assert lines[0].startswith("step 1: playing 4 episodes, 1 of 4 done, ") and lines[0].endswith(" s")


def test_a_phase_without_episodes_says_only_how_long() -> None:
    beat = Heartbeat(lambda text: None, every=30)
    beat.phase("step 2: updating the adapter on 16 episodes")
    try:
        assert beat.line() == "step 2: updating the adapter on 16 episodes, 0 s"
    finally:
        beat.stop()
    assert Heartbeat(lambda text: None).line() is None
