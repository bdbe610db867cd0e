"""`run_episodes` collects garbage less often while it runs, and always puts the collector's settings back."""

from __future__ import annotations

import gc
import threading

import pytest

from drill.core.rollout import GC_THRESHOLD, fewer_collections, run_episodes


def test_thresholds_are_raised_inside_and_restored_after_nested_and_concurrent_blocks() -> None:
    before = gc.get_threshold()
    inside: list[tuple[int, ...]] = []
    entered, release = threading.Barrier(2), threading.Event()

    def worker() -> None:
        with fewer_collections():
            entered.wait()
            release.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    with fewer_collections():
        entered.wait()
        with fewer_collections():
            inside.append(gc.get_threshold())
        release.set()
        thread.join()
        inside.append(gc.get_threshold())  # the other block left first: still raised for this one
    assert inside == [(max(GC_THRESHOLD, before[0]), *before[1:])] * 2
    assert gc.get_threshold() == before


def _broken_env() -> None:
    raise RuntimeError("boom")


def test_a_failing_run_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError, match="boom"):
        run_episodes(_broken_env, [(object(), 0)], {})  # type: ignore[arg-type, list-item]
    assert gc.get_threshold() == before
