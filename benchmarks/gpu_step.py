"""One GRPO step's phases, timed: rollout (generation + scoring) and update, for a model, G and tasks per step.

    .venv/bin/python benchmarks/gpu_step.py                          # CPU, small settings, embedded model
    .venv/bin/python benchmarks/gpu_step.py --device cuda --bf16 --group-size 16 --tasks-per-step 8 --steps 5

It runs the same short training twice in one process, with the KL penalty on (`--kl-beta`, default 0.04: every
sample is trained and every micro-batch gets a reference forward) and off (0: only samples with a non-zero
advantage are trained, and the reference forward runs on the step's first micro-batch only), and prints per-step
rollout and update seconds, generated tokens/s and each phase's share, then the update-time ratio of the two.
Numbers are medians over the steps after the first (warm-up). Triage reader, k=1, compact tool listing, two
demonstrations and the reader's prefill, as in the CPU proof; use `--max-new-tokens 128` or more so replies close.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from drill.train.methods import configure, train

PREFILL = '<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'


def run(args: argparse.Namespace, kl_beta: float, out: Path) -> dict[str, float]:
    config, options = configure("grpo", env="triage", env_options={"k": 1}, model=args.model, steps=args.steps,
                                group_size=args.group_size, tasks_per_step=args.tasks_per_step,
                                max_new_tokens=args.max_new_tokens, micro_batch_size=args.micro_batch_size,
                                micro_batch_tokens=args.micro_batch_tokens, kl_beta=kl_beta,
                                kl_abort=None, tool_listing="compact", prefill=PREFILL, demos=2, eval_tasks=0,
                                checkpoint_every=args.steps, output_dir=out, device=args.device, bf16=args.bf16,
                                learning_rate=1e-3)
    started = time.perf_counter()
    result = train(config, "grpo", options)
    records = result.metrics[1:] or result.metrics  # the first step warms caches up
    rollout = statistics.median(r["rollout_s"] for r in records)
    step = statistics.median(r["step_s"] for r in records)
    rate = statistics.median(r["tokens_per_s"] for r in records)
    return {"rollout_s": rollout, "update_s": step - rollout, "step_s": step, "tokens_per_s": rate,
            "wall_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="HF folder or hub id; default the embedded SmolLM2-135M.")
    parser.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--tasks-per-step", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--micro-batch-tokens", type=int, default=None,
                        help="token budget per micro-batch (default: none on CPU, from free memory on CUDA)")
    parser.add_argument("--kl-beta", type=float, default=0.04)
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; device {args.device}; "
          f"G={args.group_size} x {args.tasks_per_step} tasks, {args.max_new_tokens} new tokens, micro-batch "
          f"{args.micro_batch_size}, {args.steps} steps")
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for kl_beta in (args.kl_beta, 0.0):
            rows[kl_beta] = row = run(args, kl_beta, Path(folder) / f"kl-{kl_beta}")
            share = row["rollout_s"] / row["step_s"] if row["step_s"] else 0.0
            rate = f", {row['tokens_per_s']:.0f} generated tokens/s"
            print(f"kl_beta={kl_beta:g}: step {row['step_s']:.2f} s = rollout {row['rollout_s']:.2f} s ({share:.0%})"
                  f" + update {row['update_s']:.2f} s ({1 - share:.0%}){rate}")
    on, off = rows[args.kl_beta]["update_s"], rows[0.0]["update_s"]
    print(f"update time, kl_beta=0 / kl_beta={args.kl_beta:g}: {off / on:.2f} (one run each, same process)")


if __name__ == "__main__":
    main()
