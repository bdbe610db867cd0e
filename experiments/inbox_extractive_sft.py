"""Inbox SFT on demonstrations a small model can follow: the heuristic's search, the gold answer copied from the mail.

An experiment, not a test. Two earlier tries (experiments/LOG.md) fine-tuned SmolLM2-135M on the heuristic's own
episodes. The adapter learned the procedure (search with the question's names, read a hit, answer citing it),
but it never learned which span of the mail answers the question: the heuristic's regex spans are often wrong,
and trained on its right answers only, the adapter answered 88% of test questions wrongly. This run changes only
the demonstrations. Its teacher, the inbox `reader` baseline (`drill.envs.inbox.baselines.ReaderPolicy`), plays like
the heuristic and answers like a careful reader:

* the heuristic's searches, then it reads the hits in rank order (at most three reads);
* after reading a mail that states the answer (a gold source), it answers with the gold answer as the mail
  writes it (the first of the answer and its aliases found verbatim in the mail) and cites that mail;
* when no mail it read states the answer (an unanswerable question, or a search that missed), "I don't know".

The teacher reads the ground truth only to decide whether the mail it has just read answers the question and
which span does; what the model has to learn is to tell that from the mail, and to copy the span. Its episodes
on --max-tasks training questions (a seeded random pick of every kind; `--pick first` for the file's first,
mostly QBR questions) go to a results file, replayed by
`drill train inbox --stage sft:source=results:PATH` (training questions only); the script then evaluates the
adapter, the untrained model (same prompt options, prefill included), the heuristic and the oracle on the
first --eval-tasks test questions (a seeded random --eval-tasks with --eval-shuffle-seed), greedy, and prints a
few of the adapter's answers.

    OMP_NUM_THREADS=1 .venv/bin/python experiments/inbox_extractive_sft.py --output-dir runs/inbox-extractive
    OMP_NUM_THREADS=1 .venv/bin/python experiments/inbox_extractive_sft.py --output-dir runs/inbox-extractive \\
        --only eval-untrained
    .venv/bin/python experiments/inbox_extractive_sft.py --only teacher --max-tasks 0   # every training question

DAgger on top (`--dagger-from`): the adapter plays other training questions greedily, and is fine-tuned on what
the reader would have called at each state it reached, e.g. a read of the next hit where it answered from a mail
that does not state the answer:

    OMP_NUM_THREADS=1 .venv/bin/python experiments/inbox_extractive_sft.py --dagger-from runs/inbox-shuffled-0 \\
        --pick-seed 7 --lr 5e-4 --ray-workers 2 --output-dir runs/inbox-dagger-0 --only rollin train eval \\
        --eval-shuffle-seed 0

`--dagger-method dpo` uses the same roll-in for offline DPO instead (`dpo:source=...,expert=reader`): the
reader's call is preferred over the adapter's tokens wherever they differ, in the roll-in episodes that scored
below --max-reward, with the chosen call's NLL added (--nll):

    OMP_NUM_THREADS=1 .venv/bin/python experiments/inbox_extractive_sft.py --dagger-from runs/inbox-dagger-0 \\
        --dagger-method dpo --pick-seed 8 --epochs 2 --lr 5e-4 --output-dir runs/inbox-dpo-0 --only rollin train \\
        eval --eval-shuffle-seed 0

`--abstain-from` runs R-Tuning's idea (Zhang et al., 2024: teach "I don't know" where the model would be wrong)
on the reader's path instead of a roll-in: the reader plays --max-tasks training questions the adapter was not
trained on, the adapter is asked (greedily, prompted as in evaluation) what it would call at each state where the
reader answers, and where it would answer wrongly the label becomes "I don't know"; the adapter is then
fine-tuned on those episodes. No model roll-in, one generation per question:

    OMP_NUM_THREADS=2 .venv/bin/python experiments/inbox_extractive_sft.py --max-tasks 240 --output-dir \
        runs/inbox-r-0 --only teacher train --autocast --pack
    OMP_NUM_THREADS=2 .venv/bin/python experiments/inbox_extractive_sft.py --abstain-from runs/inbox-r-0 \
        --max-tasks 120 --output-dir runs/inbox-r-1 --only teacher train --autocast --pack

`--correct-per-abstain R` trains the second stage on every abstaining episode and R times as many correct ones,
so a larger probe fits the same training time (experiments/LOG.md, ninth try: with 160 questions and R=2, 7% wrong
answers but 44% right, against B's 13% and 66%).

`--quote` (the eleventh try in experiments/LOG.md) changes the reply format instead of the labels: ReAct prompting,
and a teacher (`drill.envs.inbox.teachers.QuotingReader`) that writes a thought before each call, the kind of
answer the question asks for and, before it answers, the line of the mail that states it. The model is taught to
quote the line, then copy a span of its own quote, against the wrong-type spans (a flight number for a cost) that
most wrong answers were.
Measured (37.4 min): 51% right, 40% wrong, reward 0.26 on the random 40 of seeds 0, 1 and 2, worse than the same
360 questions without thoughts; it quotes the wrong line and copies from it:

    OMP_NUM_THREADS=2 .venv/bin/python experiments/inbox_extractive_sft.py --quote --max-tasks 360 \
        --output-dir runs/inbox-q-0 --only teacher train --autocast --pack

`--autocast --pack` (with OMP_NUM_THREADS=2 on two free cores) trains with bf16 matmuls and an episode's turns
as one sequence (docs/training.md, "On the CPU"): the teacher SFT of pick seed 0 took 6.6 min instead of
38.8 min on a Xeon with AMX, 11.7 min on an AMD EPYC without it; one DAgger round on top, 74 min in all there.

Measured (experiments/LOG.md, random 40 test questions, seeds 0 and 1): DAgger rounds (pick seeds 7, 8, 9) reach
72% / 75% correct and 22% / 18% wrong after round 2, 65% / 62% correct and 5% / 10% wrong after round 3, against
the heuristic's 52% / 68% correct and 8% / 12% wrong. Both DPO tries on the round-2 roll-in scored below the
round-1 adapter they started from. The 240 + 120 `--abstain-from` chain above (43.7 min on two cores of an AMD
EPYC): 66% correct and 13% wrong on the random 40 of seeds 0, 1 and 2, reward 0.71, against the heuristic's 58%,
9%, 0.68; the same chain with --pick-seed 1 (46.4 min): 59% correct, 21% wrong, 0.57, so the spread from run to
run is as large as the gap to the heuristic.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from drill.core.policy import Policy, PolicyInfo, PolicyInput
from drill.core.rollout import run_episodes
from drill.core.types import Action, Episode
from drill.envs import inbox
from drill.envs.inbox.questions import IDK, AnswerJudge, is_abstention
from drill.envs.inbox.rubric import outcome
from drill.envs.inbox.teachers import QuotingReader
from drill.evaluate.commands import pick_tasks

PREFILL = '<tool_call>\\n{"name": "'
PROMPT_FLAGS = {"tool_listing": "compact", "max_new_tokens": 96, "prefill": PREFILL}  # every command's prompt options
QUOTE_FLAGS = {"tool_listing": "compact", "max_new_tokens": 160, "prefill": "Thought:", "react": True}  # --quote
TRAIN = ["--micro-batch-tokens", "4096", "--eval-tasks", "0"]


def cli_flags(flags: dict) -> list[str]:
    """Prompt options as drill command-line flags (a true boolean is a bare switch)."""
    options = [("--" + name.replace("_", "-"), value) for name, value in flags.items()]
    return [arg for flag, value in options for arg in ((flag,) if value is True else (flag, str(value)))]


def play_teacher(split: str, limit: int, shuffle_seed: int | None = None, teacher: Policy | None = None
                 ) -> list[Episode]:
    """The teacher on the questions `drill eval --limit limit --shuffle-seed shuffle_seed` picks (limit 0: all)."""
    tasks = pick_tasks(inbox.load().tasks(split), limit or None, shuffle_seed)
    kinds = Counter("unanswerable" if t.answer is None else t.kind for t in tasks)
    print(f"{split} questions by kind: {', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}", flush=True)
    teacher = teacher or inbox.baselines["reader"]()
    episodes = run_episodes(inbox.load, [(t, 0) for t in tasks], teacher, inbox.rubric(), 10)
    outcomes = Counter(outcome(e.score.components) for e in episodes)
    print(f"teacher on {split} ({len(tasks)} questions): reward {statistics.fmean(e.score.total for e in episodes):.3f}"
          f", {', '.join(f'{k} {v / len(episodes):.0%}' for k, v in sorted(outcomes.items()))}, "
          f"turns {statistics.fmean(len(e.turns) for e in episodes):.1f}", flush=True)
    return episodes


class AbstainWhereWrong:
    """R-Tuning's labels on the reader's path: the reader plays, and at each state where it answers, the adapter is
    asked what it would call there (greedy, prompted as in evaluation). Where the adapter would answer and the
    judge finds that answer wrong, the label becomes "I don't know"; everywhere else it stays the reader's call.
    `counts` says how many answer states were probed and how each went."""

    info = PolicyInfo(name="reader-abstain-where-wrong")

    def __init__(self, adapter: Path, chunk: int = 16) -> None:
        from drill.cli_options import llm_options
        from drill.models.policy import build_llm_policy

        flags = {"model": None, "base_url": None, "api_key_env": "OPENAI_API_KEY", "device": "cpu", "react": False,
                 "temperature": 0.0, "demos": 0, **PROMPT_FLAGS}
        self.model = build_llm_policy(f"lora:{adapter}", llm_options(flags, inbox.load, None))  # as drill eval prompts
        self.reader = inbox.baselines["reader"]()
        self.judge = AnswerJudge("match")
        self.chunk = chunk
        self.counts: Counter[str] = Counter()

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = self.reader.act(inputs)
        probed = [i for i, a in enumerate(actions)
                  if a.tool == "return_final_answer" and not is_abstention(str(a.arguments["answer"]))]
        for start in range(0, len(probed), self.chunk):  # bounded batches: answer states carry the longest prompts
            batch = probed[start:start + self.chunk]
            for i, own in zip(batch, self.model.act([inputs[i] for i in batch]), strict=True):
                if own.tool != "return_final_answer" or not isinstance(own.arguments, dict):
                    self.counts["no answer"] += 1  # a read, a search or an invalid call: the reader's label stands
                    continue
                verdict = self.judge(inputs[i].task, str(own.arguments.get("answer", ""))).verdict
                self.counts[f"answers {verdict}"] += 1
                if verdict == "wrong":
                    actions[i] = Action.call("return_final_answer", answer=IDK, sources=[])
        return actions


def abstain_round(args: argparse.Namespace, start: Path) -> Path:
    """The reader on --max-tasks training questions the start adapter was not trained on (the --pick-seed shuffle,
    minus its teacher file's questions), labelled by `AbstainWhereWrong`; returns the results file."""
    teacher = args.abstain_from / "teacher-train.json"
    if not teacher.is_file():
        raise SystemExit(f"--abstain-from {args.abstain_from}: no teacher-train.json, so which questions its adapter "
                         "was trained on is unknown")
    trained = {e["task_id"] for e in json.loads(teacher.read_text(encoding="utf-8"))["episodes"]}
    tasks = [t for t in pick_tasks(inbox.load().tasks("train"), None, args.pick_seed) if t.id not in trained]
    tasks = tasks[:args.max_tasks or None]  # --max-tasks 0: every question left
    if not tasks:
        raise SystemExit(f"--abstain-from {args.abstain_from}: its adapter was trained on every training question")
    started = time.perf_counter()
    policy = AbstainWhereWrong(start)
    episodes = run_episodes(inbox.load, [(t, 0) for t in tasks], policy, inbox.rubric(), 10)
    outcomes = Counter(outcome(e.score.components) for e in episodes)
    print(f"abstain-where-wrong labels on {len(tasks)} training questions new to {start}: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(policy.counts.items()))}; labelled episodes: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))} "
          f"({(time.perf_counter() - started) / 60:.1f} min)", flush=True)
    source = args.output_dir / "abstain-train.json"
    args.output_dir.mkdir(parents=True, exist_ok=True)
    source.write_text(json.dumps({"episodes": [e.model_dump(mode="json") for e in episodes]}), encoding="utf-8")
    return source


def abstain_mix(labelled: Path, ratio: float) -> Path:
    """Every abstaining episode of the labelled file and the first `ratio` times as many correct ones (pick order),
    so a probe of many questions can feed a short SFT in which the "I don't know" labels weigh more; returns the
    file it writes beside the labelled one."""
    by: dict[str, list[dict]] = {"abstained": [], "correct": []}
    for episode in json.loads(labelled.read_text(encoding="utf-8"))["episodes"]:
        kind = outcome(episode["score"]["components"])
        if kind not in by:
            raise SystemExit(f"{labelled}: the reader's labelled episodes should be correct or abstained; "
                             f"{episode['task_id']} is {kind}")
        by[kind].append(episode)
    abstained, correct = by["abstained"], by["correct"]
    kept = abstained + correct[:round(ratio * len(abstained))]
    mix = labelled.with_name(f"abstain-mix-{ratio:g}.json")
    mix.write_text(json.dumps({"episodes": kept}), encoding="utf-8")
    print(f"--correct-per-abstain {ratio:g}: {len(abstained)} abstaining and {len(kept) - len(abstained)} of "
          f"{len(correct)} correct episodes in {mix}", flush=True)
    return mix


def run(label: str, command: list[str], threads: int | None = None) -> None:
    print("$ " + shlex.join(command), flush=True)
    started = time.perf_counter()
    env = None if threads is None else os.environ | {"OMP_NUM_THREADS": str(threads)}
    subprocess.run([sys.executable, "-m", "drill.cli", *command[1:]], check=True, env=env)
    print(f"{label}: {(time.perf_counter() - started) / 60:.1f} min", flush=True)


def show_answers(results: Path, count: int) -> None:
    """A few of the adapter's episodes: the question, the gold, what it searched, read and answered."""
    env = inbox.load()
    tasks = {t.id: t for t in env.tasks("test")}
    episodes = [e for e in json.loads(results.read_text(encoding="utf-8"))["episodes"]
                if e["policies"]["assistant"]["adapter_path"]]
    for episode in episodes[:count]:
        task = tasks[episode["task_id"]]
        print(f"--- {task.id} ({outcome(episode['score']['components'])}): {task.question} gold: {task.answer}")
        for turn in episode["turns"]:
            print(f"  {turn['action']['tool']} {json.dumps(turn['action']['arguments'])[:160]}")


def dagger(args: argparse.Namespace) -> None:
    """One DAgger round: the adapter in --dagger-from plays training questions greedily (the roll-in), then it is
    fine-tuned on the reader's call at every state it reached, prompts as it saw them."""
    found = sorted(args.dagger_from.glob("stage-1-*/adapter"))
    if len(found) != 1:
        raise SystemExit(f"--dagger-from {args.dagger_from}: expected one stage-1-*/adapter, found {len(found)}")
    start = found[0]
    rollin = args.output_dir / "rollin"
    if "rollin" in args.only or ("train" in args.only and not (rollin / "results.json").is_file()):
        run("roll-in", ["drill", "eval", "inbox", "--policy", f"lora:{start}", "--split", "train",
                        "--limit", str(args.max_tasks), "--shuffle-seed", str(args.pick_seed), "--seeds", "1",
                        *args.prompt, "--temperature", "0", "--ray-workers", str(args.ray_workers),
                        "--out", str(rollin)],
            threads=1 if args.ray_workers else None)  # Ray workers inherit OMP_NUM_THREADS: one thread each
    if "train" in args.only:
        source = f"source=results:{rollin / 'results.json'},expert=reader,epochs={args.epochs}"
        stage = f"sft:{source}{args.pack}"
        if args.dagger_method == "dpo":  # the reader's call preferred over the adapter's, on its failed episodes
            stage = f"dpo:{source},beta={args.beta},nll={args.nll},max_reward={args.max_reward}"
        run(f"DAgger {args.dagger_method.upper()}", ["drill", "train", "inbox", "--init-adapter", str(start),
                                                     "--stage", stage, "--lr", str(args.lr), *args.prompt, *TRAIN,
                                                     *args.train_flags, "--output-dir", str(args.output_dir)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tasks", type=int, default=120, help="training questions the teacher plays (0: all)")
    parser.add_argument("--pick", choices=("shuffled", "first"), default="shuffled",
                        help="which training questions: a seeded shuffle (every kind) or the file's first, which are "
                             "mostly QBR dates and rooms")
    parser.add_argument("--pick-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-tasks", type=int, default=40, help="test questions in the evaluation")
    parser.add_argument("--eval-shuffle-seed", type=int, default=None,
                        help="evaluate a seeded random --eval-tasks test questions (drill eval --shuffle-seed) instead "
                             "of the first ones, which are mostly QBR dates and rooms")
    parser.add_argument("--output-dir", type=Path, default=Path("runs/inbox-extractive"))
    parser.add_argument("--dagger-from", type=Path, default=None,
                        help="DAgger instead of the teacher's SFT: the run folder of an adapter trained by this "
                             "script; it plays --max-tasks training questions (--pick-seed; use another seed than "
                             "its own training pick), and --only train fine-tunes it on the reader's call at every "
                             "state it reached (sft:expert=reader, --init-adapter)")
    parser.add_argument("--abstain-from", type=Path, default=None,
                        help="R-Tuning instead of the teacher's SFT: the run folder of an adapter trained by this "
                             "script; the reader plays --max-tasks training questions it was not trained on (the "
                             "--pick-seed shuffle), the adapter is asked at every state where the reader answers, "
                             "and where its answer would be wrong the label is \"I don't know\"; --only teacher "
                             "writes those episodes, --only train fine-tunes the adapter on them")
    parser.add_argument("--correct-per-abstain", type=float, default=None,
                        help="--abstain-from: train on every abstaining labelled episode and this many correct ones "
                             "per abstaining one (default: every labelled episode)")
    parser.add_argument("--ray-workers", type=int, default=0, help="rollout workers for the DAgger roll-in")
    parser.add_argument("--dagger-method", choices=("sft", "dpo"), default="sft",
                        help="sft: fine-tune on the reader's calls; dpo: prefer the reader's call over the adapter's "
                             "wherever they differ, in the roll-in episodes scoring below --max-reward")
    parser.add_argument("--beta", type=float, default=0.1, help="DPO beta (--dagger-method dpo)")
    parser.add_argument("--nll", type=float, default=1.0, help="weight of the chosen call's NLL (--dagger-method dpo)")
    parser.add_argument("--max-reward", type=float, default=0.5,
                        help="DPO pairs only from roll-in episodes below this reward: wrong answers, no answer, and "
                             "abstentions (--dagger-method dpo)")
    parser.add_argument("--only", nargs="+", choices=("teacher", "rollin", "train", "eval", "eval-untrained"),
                        default=["train", "eval"], help="teacher: only write the teacher's results file; rollin: "
                                                        "only the DAgger roll-in")
    parser.add_argument("--show", type=int, default=8, help="adapter episodes to print")
    parser.add_argument("--quote", action="store_true",
                        help="ReAct prompting, and a teacher that writes a thought before each call: the kind of "
                             "answer asked for, and before answering the line of the mail that states it "
                             "(QuotingReader); every command then runs with --react --prefill Thought:")
    parser.add_argument("--autocast", action="store_true",
                        help="train with drill train --autocast (bf16 matmuls, float32 weights; set OMP_NUM_THREADS "
                             "to the cores the training may use)")
    parser.add_argument("--pack", action="store_true",
                        help="SFT with pack=true: an episode's turns run as one sequence where each prompt extends "
                             "the last")
    args = parser.parse_args()
    if args.quote and (args.dagger_from or args.abstain_from):
        raise SystemExit("--quote trains the teacher's first stage only; its thoughts are not written for the "
                         "--dagger-from or --abstain-from labels")
    args.prompt = cli_flags(QUOTE_FLAGS if args.quote else PROMPT_FLAGS)
    args.train_flags = ["--autocast"] if args.autocast else []
    args.pack = ",pack=true" if args.pack else ""
    adapter = args.output_dir / f"stage-1-{args.dagger_method if args.dagger_from else 'sft'}" / "adapter"
    source = args.output_dir / "teacher-train.json"
    if args.correct_per_abstain is not None and (args.abstain_from is None or args.correct_per_abstain < 0):
        raise SystemExit("--correct-per-abstain: a ratio >= 0, and only with --abstain-from (it picks the episodes "
                         "of the R-Tuning stage)")
    if args.dagger_from is not None and args.abstain_from is not None:
        raise SystemExit("--dagger-from and --abstain-from are two different second stages; give one")
    if args.dagger_from is not None:
        dagger(args)
    elif args.abstain_from is not None:
        start = args.abstain_from / "stage-1-sft" / "adapter"
        if not start.is_dir():
            raise SystemExit(f"--abstain-from {args.abstain_from}: no stage-1-sft/adapter in it")
        labelled = args.output_dir / "abstain-train.json"
        if "teacher" in args.only or ("train" in args.only and not labelled.is_file()):
            labelled = abstain_round(args, start)
        if "train" in args.only:
            if args.correct_per_abstain is not None:
                labelled = abstain_mix(labelled, args.correct_per_abstain)
            stage = f"sft:source=results:{labelled},epochs={args.epochs}{args.pack}"
            run("abstain SFT", ["drill", "train", "inbox", "--init-adapter", str(start), "--stage", stage,
                                "--lr", str(args.lr), *args.prompt, *TRAIN, *args.train_flags,
                                "--output-dir", str(args.output_dir)])
    elif "train" in args.only or "teacher" in args.only:
        teacher = QuotingReader() if args.quote else None
        played = play_teacher("train", args.max_tasks, args.pick_seed if args.pick == "shuffled" else None, teacher)
        play_teacher("test", args.eval_tasks, args.eval_shuffle_seed, teacher)  # the ceiling on the eval questions
        args.output_dir.mkdir(parents=True, exist_ok=True)
        source.write_text(json.dumps({"episodes": [e.model_dump(mode="json") for e in played]}), encoding="utf-8")
        print(f"wrote {source} (training questions only)")
    if "train" in args.only and args.dagger_from is None and args.abstain_from is None:
        stage = f"sft:source=results:{source},epochs={args.epochs}{args.pack}"
        run("SFT", ["drill", "train", "inbox", "--stage", stage,
                    "--lr", str(args.lr), *args.prompt, *TRAIN, *args.train_flags,
                    "--output-dir", str(args.output_dir)])
    common = ["--limit", str(args.eval_tasks), "--seeds", "1", *args.prompt, "--temperature", "0"]
    suffix = ""
    if args.eval_shuffle_seed is not None:
        common += ["--shuffle-seed", str(args.eval_shuffle_seed)]
        suffix = f"-shuffled-{args.eval_shuffle_seed}"
    if "eval" in args.only:
        out = args.output_dir / f"eval{suffix}"
        run("evaluation", ["drill", "eval", "inbox", "--policy", f"lora:{adapter}", "--policy", "heuristic",
                           "--policy", "oracle", *common, "--out", str(out)])
        show_answers(out / "results.json", args.show)
    if "eval-untrained" in args.only:
        run("untrained evaluation", ["drill", "eval", "inbox", "--policy", "llm", *common,
                                     "--out", str(args.output_dir / f"eval-untrained{suffix}")])


if __name__ == "__main__":
    main()
