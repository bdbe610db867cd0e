"""Shared prefill in the local backend: one GRPO step's rollout (G samples of each of T triage tickets, the reader's
five candidate articles in every prompt), with the rows of a group sharing one prefill and with every row
prefilling itself. Same model, same tickets, same sampling seed.

A benchmark, not a test. A GRPO group is G rows of one prompt in one batch (`drill.train.run.Run.play_groups`:
every episode of a group plays the same task at the same environment seed). Without sharing, the model reads that
prompt G times; on the CPU the prefill of a ~1,100-token prompt is most of the rollout. The model is built the way
the trainer builds it (`TransformersChatModel` without a prefix cache, LoRA in training mode), so the only thing
that differs between the two passes is `shared_prefill`.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/shared_prefill_speed.py \
        --adapter runs/chain-triage-grpo/seed-0/stage-1-sft/adapter --tickets 2 -G 8

Prints each pass's wall time, their ratio, and how many of the rows sampled the same tokens (the two passes differ
only by float summation order, so their logprobs differ in the last digits and a sampled row could part ways where
two tokens are nearly tied).
"""

from __future__ import annotations

import argparse
import time

import torch

from drill import registry
from drill.core.rollout import run_episodes
from drill.core.types import Episode, PolicyInfo
from drill.evaluate.commands import pick_tasks
from drill.models.adapters import load_lora
from drill.models.base import SamplingParams
from drill.models.local import TransformersChatModel, load_embedded
from drill.models.policy import LLMPolicy
from drill.models.prompt import PolicyOptions

PREFILL = '<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None, help="a LoRA adapter folder (default: the untrained model)")
    parser.add_argument("--tickets", type=int, default=2, help="tasks in the step (GRPO's --tasks-per-step)")
    parser.add_argument("-G", "--group-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--temperature", type=float, default=1.0)
    args = parser.parse_args()

    loaded = load_lora(args.adapter)[0] if args.adapter else load_embedded()
    chat = TransformersChatModel(loaded.model, loaded.tokenizer, loaded.model_id)  # as the trainer builds it
    chat.model.train()
    spec = registry.specs()["triage"]
    env_options = spec.parse_options({"mode": "reader", "k": 5})
    make_env = spec.make(env_options)
    tasks = pick_tasks(make_env().tasks("train"), args.tickets, 0)
    jobs = [(task, 1000 + k) for k, task in enumerate(tasks) for _ in range(args.group_size)]
    policy = LLMPolicy(chat, PolicyInfo(name="llm", kind="llm"), PolicyOptions(
        sampling=SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=0),
        tool_listing="compact", prefill=PREFILL))
    print(f"{len(tasks)} triage tickets x G={args.group_size}, {torch.get_num_threads()} torch threads", flush=True)

    played, seconds = {}, {}
    for shared in (False, True):
        chat.shared_prefill = shared
        started = time.perf_counter()
        played[shared] = run_episodes(make_env, jobs, policy, spec.rubric_for(env_options))
        seconds[shared] = time.perf_counter() - started
        mean = sum(e.score.total for e in played[shared]) / len(jobs)  # type: ignore[union-attr]
        print(f"{'shared' if shared else 'separate'} prefill: {seconds[shared]:.1f} s, mean reward {mean:.3f}",
              flush=True)
    same = sum(replies(a) == replies(b) for a, b in zip(played[False], played[True]))
    print(f"separate / shared: {seconds[False] / seconds[True]:.2f}x; rows that sampled the same tokens: {same} of "
          f"{len(jobs)}")


def replies(episode: Episode) -> list[list[int]]:
    return [turn.action.generation.token_ids for turn in episode.turns if turn.action.generation is not None]


if __name__ == "__main__":
    main()
