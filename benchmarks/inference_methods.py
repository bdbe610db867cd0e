"""Inference-time methods side by side, per environment, with the embedded model: what each point costs.

    .venv/bin/python benchmarks/inference_methods.py                          # triage (reader) and inbox, 3 tasks
    .venv/bin/python benchmarks/inference_methods.py --env triage --tasks 5 --lats-budgets 4 8 16

For every environment: the heuristic and the oracle; the plain LLM; memory with k = 1, 2, 4 (the store holds the
oracle's episodes on `--train-tasks` training tasks, a stand-in for past successes); Reflexion with up to 3
attempts (success within 1, 2 and 3 attempts from one run); and LATS at each budget (k samples per expansion at
temperature 1, rollouts by the heuristic). Each row: success (the episode reaches half the oracle's total on
the task, `drill.memory.SuccessRule`), mean reward, model calls, tokens and wall seconds per task. All rows run
in this one process on the same tasks, so ratios within a run are comparable; the wall times depend on the
machine, printed at the end.

Writes `OUT/results.json` (every row and the machine) and `OUT/episodes.sqlite`, a trajectory store with every
episode played (LATS finds included, method `lats:llm@B`), which an SFT stage can read:
`TrajectoryStore(path).episodes(method="lats:llm@8", success=True)`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from drill import registry
from drill.core.rollout import run_episodes
from drill.memory import Memory, SuccessRule, TrajectoryStore
from drill.memory.cli import Methods
from drill.core.types import PolicyInfo
from drill.evaluate.report import atomic_write_text
from drill.models.base import SamplingParams
from drill.models.local import load_embedded, load_local
from drill.models.policy import LLMPolicy, PolicyOptions

ENV_OPTIONS: dict[str, dict[str, Any]] = {"triage": {"mode": "reader"}, "inbox": {}, "chaosops": {}}
LLM_ROLES = {"chaosops": "oversight"}
"""Multi-role environments put the model in one role (the others play the heuristic), to keep the run short."""


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def run_env(name: str, args: argparse.Namespace, store: TrajectoryStore, model: Any) -> list[dict[str, Any]]:
    spec = registry.get(name)
    options = spec.parse_options(ENV_OPTIONS.get(name, {}))
    make_env = spec.make(options)
    rubric = spec.rubric_for(options)
    baselines = spec.baselines(options)
    env = make_env()
    roles = env.roles
    tasks = env.tasks("test")[:args.tasks]
    train = env.tasks("train")[:args.train_tasks]
    success = SuccessRule(make_env, rubric, baselines["oracle"])
    llm_role = LLM_ROLES.get(name)

    def llm() -> LLMPolicy:
        options_ = PolicyOptions(sampling=SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0, seed=0),
                                 tool_listing="compact", prefill=args.prefill.replace("\\n", "\n"))
        return LLMPolicy(model, PolicyInfo(name="llm", kind="llm", model=model.model_id), options_)

    def assign(policy: Any) -> dict[str, Any]:
        heuristic = baselines["heuristic"]()
        return {r: policy if llm_role in (None, r) else heuristic for r in roles}

    memory_store = TrajectoryStore(Path(args.out) / f"memory-{name}.sqlite")
    if not memory_store.episodes(env=name):
        episodes = run_episodes(make_env, [(t, 0) for t in train], baselines["oracle"](), rubric)
        memory_store.add(episodes, {t.id: t for t in train}, options, success, "oracle")

    def methods(**flags: Any) -> Methods:
        values = {"store": None, "memory": None, "memory_k": 2, "attempts": 1, "reflect": False, "success_at": None,
                  "lats_budget": 8, "lats_k": 3, "lats_rollout": "heuristic", "lats_temperature": 1.0, **flags}
        found = Methods.from_flags(values, name, options, make_env, rubric, baselines)
        found.success, found.store = success, store
        return found

    runs: list[tuple[str, Methods, dict[str, Any]]] = [
        ("heuristic", methods(), {r: baselines["heuristic"]() for r in roles}),
        ("oracle", methods(), {r: baselines["oracle"]() for r in roles}),
        ("llm", methods(), assign(llm())),
    ]
    for k in args.memory_k:
        found = methods()
        found.memory = Memory(memory_store, name, options, k)
        runs.append((f"llm k={k}", found, found.wrap(assign(llm()))))  # the method: "llm k=K+memory"
    found = methods(attempts=args.attempts, reflect=True)
    runs.append((f"llm ≤{args.attempts} attempts", found, found.wrap(assign(llm()))))  # "...+reflect"
    for budget in args.lats_budgets:
        found = methods(lats_budget=budget, lats_k=args.lats_k)
        search = found.search(llm())
        runs.append((f"lats:llm@{budget}", found, found.wrap(assign(search))))

    rows = []
    jobs = [(t, 0) for t in tasks]
    for label, found, by_role in runs:
        started = time.perf_counter()
        found.player(tasks)(make_env, {label: by_role}, jobs, rubric, spec.batch)
        row = {"env": name, **found.rows[-1], "wall_total_s": time.perf_counter() - started}
        row.pop("policy", None)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "reflections"}, default=str), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", nargs="+", default=["triage", "inbox"])
    parser.add_argument("--tasks", type=int, default=3, help="test tasks per environment (seed 0)")
    parser.add_argument("--train-tasks", type=int, default=8, help="oracle episodes in the memory store")
    parser.add_argument("--memory-k", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--lats-budgets", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--lats-k", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--prefill", default="", help="the start of every reply (as drill eval's --prefill; \\n is a "
                                                       "newline), e.g. the triage call's opening")
    parser.add_argument("--model", default=None, help="a local HF folder or hub id instead of the embedded model")
    parser.add_argument("--out", default="reports/inference_methods")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    model = load_local(args.model) if args.model else load_embedded()
    print(f"loaded {model.model_id} in {time.perf_counter() - started:.1f} s", flush=True)
    store = TrajectoryStore(Path(args.out) / "episodes.sqlite")
    rows = [row for name in args.env for row in run_env(name, args, store, model)]
    machine = (f"{cpu_name()}, {os.cpu_count()} cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
               f"{platform.python_version()}")
    atomic_write_text(Path(args.out) / "results.json",
                      json.dumps({"machine": machine, "args": vars(args), "rows": rows}, indent=1, default=str))
    print("\n| env | method | success | reward | model calls / task | tokens / task | nodes / task | wall s / task |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        attempts = " / ".join(f"{row[k]:.0%}" for k in row if k.startswith("success@"))
        shown = attempts if len([k for k in row if k.startswith("success@")]) > 1 else f"{row['success']:.0%}"
        print(f"| {row['env']} | {row['method']} | {shown} | {row['reward']:.2f} | {row['model_calls']:.1f} | "
              f"{row['tokens']:.0f} | {row['nodes']:.1f} | {row['wall_s']:.1f} |")
    print(f"\nmachine: {machine}")


if __name__ == "__main__":
    main()
