"""Proof that SFT on the oracle's training-split episodes beats the heuristic on the full triage test split, on CPU.

An experiment, not a test. It fine-tunes a LoRA adapter on the embedded SmolLM2-135M with `drill.train.methods.sft`
(the oracle plays the 248 training tickets; each answer, rendered exactly as the LLM policy prompts and
replies, is one sample; loss on the reply's tokens only), then the trainer's closing evaluation plays the
saved adapter (`lora:OUTPUT/adapter`), the untrained model, the heuristic and the oracle greedily on all 116
held-out test tickets, reader mode with one article (`-E k=1`). This script prints every reward component,
the task success rate, and a few of the trained adapter's episodes to read.

    OMP_NUM_THREADS=2 .venv/bin/python experiments/sft_cpu_proof.py
    OMP_NUM_THREADS=2 .venv/bin/python experiments/sft_cpu_proof.py --epochs 2 --output-dir runs/sft-proof-2

The same run from the command line (the script prints it too):

    drill train triage -E k=1 --stage sft:source=oracle,epochs=1 --lr 1e-3 --max-new-tokens 192 \\
        --tool-listing compact --prefill '<tool_call>\\n{"name": "submit_resolution", "arguments": {"resolution": "' \\
        --eval-tasks 116 --eval-baseline heuristic --eval-baseline oracle --output-dir runs/sft-cpu-proof

Task success (what the issue asks the adapter to beat the heuristic on) is the environment's own
(`drill.envs.triage.spec.success`): an accepted submission whose escalation decision is right and, on an
answerable ticket, whose answer is correct by the rubric's `is_correct` (ROUGE-L recall >= 0.5 against the gold,
or the gold cited with recall >= 0.1 and 15% of the gold's key terms, and precision >= 0.2 either way); on an
unanswerable ticket, one that escalates and cites nothing.

Why these settings. No demonstrations: SFT teaches the reply format, and without the two worked examples the
prompt is 382 tokens instead of ~1,000, which is what makes a full pass over the training split affordable
on two cores. The compact tool listing and the prefill are prompt options of the policy, applied identically
to every LLM row of the evaluation. 192 new tokens: the longest oracle reply is 170 tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from drill.core.types import Episode
from drill.envs.triage.spec import success as task_success
from drill.train import RunConfig, train
from drill.train.methods import sft

PREFILL = '<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--source", default="oracle")
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--eval-tasks", type=int, default=116)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output-dir", type=Path, default=Path("runs/sft-cpu-proof"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = RunConfig(
        env="triage", env_options={"k": 1}, learning_rate=args.lr, max_new_tokens=args.max_new_tokens,
        tool_listing="compact", prefill=PREFILL, eval_tasks=args.eval_tasks, eval_baselines=["heuristic", "oracle"],
        checkpoint_every=10, output_dir=args.output_dir,
    )
    options = sft.Options(source=args.source, epochs=args.epochs)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    typed_prefill = PREFILL.replace("\n", "\\n")
    print(f"command: drill train triage -E k=1 --stage sft:source={args.source},epochs={args.epochs} --lr {args.lr} "
          f"--max-new-tokens {args.max_new_tokens} --tool-listing compact --prefill {shlex.quote(typed_prefill)} "
          f"--eval-tasks {args.eval_tasks} --eval-baseline heuristic --eval-baseline oracle "
          f"--output-dir {args.output_dir}")
    started = time.perf_counter()
    result = train(config, "sft", options)
    minutes = (time.perf_counter() - started) / 60
    if args.eval_tasks == 0:  # no closing evaluation: evaluate the adapter with experiments/sft_subset_eval.py
        print(f"SFT took {minutes:.1f} min; no held-out evaluation (--eval-tasks 0). Next:\n"
              f"  .venv/bin/python experiments/sft_subset_eval.py {args.output_dir}/adapter --tasks 116")
        return
    report(result.evaluation, args.output_dir / "heldout.json", minutes)


def report(rows: Sequence[dict[str, Any]], heldout: Path, minutes: float) -> None:
    from drill.envs import triage

    data = json.loads(heldout.read_text(encoding="utf-8"))
    tasks = {t.id: t for t in triage.load(k=1).tasks("test")}
    episodes = [Episode.model_validate(e) for e in data["episodes"]]
    per_policy = len(data["meta"]["tasks"])
    success = {}
    for k, row in enumerate(rows):
        chunk = episodes[k * per_policy:(k + 1) * per_policy]
        success[row["policy"]] = sum(task_success(e, tasks[e.task_id]) for e in chunk) / len(chunk)
    components = [c for c in rows[0] if c not in ("policy", "model", "adapter", "episodes")]
    print(f"\nwall time {minutes:.1f} min (SFT + evaluation); held-out test tickets: {per_policy} (greedy)")
    print(f"{'policy':<10} {'success':>8} " + " ".join(f"{c:>11}" for c in components))
    for row in rows:
        print(f"{row['policy']:<10} {success[row['policy']]:>8.3f} "
              + " ".join(f"{row[c]:>11.3f}" for c in components))
    trained = episodes[:per_policy]
    print("\nthree trained episodes (the first answerable, the first escalation, the first failure):")
    picks = [next((e for e in trained if tasks[e.task_id].answerable), None),
             next((e for e in trained if tasks[e.task_id].should_escalate), None),
             next((e for e in trained if not task_success(e, tasks[e.task_id])), None)]
    for episode in [e for e in picks if e is not None]:
        task = tasks[episode.task_id]
        print(f"--- {episode.task_id}: escalate gold={task.should_escalate} answerable={task.answerable} "
              f"total={episode.score.total:.2f} success={task_success(episode, task)}")
        print(f"ticket: {task.ticket}")
        print(f"gold:   {task.gold_resolution}")
        print(f"reply:  {episode.turns[0].action.raw}")


if __name__ == "__main__":
    main()
