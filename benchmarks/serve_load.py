"""Load and isolation of `drill serve`: N concurrent sessions on loopback, each playing a full episode.

Starts `drill serve ENV` in a subprocess, opens N WebSocket sessions at once (one thread each, released together
by a barrier), plays one full episode per session with a scripted policy chosen client-side, and checks that every
session's episode equals the same episode played locally, byte for byte (no cross-talk). Prints sessions/s, the
p50/p95 step latency (one WebSocket round trip: the step message to its observation) and the machine.

    python benchmarks/serve_load.py                          # triage agent mode and chaosops, 100 sessions each
    python benchmarks/serve_load.py --env chaosops --sessions 200 --policy oracle

`tests/serve/test_serve_load.py` runs `run_load` with 100 sessions and asserts no errors and no cross-talk; the
figures are reported here, never asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from drill import registry
from drill.core import run_episodes
from drill.core.types import Action, StepResult
from drill.serve.client import RemoteEnv


class TimedRemoteEnv(RemoteEnv):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.latencies: list[float] = []

    def step(self, action: Action) -> StepResult:
        start = time.perf_counter()
        result = super().step(action)
        self.latencies.append(time.perf_counter() - start)
        return result


@dataclass
class LoadResult:
    env: str
    sessions: int
    seconds: float
    steps: int
    latencies: list[float] = field(repr=False)
    errors: list[str]
    mismatches: int

    @property
    def sessions_per_s(self) -> float:
        return self.sessions / self.seconds

    def percentile(self, q: float) -> float:
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[int(q) - 1] if self.latencies else 0.0

    def line(self) -> str:
        return (f"{self.env}: {self.sessions} concurrent sessions, {self.steps} steps in {self.seconds:.2f} s · "
                f"{self.sessions_per_s:.1f} sessions/s · {self.steps / self.seconds:.0f} steps/s · step latency "
                f"p50 {self.percentile(50) * 1000:.1f} ms, p95 {self.percentile(95) * 1000:.1f} ms · "
                f"errors {len(self.errors)} · episodes differing from local {self.mismatches}")


def run_load(url: str, env_name: str, options: dict[str, Any], sessions: int, policy: str = "heuristic",
             timeout: float = 300.0) -> LoadResult:
    """`sessions` episodes at once against `url`, task i % len(tasks) with seed i; compared with local episodes."""
    spec = registry.get(env_name)
    make_local = spec.make(options)
    tasks = make_local().tasks("test")
    jobs = [(tasks[i % len(tasks)], i) for i in range(sessions)]
    rubric = spec.rubric_for(options)
    local = run_episodes(make_local, jobs, spec.baselines(options)[policy](), rubric)
    remote: list[Any] = [None] * sessions
    envs: list[TimedRemoteEnv | None] = [None] * sessions
    errors: list[str] = []
    barrier = threading.Barrier(sessions + 1)

    def play(i: int) -> None:
        env = envs[i] = TimedRemoteEnv(url, make_local(), timeout=timeout)
        barrier.wait()
        try:
            remote[i] = run_episodes(lambda: env, [jobs[i]], spec.baselines(options)[policy](), rubric)[0]
        except Exception as exc:  # reported, never hidden: a benchmark with errors fails its test
            errors.append(f"session {i}: {type(exc).__name__}: {exc}")
        finally:
            env.close()

    threads = [threading.Thread(target=play, args=(i,), daemon=True) for i in range(sessions)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join(timeout)
    seconds = time.perf_counter() - start
    latencies = [x for env in envs if env is not None for x in env.latencies]
    mismatches = sum(1 for a, b in zip(remote, local) if a is None or a.model_dump_json() != b.model_dump_json())
    return LoadResult(env_name, sessions, seconds, len(latencies), latencies, errors, mismatches)


def machine() -> str:
    cpus = os.cpu_count()
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    return f"{platform.processor() or platform.machine()}, {cpus} CPUs, Python {platform.python_version()}, {platform.system()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", help="triage (agent mode) and chaosops by default; repeatable")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--policy", default="heuristic")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "serve"))
    from conftest import Served  # the tests' server launcher: `drill serve` on a free loopback port

    print(f"machine: {machine()}; server: one `drill serve` process (uvicorn, one worker)")
    for name in args.env or ["triage", "chaosops"]:
        options = {"mode": "agent"} if name == "triage" else {}
        flags = [f for k, v in options.items() for f in ("-E", f"{k}={v}")]
        server = Served(name, tuple(flags + ["--max-sessions", str(max(256, args.sessions))]))
        try:
            result = run_load(server.url, name, registry.get(name).parse_options(options), args.sessions, args.policy)
        finally:
            server.stop()
        print(result.line())
        for error in result.errors[:5]:
            print("  ", error)


if __name__ == "__main__":
    main()
