"""Evaluate a saved SFT adapter next to the heuristic and the oracle on a seeded subset of the triage test split.

An experiment, not a test: for when the full closing evaluation of `experiments/sft_cpu_proof.py` (four rows x 116
tickets) does not fit the time at hand. It prompts the adapter exactly as that run's closing evaluation does
(`heldout.heldout_tasks` picks the same seeded subset for a given count), greedily, and prints every component
and the task success of `sft_cpu_proof.task_success`.

    .venv/bin/python experiments/sft_subset_eval.py runs/sft-cpu-proof/adapter --tasks 24
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from drill.core.rollout import run_episodes
from drill.envs import triage
from drill.models.adapters import read_adapter_settings
from drill.models.policy import build_llm_policy
from drill.models.base import SamplingParams
from drill.models.prompt import LLMOptions, PolicyOptions
from drill.train.heldout import heldout_tasks
from drill.train.target import load_target

sys.path.insert(0, str(Path(__file__).parent))
from sft_cpu_proof import PREFILL, task_success  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapter", type=Path)
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--split", default="test", help="the proofs were measured on test (heldout_tasks now defaults "
                                                        "to validation)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    trained = read_adapter_settings(args.adapter)
    prompted = {"tool_listing": "compact", "prefill": PREFILL, "demos": 0}
    if trained is not None and any(trained.prompt.get(k, v) != v for k, v in prompted.items()):
        raise SystemExit(f"{args.adapter} was trained with prompt settings {trained.prompt}; this script prompts with "
                         f"{prompted}: evaluate it with `drill eval triage --policy lora:{args.adapter}` instead")
    target = load_target("triage", {"k": 1})
    tasks = heldout_tasks(target, args.tasks, 0, args.split)
    options = LLMOptions(prompt=PolicyOptions(sampling=SamplingParams(max_new_tokens=args.max_new_tokens,
                                                                       temperature=0.0, seed=0),
                                              tool_listing="compact", prefill=PREFILL))
    rows = {"trained": build_llm_policy(f"lora:{args.adapter}", options),
            "heuristic": triage.baselines["heuristic"](), "oracle": triage.baselines["oracle"]()}
    by_id = {t.id: t for t in tasks}
    for name, policy in rows.items():
        started = time.perf_counter()
        episodes = []
        for i in range(0, len(tasks), 8):  # batches of 8 keep memory and per-call time small
            episodes += run_episodes(target.make_env, [(t, i + k) for k, t in enumerate(tasks[i:i + 8])], policy,
                                     triage.rubric(), 3)
        scores = [e.score for e in episodes]
        parts = " ".join(f"{c} {np.mean([s.components[c] for s in scores]):.3f}" for c in scores[0].components)
        success = np.mean([task_success(e, by_id[e.task_id]) for e in episodes])
        print(f"{name:<10} {len(episodes)} {args.split} tickets, total {np.mean([s.total for s in scores]):.3f}  "
              f"success {success:.3f}  {parts}  "
              f"({time.perf_counter() - started:.0f}s)", flush=True)
        if name == "trained":
            for e in episodes[:3]:
                t = by_id[e.task_id]
                print(f"  --- {e.task_id} escalate={t.should_escalate} answerable={t.answerable} "
                      f"total={e.score.total:.2f} success={task_success(e, t)}\n  ticket: {t.ticket}\n"
                      f"  gold:   {t.gold_resolution}\n  reply:  {e.turns[0].action.raw}", flush=True)


if __name__ == "__main__":
    main()
