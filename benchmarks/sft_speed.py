"""Seconds per SFT optimizer step on real inbox or ChaosOps Oversight samples: float32 or `--autocast` (bf16
matmuls, fp32 weights), one sample per turn or `--pack` (an episode's turns as one sequence), the leading tokens a
micro-batch's rows share run once (the default, `drill.train.samples.shared_prefix`) or `--no-share-prefix`.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/sft_speed.py                    # float32, one sample per turn
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/sft_speed.py --autocast         # mixed precision
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/sft_speed.py --autocast --pack  # and packed turns
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sft_speed.py --env chaosops --steps 2                    # shared
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sft_speed.py --env chaosops --steps 2 --no-share-prefix  # plain

The samples are the ones `drill train inbox --stage sft:source=reader` trains on: the inbox reader (the
extractive teacher) plays `--tasks` training questions, each turn teacher-forced into the prompt and the
completion the embedded SmolLM2-135M would see and write, with the prompt options of experiments/LOG.md's
inbox proof (compact tool listing, prefill, 96 new tokens, micro-batches of 4,096 padded tokens). With `--env
chaosops` they are the Oversight turns of `experiments/rl_chain.py chaosops-gpu`: the heuristic team, the heuristic's
Oversight teacher-forced, one earlier turn shown, micro-batches of 8 samples (the CPU default). Then
`--steps` optimizer steps of 8 turns each (`drill.train.methods.sft.step_plan`, the trainer's batching) run through
`drill.train.samples.nll_update`, the SFT trainer's own update, after one untimed warm-up step. It prints each
step's seconds, the median, and the loss of the last step, so the runs can be checked to learn alike. Compare the two as whole processes
(`/usr/bin/time`, or any benchmark runner that alternates them) to get a ratio that holds on a noisy machine.

Autocast is fast where the CPU has bf16 matrix units (AMX or AVX512-BF16; `lscpu | grep -o amx_bf16`);
elsewhere PyTorch has no fast bf16 kernels, and `--autocast` stops with an error naming the measured slowdown
(28-77x on an AVX2-only AMD EPYC), as `drill train --autocast` does.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from drill.train import samples as sample_code
from drill.train.config import RunConfig
from drill.train.lora import lora_training
from drill.train.methods.sft import step_plan
from drill.train.rollouts import prompt_options
from drill.train.run import load_base, plan_run, seed_everything
from drill.train.samples import episode_samples, nll_update, pack_turns
from drill.train.sources import play_source, teacher_prompter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autocast", action="store_true")
    parser.add_argument("--pack", action="store_true")
    parser.add_argument("--tasks", type=int, default=24, help="training questions the reader plays")
    parser.add_argument("--steps", type=int, default=5, help="timed optimizer steps of 8 samples")
    parser.add_argument("--env", choices=("inbox", "chaosops"), default="inbox")
    parser.add_argument("--no-share-prefix", action="store_true",
                        help="run every row's whole sequence (the shared prefix's minimum set out of reach)")
    args = parser.parse_args()
    if args.no_share_prefix:
        sample_code.SHARED_PREFIX_MIN = 1 << 60
    prompting = {"tool_listing": "compact", "prefill": '<tool_call>\n{"name": "', "max_new_tokens": 96,
                 "eval_tasks": 0, "autocast": args.autocast, "device": "cpu"}
    if args.env == "chaosops":
        config = RunConfig(env="chaosops", roles=["oversight"], scripted_policy="heuristic", max_history_turns=1,
                           **prompting)
        source = "heuristic"
    else:
        config = RunConfig(env="inbox", micro_batch_tokens=4096, **prompting)
        source = "reader"
    plan = plan_run(config)
    base = load_base(config.model)
    seed_everything(config.seed)
    model, params, optimizer, pad_id = lora_training(base, config)
    prompter = teacher_prompter(model, base, prompt_options(config, plan.target))
    episodes, _ = play_source(config, source, None, plan.target, plan.roles, prompter, max_tasks=args.tasks)
    samples = [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {r: 1.0 for r in plan.roles})]
    turns = len(samples)
    if args.pack:
        samples = pack_turns(samples)
    lengths = [len(s.prompt_ids) + len(s.completion_ids) for s in samples]
    print(f"{turns} turns from {len(episodes)} episodes in {len(samples)} sequences, {sum(lengths)} tokens; "
          f"torch threads {torch.get_num_threads()}, autocast {args.autocast}, pack {args.pack}, shared prefix "
          f"{not args.no_share_prefix}", flush=True)
    plan = step_plan(samples, 8, config.seed, epochs=1 + args.steps * 8 // turns)
    if len(plan) < args.steps + 1:
        raise SystemExit(f"{turns} turns make {len(plan)} steps; ask for fewer --steps or more --tasks")
    times = []
    model.train()
    for step in range(args.steps + 1):
        batch = [samples[i] for i in plan[step][1]]
        columns = step_columns(batch, pad_id, config)
        started = time.perf_counter()
        loss, tokens, _ = nll_update(model, optimizer, params, batch, pad_id, config)
        elapsed = time.perf_counter() - started
        print(f"step {step}{' (warm-up)' if step == 0 else ''}: {elapsed:.2f} s, loss {loss:.4f}, "
              f"{sum(s.turns for s in batch)} turns, {tokens} completion tokens, token columns run: {columns[0]} "
              f"plain, {columns[1]} with the shared prefix", flush=True)
        if step:
            times.append(elapsed)
    print(f"median {statistics.median(times):.2f} s per step of 8 turns ({args.env}, autocast {args.autocast}, pack "
          f"{args.pack}, shared prefix {not args.no_share_prefix}); last loss {loss:.4f}")


def step_columns(batch: list, pad_id: int, config: RunConfig,
                 minimum: int = sample_code.SHARED_PREFIX_MIN) -> tuple[int, int]:
    """The token positions the model runs for one step's micro-batches: every padded row whole, and the shared
    prefix once plus every row's rest (what `completion_logprobs` runs at or above `SHARED_PREFIX_MIN`)."""
    plain = shared = 0
    for micro in sample_code.micro_batches(batch, config.micro_batch_size, pad_id, config.micro_batch_tokens or 0):
        rows, length = micro.tokens.input_ids.shape
        prefix = sample_code.prefix_run_once(micro.tokens, int(micro.tokens.logit_positions.min()), minimum)
        plain += rows * length
        shared += prefix + rows * (length - prefix)
    return plain, shared


if __name__ == "__main__":
    main()
