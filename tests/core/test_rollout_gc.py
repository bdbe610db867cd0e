"""`run_episodes` collects garbage less often while it runs, and always puts the collector's settings back."""

from __future__ import annotations

import gc
import subprocess
import sys
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


def test_scripted_play_turns_the_collector_off_and_leaves_no_cyclic_garbage() -> None:
    """Scripted ChaosOps (every policy, every tier) makes no reference cycles: what the scripted fast path (collector
    off, records moved to the oldest generation untraced) relies on. The collector is back on afterwards."""
    from drill.envs import chaosops
    from drill.envs.chaosops.env import TASKS

    seen: list[bool] = []

    class Watching:
        def __init__(self, inner: object) -> None:
            self.inner = inner
            self.info = inner.info  # type: ignore[attr-defined]

        def act(self, inputs):  # type: ignore[no-untyped-def]
            seen.append(gc.isenabled())
            return self.inner.act(inputs)  # type: ignore[attr-defined]

    assert gc.isenabled()
    gc.collect()
    jobs = [(task, seed) for task in TASKS["test"] for seed in range(2)]
    for name in ("random", "heuristic", "oracle"):
        policy = Watching(chaosops.baselines[name]())
        episodes = run_episodes(chaosops.load, jobs, policy, chaosops.rubric())  # type: ignore[arg-type]
        assert len(episodes) == len(jobs)
    assert seen and not any(seen)  # off while the scripted episodes ran
    assert gc.isenabled()
    # nothing cyclic is left behind: counted in a fresh interpreter, where no other test's threads make garbage
    done = subprocess.run([sys.executable, "-c", (
        "import gc; from drill.core import run_episodes; from drill.envs import chaosops; "
        "from drill.envs.chaosops.env import TASKS; gc.collect(); "
        "jobs = [(t, s) for split in ('train', 'test') for t in TASKS[split] for s in range(2)]; "
        "[run_episodes(chaosops.load, jobs, chaosops.baselines[n](), chaosops.rubric()) "
        "for n in ('random', 'heuristic', 'oracle')]; print(gc.collect())")],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_a_model_policy_keeps_the_collector_on() -> None:
    from drill.core.types import PolicyInfo
    from drill.envs import chaosops
    from drill.envs.chaosops.env import TASKS

    seen: list[bool] = []

    class ModelLike:
        info = PolicyInfo(name="model-like", kind="llm")

        def act(self, inputs):  # type: ignore[no-untyped-def]
            seen.append(gc.isenabled())
            return [chaosops.baselines["oracle"]().act([inp])[0] for inp in inputs]

    run_episodes(chaosops.load, [(TASKS["test"][0], 0)], ModelLike())  # type: ignore[arg-type]
    assert seen and all(seen)
