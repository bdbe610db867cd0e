"""ChaosOps speed: turns per second of the default baseline matrix, and env steps per second.

    PYTHONPATH=src .venv/bin/python benchmarks/chaosops_speed.py [--repeats 5]

The process is pinned to one CPU core (where the OS allows it). The matrix is what `drill eval
chaosops` plays by default: 5 seeds x 9 failures x 3 tiers x random, heuristic and oracle (405
episodes), 45 episodes in lockstep per `run_episodes` call, every episode scored by the rubric and
summarised per policy and tier; no results are written and nothing is plotted. It is played twice:
with the text views off (`chaosops.load(text_views=False)`, which is all scripted policies need: they
read `observation.view`) and on (what an LLM policy or a results file with observation text needs).

Then, not pinned, the whole command as a user runs it: `drill eval chaosops --out DIR` (start-up, the matrix,
the table, results.json and the chart; a scripted matrix draws its chart in a second process that imports
matplotlib while the episodes play, so a second free core matters), timed from outside, median of the runs.

Targets: at least 31,700 turns/s on one core (the original ChaosOps implementation's rate on the
development VM), and the matrix with its report in under 1 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from drill.core import Action
from drill.envs import chaosops
from drill.envs.chaosops.env import TASKS
from drill.evaluate.matrix import play, summary_rows

BATCH = 45
CYCLES = {  # each role's own tools (a call of another role's tool is refused early: cheaper, and not the path measured)
    "sre": [Action.call("communicate", to="team", message="status?"),
            Action.call("identify_root_cause", cause="db_deadlock"), Action.call("noop")],
    "oversight": [Action.call("noop"), Action.call("flag_rogue", agent="autoscaler"),
                  Action.call("communicate", to="dev", message="ok")],
    "dev": [Action.call("restart", target="payments"), Action.call("scale", service="auth", replicas=4),
            Action.call("rollback", service="db")],
    "manager": [Action.call("escalate", team="network"), Action.call("noop"), Action.call("resolve")],
}


def env_steps_per_second(text_views: bool, min_steps: int = 40_000) -> float:
    """env.step throughput with each role cycling through valid actions of its own remit (no policy, no records
    beyond the env's own)."""
    env = chaosops.load(text_views=text_views)
    steps, start = 0, time.perf_counter()
    while steps < min_steps:
        for task in TASKS["test"]:
            env.reset(task, steps)
            i = 0
            while not env.done:
                env.step(CYCLES[env.acting_role][(i // 4) % 3])
                i += 1
            steps += i
    return steps / (time.perf_counter() - start)


def play_matrix(text_views: bool) -> tuple[float, float, int]:
    """Wall and CPU seconds of the default matrix with its summary, and its turn count."""
    jobs = [(task, seed) for task in TASKS["test"] for seed in range(5)]
    policies = {name: dict.fromkeys(chaosops.ChaosOpsEnv.roles, chaosops.baselines[name]())
                for name in ("random", "heuristic", "oracle")}
    start, cpu_start = time.perf_counter(), time.process_time()
    played = play(lambda: chaosops.load(text_views=text_views), policies, jobs, chaosops.rubric(), BATCH)
    summary_rows(chaosops.SPEC, played, {t.id: t for t in TASKS["test"]})
    turns = sum(len(e.turns) for episodes in played.values() for e in episodes)
    return time.perf_counter() - start, time.process_time() - cpu_start, turns


def command_seconds(repeats: int) -> list[float]:
    """Wall seconds of `drill eval chaosops --out DIR`, one process per run, after one warm-up run."""
    times = []
    with tempfile.TemporaryDirectory() as out:
        for run in range(repeats + 1):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "drill.cli", "eval", "chaosops", "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            if run:
                times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    runs = command_seconds(args.repeats)
    print(f"drill eval chaosops (whole command, {os.cpu_count()} cores, load {load:.2f} before): median "
          f"{statistics.median(runs):.2f} s, best {min(runs):.2f} s of {len(runs)} runs")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    model = platform.processor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    print(f"machine: {model}; {os.cpu_count()} cores visible, pinned to 1; Python {platform.python_version()}; "
          f"{platform.system()} {platform.machine()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average before the run: {load:.2f} (the machine may be shared: quote medians)")
    play_matrix(False)  # warm-up: imports, caches
    for text_views in (False, True):
        label = "text views on " if text_views else "text views off"
        runs = [play_matrix(text_views) for _ in range(args.repeats)]
        wall, cpu, turns = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[0][2]
        steps = statistics.median(env_steps_per_second(text_views) for _ in range(args.repeats))
        print(f"{label}: matrix of 405 episodes, {turns:,} turns: wall median {wall:.3f} s (best "
              f"{min(r[0] for r in runs):.3f} s), CPU median {cpu:.3f} s -> {turns / wall:,.0f} turns/s by wall "
              f"({turns / cpu:,.0f} by CPU) with policies, records, scoring and summary; env.step alone "
              f"{steps:,.0f} steps/s "
              f"(medians of {args.repeats} runs)")


if __name__ == "__main__":
    main()
