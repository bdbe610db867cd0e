"""Prefix caching in the local backend: a greedy inbox roll-in with and without it, same model, same questions.

A benchmark, not a test. Each turn of an inbox episode sends a prompt that starts with the previous turn's prompt
and reply; without the cache the model reads the whole prompt again every turn, and on the CPU that prefill is
most of a roll-in's time. This plays --questions training questions (a seeded shuffle, as the DAgger roll-in
picks them) in one lockstep batch with the cache off, then on, prints both times, the share of prompt tokens the
cache served, and whether the episodes are the same call for call.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prefix_cache_speed.py --adapter runs/inbox-ac-0/stage-1-sft/adapter
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prefix_cache_speed.py            # the untrained embedded model

Measured (2026-11-24, AMD EPYC, one thread, the other core running another roll-in): 16 questions with the
pick-seed-0 SFT adapter: 858 s without the cache, 457 s with it (1.9x), 73 turns and the same last call in
every episode both times (measured with an earlier version of this script that ran one variant per process).
This script, `--questions 8`, the other core idle: 307.3 s without, 186.2 s with (1.65x), 33 turns each, 69% of
prompt tokens served by the cache, 8 of 8 episodes the same call for call.
"""

from __future__ import annotations

import argparse
import time

import torch

from drill.core.rollout import run_episodes
from drill.core.types import PolicyInfo
from drill.envs import inbox
from drill.evaluate.commands import pick_tasks
from drill.models.adapters import load_lora
from drill.models.base import SamplingParams
from drill.models.local import load_embedded
from drill.models.policy import LLMPolicy
from drill.models.prompt import PolicyOptions

PREFILL = '<tool_call>\n{"name": "'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None, help="a LoRA adapter folder (default: the untrained model)")
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--shuffle-seed", type=int, default=7)
    parser.add_argument("--max-turns", type=int, default=10)
    args = parser.parse_args()

    if args.adapter:
        chat, info = load_lora(args.adapter)
    else:
        chat, info = load_embedded(), PolicyInfo(name="llm", kind="llm")
    cache = chat.prefix_cache
    if cache is None:
        raise SystemExit("this model keeps no prefix cache (DRILL_PREFIX_CACHE_MB=0, or a cache it cannot reuse)")
    options = PolicyOptions(sampling=SamplingParams(max_new_tokens=96, temperature=0.0), tool_listing="compact",
                            prefill=PREFILL)
    policy = LLMPolicy(chat, info, options)
    tasks = pick_tasks(inbox.load().tasks("train"), args.questions, args.shuffle_seed)
    jobs = [(task, 0) for task in tasks]
    print(f"{info.name}: {len(tasks)} training questions (shuffle seed {args.shuffle_seed}), "
          f"{torch.get_num_threads()} torch threads", flush=True)

    played = {}
    for label in ("without", "with"):
        chat.prefix_cache = cache if label == "with" else None
        cache.clear()
        started = time.perf_counter()
        played[label] = run_episodes(inbox.load, jobs, policy, inbox.rubric(), args.max_turns)
        seconds = time.perf_counter() - started
        turns = sum(len(e.turns) for e in played[label])
        extra = ""
        if label == "with":
            extra = f", {cache.reused_tokens / max(cache.prompt_tokens, 1):.0%} of prompt tokens served by the cache"
        print(f"{label} the prefix cache: {seconds:.1f} s, {turns} turns{extra}", flush=True)
        cache.reused_tokens = cache.prompt_tokens = 0

    calls = [[[(t.action.tool, t.action.arguments) for t in e.turns] for e in played[label]]
             for label in ("without", "with")]
    same = sum(a == b for a, b in zip(*calls))
    print(f"episodes with the same calls: {same} of {len(jobs)}")
    for episode in played["with"][:4]:
        last = episode.turns[-1].action
        print(f"  {episode.task_id}: {len(episode.turns)} turns, last {last.tool} {str(last.arguments)[:80]}")


if __name__ == "__main__":
    main()
