"""Proof that Drill's GRPO improves a policy on CPU: the embedded SmolLM2-135M on triage reader mode.

An experiment, not a test. It trains a LoRA adapter with the settings below, then the trainer's closing
evaluation plays the saved adapter (`lora:OUTPUT/adapter`) and the untrained model, prompted the same
way, greedily on held-out test tickets, and this script prints the mean of every reward component
before and after.

    .venv/bin/python experiments/grpo_cpu_proof.py
    .venv/bin/python experiments/grpo_cpu_proof.py --steps 40 --output-dir runs/proof

The same run from the command line (the script prints it too):

    drill train triage -E k=1 --steps 14 -G 8 --tasks-per-step 1 --max-new-tokens 128 --temperature 0.7 \\
        --lr 1e-3 --kl-beta 0 --tool-listing compact --demos 2 \\
        --prefill '<tool_call>\\n{"name": "submit_resolution", "arguments": {"resolution": "' \\
        --eval-tasks 20 --eval-baseline heuristic --output-dir runs/grpo-cpu-proof

Why these settings. SmolLM2-135M cannot write a valid submit_resolution call from the JSON Schema
prompt (0 of 32 samples), so every group has zero variance and nothing is learned. Three prompt
settings, all applied identically to the untrained model in the evaluation, give it a start:
`--tool-listing compact` (one signature line instead of the JSON Schema), `--demos 2` (the oracle's
answers to the first two training tickets as worked examples; one example gets copied verbatim) and
a `--prefill` that opens the call up to the resolution text (prompt tokens, never trained on). The
reward is the triage rubric alone, no shaping. k=1 (one article in the prompt) keeps the prompt near
1,000 tokens, which is what a CPU can afford; one task per step with G=8 shares the prompt pass across
the group; kl_beta=0 skips the reference forward pass of zero-variance groups.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import time
from pathlib import Path

import torch

from drill.train.methods import configure, train

PREFILL = '<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--output-dir", type=Path, default=Path("runs/grpo-cpu-proof"))
    parser.add_argument("--eval-tasks", type=int, default=20)
    args = parser.parse_args()
    config, options = configure(
        "grpo", env="triage", env_options={"k": 1}, steps=args.steps, group_size=8, tasks_per_step=1,
        max_new_tokens=args.max_new_tokens,
        temperature=0.7, learning_rate=1e-3, kl_beta=0.0, tool_listing="compact", demos=2, prefill=PREFILL,
        eval_tasks=args.eval_tasks, eval_baselines=["heuristic"],
        checkpoint_every=5, output_dir=args.output_dir,
    )
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    typed_prefill = PREFILL.replace("\n", "\\n")  # as typed on a command line, where \n is read as a newline
    print(f"command: drill train triage -E k=1 --steps {args.steps} -G 8 --tasks-per-step 1 "
          f"--max-new-tokens {args.max_new_tokens} --temperature 0.7 --lr 1e-3 --kl-beta 0 --tool-listing compact "
          f"--demos 2 --prefill {shlex.quote(typed_prefill)} "
          f"--eval-tasks {args.eval_tasks} --eval-baseline heuristic --output-dir {args.output_dir}")
    started = time.perf_counter()
    result = train(config, "grpo", options)
    minutes = (time.perf_counter() - started) / 60
    rows = {row["policy"]: row for row in result.evaluation}
    before, after = rows["untrained"], rows["trained"]
    components = [k for k in after if k not in ("policy", "model", "adapter", "episodes")]
    print(f"\nwall time {minutes:.1f} min for {args.steps} steps + evaluation; "
          f"held-out test tickets: {after['episodes']} (greedy)")
    print(f"{'component':<12} {'untrained':>10} {'trained':>10} {'change':>10}")
    for name in components:
        print(f"{name:<12} {before[name]:>10.3f} {after[name]:>10.3f} {after[name] - before[name]:>+10.3f}")
    zero_var = sum(r["zero_variance_groups"] for r in result.metrics)
    print(f"zero-variance groups during training: {zero_var}/{sum(r['groups'] for r in result.metrics)}")


if __name__ == "__main__":
    main()
