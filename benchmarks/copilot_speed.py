"""Copilot speed: world build time, reset and step throughput, and the wall time of the default eval matrix.

    .venv/bin/python benchmarks/copilot_speed.py [--repeats 3]

The process is pinned to one CPU core (where the OS allows it). The matrix is what `drill eval copilot` runs by
default (65 test tasks x 3 seeds x random, heuristic, oracle), scored and summarised, without writing results.json
or plotting. Target: under 5 s. Resets are cheap because episodes copy the world's dicts, not its records.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from drill.core import Action
from drill.envs.copilot import SPEC, CopilotEnv, baselines, rubric
from drill.envs.copilot.generate import build_world
from drill.evaluate.matrix import play, summary_rows


def world_seconds() -> float:
    build_world.cache_clear()
    start = time.perf_counter()
    build_world(0)
    return time.perf_counter() - start


def steps_per_second(min_steps: int = 20_000) -> tuple[float, float]:
    """Resets per second, and env.step throughput replaying every test task's reference solution."""
    env = CopilotEnv(transient_rate=0.0)
    tasks = env.tasks("test")
    resets, steps, reset_time, start = 0, 0, 0.0, time.perf_counter()
    while steps < min_steps:
        for task in tasks:
            began = time.perf_counter()
            env.reset(task, steps)
            reset_time += time.perf_counter() - began
            resets += 1
            for call in task.solution:
                env.step(Action(tool=call.tool, arguments=dict(call.arguments)))
                steps += 1
    return resets / reset_time, steps / (time.perf_counter() - start)


def matrix_seconds() -> tuple[float, float, int, int]:
    env = CopilotEnv()
    tasks = env.tasks("test")
    specs = {name: {"assistant": baselines[name]()} for name in ("random", "heuristic", "oracle")}
    start, cpu_start = time.perf_counter(), time.process_time()
    played = play(CopilotEnv, specs, [(t, s) for t in tasks for s in range(SPEC.seeds)], rubric(), SPEC.batch)
    summary_rows(SPEC, played, {t.id: t for t in tasks})
    episodes = sum(len(e) for e in played.values())
    return (time.perf_counter() - start, time.process_time() - cpu_start, episodes,
            sum(len(e.turns) for eps in played.values() for e in eps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    model = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    print(f"machine: {model}; {os.cpu_count()} cores visible, pinned to 1; Python {platform.python_version()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average before the run: {load:.2f} (the machine may be shared; CPU time is the steadier figure)")
    print(f"world build (seed 0, uncached): median {statistics.median(world_seconds() for _ in range(args.repeats)):.2f} s")
    rates = [steps_per_second() for _ in range(args.repeats)]
    print(f"resets/s: median {statistics.median(r for r, _ in rates):,.0f}; env steps/s replaying reference "
          f"solutions: median {statistics.median(s for _, s in rates):,.0f}")
    runs = [matrix_seconds() for _ in range(args.repeats)]
    wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
    print(f"default matrix: {runs[0][2]} episodes, {runs[0][3]:,} turns; wall median {statistics.median(wall):.2f} s, "
          f"CPU median {statistics.median(cpu):.2f} s over {args.repeats} runs (target < 5 s)")


if __name__ == "__main__":
    main()
