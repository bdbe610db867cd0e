"""Coderepair speed: steps per second by kind, and the full test-split evaluation time.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/coderepair_speed.py               # steps/s, then the full test split
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/coderepair_speed.py --steps 50    # a quicker run
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/coderepair_speed.py --skip-eval \
        --against ../main/src/drill/envs/coderepair/sandbox.py                   # jail vs another checkout

A step that runs tests (run_tests, submit) costs one sandboxed process that serves every test of the run; the
tests are judged in the environment's process, one round trip per call of the function. Other steps (read_file,
replace_lines, list_files) run no process. Measured here: one sandbox run (the visible tests of humaneval-3-a)
in the jail and with the audit hook alone, and, with `--against`, in the `run_tests` of another checkout's
sandbox.py (loaded under another name; a sandbox.py from before the jail takes no `sandbox` argument), rounds
interleaved so every ratio holds under the same load; the cheap steps' rate; and the wall time of random,
heuristic and oracle over every test-split variant (`per_problem=0`) and over the default subset (one variant per
problem), one process, sequential.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import warnings
from collections.abc import Callable
import platform
import statistics
import sys
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


def sandbox_runs(steps: int, against: str | None) -> None:
    """Median milliseconds of one sandbox run per variant, rounds of 10 runs interleaved."""
    task = CodeRepairEnv().task("humaneval-3-a")
    p = task.problem
    variants: dict[str, Callable[[], object]] = {
        "jail": lambda: sandbox.run_tests(task.buggy, task.entry_point, p.visible, p.namespace(), seed_prefix=p.id),
        "audit hook only": lambda: sandbox.run_tests(task.buggy, task.entry_point, p.visible, p.namespace(),
                                                     seed_prefix=p.id, sandbox="audit-hook"),
    }
    if against:
        spec = importlib.util.spec_from_file_location("other_sandbox", against)
        assert spec is not None and spec.loader is not None
        other = importlib.util.module_from_spec(spec)
        sys.modules["other_sandbox"] = other  # dataclasses look their module up there
        spec.loader.exec_module(other)
        variants[f"other ({against})"] = lambda: other.run_tests(task.buggy, task.entry_point, p.visible,
                                                                 p.namespace(), seed_prefix=p.id)
    times: dict[str, list[float]] = {name: [] for name in variants}
    warnings.simplefilter("ignore")
    for name, run in variants.items():
        run()  # warm-up: the jail is built once per process
    for _ in range(max(1, steps // 10)):
        for name, run in variants.items():
            for _ in range(10):
                start = time.perf_counter()
                run()
                times[name].append(1000 * (time.perf_counter() - start))
    jail_ms = statistics.median(times["jail"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"one sandbox run [{name}]: median {median:.1f} ms (min {min(values):.1f}, max {max(values):.1f}, "
              f"{len(values)} runs); the jail takes {jail_ms / median:.2f}x this")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--against", help="another checkout's sandbox.py, timed interleaved with this one's")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load {load:.1f}, Python {platform.python_version()}")

    sandbox_runs(args.steps, args.against)
    env = CodeRepairEnv(max_turns=10_000)
    rate = run_steps(env, args.steps, Action.call("run_tests"))
    print(f"run_tests steps [jail]: {rate:.1f} steps/s ({1000 / rate:.1f} ms per step, 2 visible tests)")
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
