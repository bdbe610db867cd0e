"""Coderepair speed: steps per second by kind, and the full test-split evaluation time.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/coderepair_speed.py               # steps/s, then the full test split
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/coderepair_speed.py --steps 50    # a quicker run

A step that runs tests (run_tests, submit) costs one sandboxed process that serves every test of the run; the
tests are judged in the environment's process, one round trip per call of the function. Other steps (read_file,
replace_lines, list_files) run no process. Measured here: run_tests steps/s with the machine's isolation
(new user, network and PID namespaces where `unshare` works) and with the audit hook alone, in one run so the
ratio holds under the same load; the cheap steps' rate; and the wall time of random, heuristic and oracle over
every test-split variant (`per_problem=0`) and over the default subset (one variant per problem), one process,
sequential.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import time

from drill.core import Action, run_episodes
from drill.envs.coderepair import (
    CodeRepairEnv,
    HeuristicPolicy,
    OraclePolicy,
    RandomPolicy,
    rubric,
    sandbox,
)


def run_steps(env: CodeRepairEnv, steps: int, action: Action) -> float:
    task = env.task("humaneval-3-a")
    env.reset(task, 0)
    start = time.perf_counter()
    for _ in range(steps):
        if env.done:
            env.reset(task, 0)
        env.step(action)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--skip-eval", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load {load:.1f}, Python {platform.python_version()}")

    env = CodeRepairEnv(max_turns=10_000)
    print(f"isolation: {sandbox.isolation()}")
    rates = {}
    for label, flag in (("namespaces", "1"), ("audit hook only", "0")):
        os.environ["DRILL_SANDBOX_NAMESPACES"] = flag
        sandbox.isolation.cache_clear()
        rates[label] = run_steps(env, args.steps, Action.call("run_tests"))
        print(f"run_tests steps [{label}, {sandbox.isolation()}]: {rates[label]:.1f} steps/s "
              f"({1000 / rates[label]:.1f} ms per step, 2 visible tests)")
    os.environ.pop("DRILL_SANDBOX_NAMESPACES")
    sandbox.isolation.cache_clear()
    print(f"namespaces cost {rates['audit hook only'] / rates['namespaces']:.2f}x the audit-hook-only step time")
    cheap = run_steps(env, args.steps * 20, Action.call("read_file", path="solution.py", start=1, end=0))
    print(f"read_file steps: {cheap:,.0f} steps/s")
    if args.skip_eval:
        return
    for per_problem in (0, 1):
        tasks = CodeRepairEnv(per_problem=per_problem).tasks("test")
        jobs = [(t, 0) for t in tasks]
        for policy in (RandomPolicy(), HeuristicPolicy(), OraclePolicy()):
            start = time.perf_counter()
            episodes = run_episodes(functools.partial(CodeRepairEnv, per_problem=per_problem), jobs, policy, rubric())
            elapsed = time.perf_counter() - start
            steps = sum(len(e.turns) for e in episodes)
            runs = sum(e.count("tests_run") + e.count("submitted") for e in episodes)
            total = statistics.fmean(e.score.total for e in episodes if e.score)
            print(f"test split ({'all variants' if per_problem == 0 else 'default subset'}, {len(tasks)} tasks) "
                  f"{policy.info.name}: {elapsed:.1f} s, {steps} steps ({steps / elapsed:.1f}/s), {runs} sandbox "
                  f"runs, mean total {total:.2f}")


if __name__ == "__main__":
    main()
