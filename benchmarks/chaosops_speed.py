"""ChaosOps speed: env steps per second, and the wall time of the default 405-episode baseline matrix.

    .venv/bin/python benchmarks/chaosops_speed.py [--repeats 3]

The process is pinned to one CPU core (where the OS allows it). The matrix is what
`drill eval chaosops` runs by default (5 seeds x 9 failures x 3 tiers x random, heuristic, oracle),
scored and summarised, without writing results.json or plotting. Target: under 2 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from drill.core import Action
from drill.envs import chaosops
from drill.evaluate.matrix import play, summary_rows
from drill.envs.chaosops.env import TASKS

CYCLE = [Action.call("communicate", to="team", message="status?"), Action.call("restart", target="payments"),
         Action.call("identify_root_cause", cause="db_deadlock"), Action.call("noop"),
         Action.call("scale", service="auth", replicas=4), Action.call("flag_rogue", agent="autoscaler"),
         Action.call("escalate", team="network"), Action.call("resolve")]


def env_steps_per_second(min_steps: int = 40_000) -> tuple[float, int]:
    """env.step throughput on a cycle of valid actions (no policy, no records beyond the env's own)."""
    env = chaosops.load()
    steps, start = 0, time.perf_counter()
    while steps < min_steps:
        for task in TASKS["test"]:
            env.reset(task, steps)
            i = 0
            while not env.done:
                env.step(CYCLE[i % len(CYCLE)])
                i += 1
            steps += i
    return steps / (time.perf_counter() - start), steps


def matrix_seconds() -> tuple[float, float, int, int]:
    """Wall and CPU seconds of the default matrix, its episode count and its turn count."""
    specs = {name: dict.fromkeys(chaosops.ChaosOpsEnv.roles, chaosops.baselines[name]())
             for name in ("random", "heuristic", "oracle")}
    start, cpu_start = time.perf_counter(), time.process_time()
    jobs = [(task, seed) for task in TASKS["test"] for seed in range(5)]
    played = play(chaosops.ChaosOpsEnv, specs, jobs, chaosops.rubric(), chaosops.SPEC.batch)
    summary_rows(chaosops.SPEC, played, {t.id: t for t in TASKS["test"]})
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    episodes = sum(len(e) for e in played.values())
    return seconds, cpu_seconds, episodes, sum(len(e.turns) for eps in played.values() for e in eps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    model = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    print(f"machine: {model}; {os.cpu_count()} cores visible, pinned to 1; Python {platform.python_version()}; "
          f"{platform.system()} {platform.machine()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average before the run: {load:.2f} (the machine may be shared; CPU time is the steadier figure)")
    rates = [env_steps_per_second() for _ in range(args.repeats)]
    print(f"env steps/s (valid-action cycle, no policy): median {statistics.median(r for r, _ in rates):,.0f} "
          f"over {args.repeats} runs of >= {rates[0][1]:,} steps")
    runs = [matrix_seconds() for _ in range(args.repeats)]
    wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
    _, _, episodes, turns = runs[0]
    print(f"default matrix: {episodes} episodes, {turns:,} turns; wall median {statistics.median(wall):.2f} s "
          f"(best {min(wall):.2f} s), CPU median {statistics.median(cpu):.2f} s, over {args.repeats} runs "
          f"(target < 2 s); {turns / statistics.median(wall):,.0f} turns/s with policies, records and scoring")


if __name__ == "__main__":
    main()
