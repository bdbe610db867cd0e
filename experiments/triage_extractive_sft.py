"""Triage reader SFT on demonstrations a small model can follow: the shown article's own steps, the right decision.

An experiment, not a test. `experiments/sft_cpu_proof.py` fine-tunes SmolLM2-135M on the oracle's answers; those are
paraphrases written for each ticket, which the prompt does not contain, and the adapter learned to write fluent
fixes with invented commands (0.585 total against the heuristic's 0.659 on the 116 test tickets). This run
changes only the demonstrations. Its teacher (`ExtractiveTeacher`) answers every training ticket the way a careful
reader of the prompt could:

* answerable ticket: the shown article's `Steps:` line, copied from the prompt, citing it, with the ground truth's
  escalation decision and confidence 1.0, less the steps the ticket's gold rules out (`TriageTask.ruled_out`: on a
  ticket to escalate, "raise the limit" on a route leak; since 2026-11-28, when the rubric began to refuse them);
* unanswerable ticket (or one whose article is not shown): the heuristic's no-match answer, no citation,
  escalate, confidence 0.

The teacher reads the ground truth only for the decisions (answerable or not, escalate or not); what the model
has to learn is to tell them from the ticket and the article, and to copy. Its episodes on the training split
are written to a results file and replayed by `drill train triage --stage sft:source=results:PATH` (training
tickets only), then the adapter is evaluated on the test split with `experiments/sft_subset_eval.py`.

    OMP_NUM_THREADS=1 .venv/bin/python experiments/triage_extractive_sft.py --output-dir runs/triage-extractive
    OMP_NUM_THREADS=1 .venv/bin/python experiments/sft_subset_eval.py runs/triage-extractive/stage-1-sft/adapter \\
        --tasks 116
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from drill.core.policy import PolicyInput
from drill.core.rollout import run_episodes
from drill.core.types import Action, PolicyInfo
from drill.envs import triage
from drill.envs.triage.baselines import NO_MATCH_ANSWER

STEPS_LINE = re.compile(r"^Steps: (.*)$", re.MULTILINE)
sys.path.insert(0, str(Path(__file__).parent))
from sft_cpu_proof import PREFILL, task_success


EXPLORED_CONFIDENCES = (0.0, 0.2, 0.4, 0.6, 0.8)


class ExtractiveTeacher:
    """The shown article's steps with the ground truth's decisions (see the module docstring).

    `explore`: the share of answered tickets (a seeded pick by ticket id) whose stated confidence is one of
    `EXPLORED_CONFIDENCES` instead of 1.0. The teacher sees the ground truth, so it has no uncertainty of its own to
    show; at 0 every answer says 1.0, an SFT student puts nearly all its mass on that token, and RL's groups then never
    disagree on the confidence (issue 41's fourth try: calibration flat in 38-75% of two seeds' groups). A share of
    other values leaves the greedy answer at 1.0 and lets samples at temperature 1 try the rest, so the reward can
    choose among them."""

    def __init__(self, explore: float = 0.0) -> None:
        if not 0.0 <= explore <= 1.0:
            raise ValueError(f"explore must be in [0, 1], got {explore}")
        self.explore = explore
        self.info = PolicyInfo(name="extractive-teacher" if explore == 0 else f"extractive-teacher-explore-{explore}")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        task = inp.task
        shown = [i for i in task.gold_article_ids if f"[{i}]" in inp.observation.content]
        if not shown:  # unanswerable, or its article is not in the prompt: nothing to copy
            return Action.call("submit_resolution", resolution=NO_MATCH_ANSWER, citations=[], confidence=0.0,
                               escalate=True)
        steps = STEPS_LINE.search(inp.observation.content.split(f"[{shown[0]}]", 1)[1])
        if steps is None:
            raise ValueError(f"{task.id}: no 'Steps:' line after {shown[0]} in the reader prompt")
        # the steps, less those the ticket's gold rules out (on a ticket to escalate: "raise the limit" on a leak)
        kept = [head for head in steps.group(1).rstrip(".").split("; ") if head not in task.ruled_out]
        return Action.call("submit_resolution", resolution="; ".join(kept) + ".",
                           citations=shown[:1], confidence=self._confidence(task.id), escalate=task.should_escalate)

    def _confidence(self, task_id: str) -> float:
        draw = random.Random(f"explore:{task_id}")
        return draw.choice(EXPLORED_CONFIDENCES) if draw.random() < self.explore else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--output-dir", type=Path, default=Path("runs/triage-extractive"))
    args = parser.parse_args()
    env = triage.load(k=1)
    teacher = ExtractiveTeacher()
    played = {}
    for split in ("train", "test"):  # the teacher's own score: the ceiling of what imitating it can reach
        tasks = env.tasks(split)
        episodes = run_episodes(lambda: triage.load(k=1), [(t, 0) for t in tasks], teacher, triage.rubric(), 3)
        by_id, played[split] = {t.id: t for t in tasks}, episodes
        print(f"teacher on {split} ({len(tasks)} tickets): total "
              f"{statistics.fmean(e.score.total for e in episodes):.3f}, task success "
              f"{statistics.fmean(task_success(e, by_id[e.task_id]) for e in episodes):.3f}", flush=True)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    source = args.output_dir / "teacher-train.json"
    source.write_text(json.dumps({"episodes": [e.model_dump(mode="json") for e in played["train"]]}),
                      encoding="utf-8")  # training tickets only: the SFT source never sees a test episode
    command = ["drill", "train", "triage", "-E", "k=1", "--stage",
               f"sft:source=results:{source},epochs={args.epochs}", "--lr", str(args.lr), "--max-new-tokens",
               str(args.max_new_tokens), "--tool-listing", "compact", "--prefill", PREFILL.replace("\n", "\\n"),
               "--demos", "0",  # as run on 2026-11-24; `drill train triage` now adds two worked examples by default
               "--eval-tasks", "0", "--output-dir", str(args.output_dir)]
    print("$ " + " ".join(command), flush=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "drill.cli", *command[1:]], check=True)
    print(f"SFT took {(time.perf_counter() - started) / 60:.1f} min. Next:\n  .venv/bin/python "
          f"experiments/sft_subset_eval.py {args.output_dir}/stage-1-sft/adapter --tasks 116")


if __name__ == "__main__":
    main()
