"""RL beyond imitation (issue 41): an SFT start, then an RL stage from it, for several seeds; every number on the
validation split, so the test split stays unseen until the final table.

An experiment, not a test. For each seed it runs one `drill train ENV --stage SFT --stage RL` (the stages are
`drill.train.stages`), whose closing evaluation plays the SFT adapter, the RL adapter, the untrained model and the
heuristic greedily on the same held-out tasks, prompted the same way. Then it reads every run's `heldout.json`
and `metrics.jsonl` and prints one table: per row the rubric total, the environment's own success (`EnvSpec.success`)
and its targeted behaviours (its `EnvSpec.summarize` columns), the SFT seeds' max-min spread, each seed's RL gain, and
the RL stage's zero-variance group fraction (does RL get a signal after SFT?). Beside the bar, not in place of it, it
prints each seed's RL-minus-its-own-SFT-start change in total per held-out episode with a 95% bootstrap interval.

    OMP_NUM_THREADS=1 .venv/bin/python experiments/rl_chain.py triage --seeds 0 1 2 --output-dir runs/chain-triage
    .venv/bin/python experiments/rl_chain.py triage --output-dir runs/chain-triage --report-only
    # the same SFT starts, another RL stage: each seed's finished SFT stage is copied and `--resume` skips it
    OMP_NUM_THREADS=1 .venv/bin/python experiments/rl_chain.py triage-grpo --seeds 0 --sft-from runs/chain-triage \
        --output-dir runs/chain-triage-grpo
    OMP_NUM_THREADS=1 .venv/bin/python experiments/rl_chain.py chaosops --seeds 0 --output-dir runs/chain-chaosops
    OMP_NUM_THREADS=2 .venv/bin/python experiments/rl_chain.py inbox --seeds 0 --output-dir runs/chain-inbox
    .venv/bin/python experiments/rl_chain.py chaosops --output-dir runs/chain-chaosops --report-only --episodes 2
    # a seed whose run stopped in its closing evaluation: play only the rows its heldout.json lacks
    OMP_NUM_THREADS=1 DRILL_PREFIX_CACHE_MB=4096 .venv/bin/python experiments/rl_chain.py inbox --seeds 1 \
        --evaluate-only --eval-batch 8 --output-dir runs/chain-inbox

On one GPU, `experiments/rl_chain_gpu.sh PRESET DIR TRAIN_S EVAL_S SEED...` runs the seeds side by side with a
wall-clock limit per phase (`--teacher-only` first writes the teacher file they share).

Presets (`PRESETS`, by name) hold each chain: its environment, its SFT source, its RL stage, its prompt settings,
and which columns are the behaviour the reward exists to shape. Triage plays its designed reader setting, five candidate
articles (`-E k=5`): the gold article among BM25 distractors, and an extractive teacher (below) as the SFT source.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drill import registry
from drill.core.rollout import run_episodes
from drill.core.types import Episode

sys.path.insert(0, str(Path(__file__).parent))

TRIAGE_PREFILL = '<tool_call>\\n{"name": "submit_resolution", "arguments": {"resolution": "'


@dataclass(frozen=True)
class Preset:
    """One environment's chain."""

    env: str
    options: dict[str, Any]
    sft: str
    """The SFT stage (`drill train --stage`), with `{source}` for the teacher's results file where there is one."""
    rl: str
    """The RL stage from the SFT adapter: the environment's reward and the model's own samples only."""
    flags: tuple[str, ...]
    """Prompt, sampling and optimizer settings for every stage and the closing evaluation. Triage's micro-batches of
    2: with 8 samples of ~1,100 tokens the backward pass holds every layer's attention matrix, 13-16 GB per process.
    Even so a triage GRPO process holds about 8 GB while it generates a step's 64 samples in one batch, so on a
    24 GB machine at most two run side by side (a third was killed for memory)."""
    behaviours: tuple[str, ...]
    """Summary columns that measure what the reward exists to shape (higher is better unless named in `lower`)."""
    lower: tuple[str, ...] = ()
    neutral: tuple[str, ...] = ()
    """Behaviour columns with no better direction: their change is printed, never counted as a gain."""
    teacher: Callable[[dict[str, Any]], Any] | None = None
    """`teacher(env_options) -> Policy`, whose training-split episodes are the SFT source."""
    teacher_seeds: Callable[[Any], int] = lambda task: 1
    """How many environment seeds the teacher plays a training task at (seeds 0..n-1)."""
    teacher_tasks: int | None = None
    """A seeded pick of this many training tasks for the teacher (None: every one)."""
    rl_more: tuple[str, ...] = ()
    """Further RL stages, each from the one before (a later stage of the same method draws other tasks:
    `drill.train.stages.fresh_draws`). The RL row is the last stage's."""

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages after SFT, in order (`drill train --stage`), without the SFT stage."""
        return (self.rl, *self.rl_more)

    @property
    def rl_name(self) -> str:
        """The held-out row of the chain's RL result: the last stage's (`2-grpo`, or `3-grpo` after two)."""
        return f"{1 + len(self.stages)}-{self.stages[-1].split(':', 1)[0]}"


def triage_teacher(options: dict[str, Any]) -> Any:
    """The extractive teacher of `triage_extractive_sft.py`: the shown gold article's steps, the right decision."""
    from triage_extractive_sft import ExtractiveTeacher

    return ExtractiveTeacher()


def triage_explorer(explore: float) -> Callable[[dict[str, Any]], Any]:
    """The same teacher, stating a confidence other than 1.0 on a share `explore` of the answered tickets."""

    def teacher(options: dict[str, Any]) -> Any:
        from triage_extractive_sft import ExtractiveTeacher

        return ExtractiveTeacher(explore=explore)

    return teacher


TRIAGE_PROMPT = ("--tool-listing", "compact", "--demos", "0", "--max-new-tokens", "160", "--prefill", TRIAGE_PREFILL,
                 "--micro-batch-size", "2")
TRIAGE = {"env": "triage", "options": {"mode": "reader", "k": 5}, "sft": "sft:source=results:{source},epochs=1",
          "behaviours": ("escalation_acc", "brier", "calibration", "confidence_auc"), "lower": ("brier",),
          "teacher": triage_teacher}
TRIAGE_GRPO = (*TRIAGE_PROMPT, "--lr", "5e-4", "-G", "8", "--tasks-per-step", "8", "--temperature", "1.0")
"""The GRPO presets' settings: 3 steps x 8 tickets x G=8; they differ only in the KL term."""


def inbox_teacher(options: dict[str, Any]) -> Any:
    """The inbox `reader` baseline of `inbox_extractive_sft.py`: the heuristic's searches, the gold span copied from
    a mail that states it, "I don't know" when no mail read does."""
    return registry.get("inbox").baselines(options)["reader"]()


def chaosops_teacher(options: dict[str, Any]) -> Any:
    """The oracle in every role; SFT keeps the Oversight turns (`--role oversight`)."""
    return registry.get("chaosops").baselines(options)["oracle"]()


def chaosops_heuristic_teacher(options: dict[str, Any]) -> Any:
    """The heuristic in every role; SFT keeps the Oversight turns (`--role oversight`)."""
    return registry.get("chaosops").baselines(options)["heuristic"]()


INBOX = {"env": "inbox", "options": {}, "teacher": inbox_teacher, "teacher_tasks": 180,
         "sft": "sft:source=results:{source},epochs=1", "flags": ("--lr", "1e-3", "-G", "4", "--temperature", "1.0",
                                                                 "--pack"),
         # "I don't know" is right on a question the inbox cannot answer and a miss on one it can; `no_answer` is a
         # question never answered (the turns ran out): fewer wrong answers from an adapter that answers nothing are
         # no gain, so it is shown beside them
         "behaviours": ("wrong", "abstained", "no_answer", "correct"), "lower": ("wrong", "no_answer"),
         "neutral": ("abstained",)}

OVERSIGHT_PREFILL = '<tool_call>\\n{"name": "'

PRESETS: dict[str, Preset] = {
    # first try (experiments/LOG.md, 2026-11-26): rejection sampling, which keeps only samples above their group
    # (run before RFT skipped invalid turns: `skip_invalid=false` keeps the recipe as run)
    "triage": Preset(**TRIAGE, rl="rft:rounds=2,tasks_per_round=16,bar=group_mean,rationalize=false,skip_invalid=false",
                     flags=(*TRIAGE_PROMPT, "--lr", "1e-3", "-G", "4", "--temperature", "1.0")),
    # second try: GRPO, whose negative advantages push down what scores below the group (loops, wrong abstentions),
    # from the same SFT starts. No KL term: when these runs were chosen the reference was the base model without the
    # adapter, which SFT had already left far behind (KL 0.93), so the penalty would have pulled the adapter back
    # toward the untrained model. The reference is now the SFT start (`Run.reference`); the seeds of this preset
    # were all run without the term, so it stays off here.
    "triage-grpo": Preset(**TRIAGE, rl="grpo:steps=3,kl_beta=0,kl_abort=none",
                          flags=TRIAGE_GRPO),
    # third try: the same GRPO anchored to the SFT start by a KL term (`Run.reference`). Seed 0's GRPO without it
    # moved the escalate flag along with the confidence (escalation accuracy 0.81 -> 0.28): on an answerable ticket
    # the SFT start answers wrongly at high confidence, so escalating it costs nothing in calibration, and the model
    # learned "escalate, confidence 0" as one pattern. The reward pushes the confidence down and never pushes the flag
    # up, so a penalty on moving away from the start should hold the flag while the confidence moves.
    "triage-grpo-kl": Preset(**TRIAGE, rl="grpo:steps=3,kl_beta=0.1,kl_abort=none",
                             flags=TRIAGE_GRPO),
    # at kl_beta=0.1 the mean KL to the start after one step was 0.01 per token and the second step's rollouts scored
    # as without the term (0.252 and 0.293 on seeds 0 and 1, to three decimals): too weak to hold two tokens. 1.0 makes
    # the penalty's pull on a moved token comparable to a unit advantage.
    "triage-grpo-kl1": Preset(**TRIAGE, rl="grpo:steps=3,kl_beta=1.0,kl_abort=none",
                              flags=TRIAGE_GRPO),
    # fourth try: the KL 0.1 anchor over 6 steps instead of 3. The rows of a group share one prefill now
    # (`drill.models.local`), and micro-batches of 4 run a group's prompt twice in the update instead of four times,
    # so a step costs about half what it did; a checkpoint every step lets a run killed for memory resume. Seed 0 ran
    # with micro-batches of 8 (one prompt pass a group; the same summed gradient up to float order), and seed 1 was
    # killed for memory at that size beside it (13.4 GB at its second update), so seeds 1 and 2 ran with 4.
    "triage-grpo-long": Preset(**TRIAGE, rl="grpo:steps=6,kl_beta=0.1,kl_abort=none",
                               flags=(*TRIAGE_GRPO, "--micro-batch-size", "4", "--checkpoint-every", "1")),
    # ninth try: the fourth try's seeds 0 and 2 stated confidence 1.0 in nearly every sample at temperature 1, so the
    # calibration component was flat in most groups and six steps had nothing to choose from. The cause is the SFT
    # source: the teacher sees the ground truth and always says 1.0. Here it says one of 0.0-0.8 on half the answered
    # training tickets (a seeded pick, uncorrelated with anything the reader sees), so the SFT start's greedy
    # confidence is still its mode, 1.0, and its samples try the others; GRPO anchored to the start (KL 0.1) as in
    # the fourth try, 4 steps. SFT in micro-batches of 2 (about 6 GB; of 4, 10-12 GB, and two were killed for memory
    # side by side), GRPO in micro-batches of 4.
    "triage-explore": Preset(**(TRIAGE | {"teacher": triage_explorer(0.5),
                                          "sft": "sft:source=results:{source},epochs=1,micro_batch_size=2"}),
                             rl="grpo:steps=4,kl_beta=0.1,kl_abort=none",
                             flags=(*TRIAGE_GRPO, "--micro-batch-size", "4", "--checkpoint-every", "1")),
    # tenth try: at explore 0.5 the greedy SFT start did not keep 1.0. The decoder picks the first digit, and 126 of
    # the 216 teacher confidences began with "0" (the unanswerable tickets' 0.0 and the explored values), so seed 1's
    # start said 0.0 everywhere before RL and most of the calibration gain came from SFT. At 0.3, 91 of 216 begin
    # with "0" and the answered tickets' first digit is "1" in 70% of them: the start says 1.0, its samples try others.
    "triage-explore3": Preset(**(TRIAGE | {"teacher": triage_explorer(0.3),
                                           "sft": "sft:source=results:{source},epochs=1,micro_batch_size=2"}),
                              rl="grpo:steps=4,kl_beta=0.1,kl_abort=none",
                              flags=(*TRIAGE_GRPO, "--micro-batch-size", "4", "--checkpoint-every", "1")),
    # Inbox: the extractive teacher's SFT (`inbox_extractive_sft.py`, 180 training questions, one epoch: 56% right and
    # 21% wrong on test, against the heuristic's 58% and 9%), then rejection sampling on the rubric, where a right
    # answer earns about +1, "I don't know" about 0.1 and a wrong answer about -1: in a group of four samples at
    # temperature 1 that disagree, the samples kept are the ones above the group's mean, so a wrong answer is never
    # kept beside an abstention or a right one. The prompt is inbox's training default (`EnvSpec.train_defaults`).
    # Turns packed into one sequence per episode (`--pack`): the same loss on fewer tokens.
    # Seeds 0-2 ran before RFT skipped invalid turns (`skip_invalid=false` keeps the recipe as run).
    "inbox": Preset(**INBOX, rl="rft:rounds=2,tasks_per_round=8,bar=group_mean,rationalize=false,skip_invalid=false"),
    # The same from the same SFT starts (`--sft-from runs/chain-inbox`), but a kept episode's invalid turns are not
    # trained on: seed 0's RFT (above) learned an invalid `return_final_answer({})` before its answers (0.37 a
    # held-out episode; seed 0's SFT start: none), because a right answer after it still cleared the group's mean.
    "inbox-skip": Preset(**INBOX, rl="rft:rounds=2,tasks_per_round=8,bar=group_mean,rationalize=false"),
    # And with a floor (`floor=0`): seed 1's second round sampled mostly failures (right 9%), the group's mean kept the
    # least bad of them, and its adapter learned to loop on cut-off calls (total 0.416 -> 0.008). Under inbox's
    # rubric nothing below 0 is a right answer. Not run yet.
    "inbox-floor": Preset(**INBOX, rl="rft:rounds=2,tasks_per_round=8,bar=group_mean,floor=0,rationalize=false"),
    # eleventh try: GRPO instead of rejection sampling, anchored to the SFT start (KL 0.1), as in triage's tries that
    # moved its targeted behaviour. Rejection sampling only imitates what a group's best sample did; GRPO's negative
    # advantages push a wrong answer down against an "I don't know" or a right answer from the same question, which is
    # the move the rubric (+1 right, about 0 abstaining, -1 wrong) exists to teach. Two steps of 8 questions x G=4:
    # the sampling of the two RFT rounds above. The SFT source is 240 training questions instead of 180, in the hope
    # that the three SFT starts lie closer together (the 180-question starts spread 0.251 on total). Training runs
    # with bf16 matmuls (`--autocast`: 0.4x float32's matmul time on a 2-core AMD EPYC, though an SFT step was not
    # visibly faster). Memory, not cores, bounds it on 24 GB: an SFT process grows to ~11 GB (the finished stage now
    # hands it back, 10.7 -> 1.6 GB, before GRPO samples at 7-9 GB), so two seeds side by side at most
    # (experiments/LOG.md, eleventh try).
    "inbox-grpo": Preset(**(INBOX | {"teacher_tasks": 240, "flags": (*INBOX["flags"], "--autocast",
                                                                      "--checkpoint-every", "1")}),
                         rl="grpo:steps=2,tasks_per_step=8,kl_beta=0.1,kl_abort=none"),
    # twelfth try, the eleventh at GPU size (issue 41 point 5; one H200, bf16, the three seeds side by side on it:
    # experiments/rl_chain_gpu.sh). The same 240-question teacher, but two SFT epochs instead of one, in the hope that
    # starts trained nearer the teacher agree (one epoch's spread 0.221 on total); then GRPO with six times the
    # samples: 3 steps of 16 questions x G=8. No --autocast: on CUDA the whole model is bfloat16 already. Run once
    # (experiments/LOG.md, twelfth try): the starts reached 0.660-0.796 on total (spread 0.136, above the heuristic's
    # 0.645), and the lease finished GRPO step 1 of 3 only.
    "inbox-grpo-gpu": Preset(**(INBOX | {"teacher_tasks": 240, "sft": "sft:source=results:{source},epochs=2",
                                         "flags": ("--lr", "1e-3", "-G", "8", "--temperature", "1.0", "--pack",
                                                   "--checkpoint-every", "1")}),
                             rl="grpo:steps=3,tasks_per_step=16,kl_beta=0.1,kl_abort=none"),
    # ChaosOps Oversight beside the oracle team. SFT on the oracle's Oversight turns, rogue scenarios at three seeds
    # and infrastructure ones at one, so three of five episodes open with a flag (the 2026-11-24 proof's
    # balanced data, smaller, one epoch: at ~1,600 tokens a sample, 12 optimizer steps of 8 samples are about 20
    # minutes of one core, and the chain must fit three times); then rejection sampling on the team total, where
    # the only thing that differs inside a group is Oversight: a right flag ends a rogue incident sooner, a flag on an
    # innocent agent costs the false-positive penalty.
    "chaosops": Preset(
        env="chaosops", options={}, teacher=chaosops_teacher,
        teacher_seeds=lambda task: 3 if task.rogue_agent else 1,
        sft="sft:source=results:{source},epochs=1",
        rl="rft:rounds=2,tasks_per_round=4,bar=group_mean,rationalize=false",
        flags=("--role", "oversight", "--scripted-policy", "oracle", "--tool-listing", "compact", "--max-new-tokens",
               "64", "--prefill", OVERSIGHT_PREFILL, "--micro-batch-tokens", "2048", "--lr", "1e-3", "-G", "4",
               "--temperature", "1.0"),
        behaviours=("rogue_caught", "false_positive_flags", "innocent_flagged", "flag_precision"),
        lower=("false_positive_flags", "innocent_flagged"),
    ),
}

# ChaosOps Oversight at GPU size (issue 41): beside the heuristic team, which knows only what it sees (the oracle team
# leaks the truth: its Dev fixes an infrastructure incident at once and waits for the flag in a rogue one, 2026-11-27
# red team). The teacher is the heuristic in every seat: its Oversight flags an agent once the trace shows that
# agent's change hurting a service, and never on a hunch, so SFT shows when to wait as well as whom to flag; every
# scenario at six seeds (162 episodes, 367 samples: 54 first views call for a flag, 108 for waiting). Rogue scenarios
# at six seeds and infrastructure ones at two (the 2026-11-27 run) made three first views in five a flag, and the SFT
# starts flagged an innocent agent in most infrastructure incidents.
# Then GRPO on the team total, where only Oversight differs inside a group (the teammates are scripted).
# The heuristic's flag gives its evidence (the trace line, up to 78 tokens with the call's closing), so replies get 96
# new tokens: the first run's 64 cut 36 of the 54 flags short (unparseable: a missed rogue). One earlier turn is
# shown: a wrong flag leaves an incident open for the tier's whole step budget, and eight earlier turns of ~2,700
# characters made those episodes' prompts the cost of a GRPO step.
PRESETS["chaosops-gpu"] = dataclasses.replace(
    PRESETS["chaosops"], teacher=chaosops_heuristic_teacher, teacher_seeds=lambda task: 6,
    sft="sft:source=results:{source},epochs=2",
    rl="grpo:steps=4,tasks_per_step=6,kl_beta=0.1,kl_abort=none",
    flags=("--role", "oversight", "--scripted-policy", "heuristic", "--tool-listing", "compact", "--max-new-tokens",
           "96", "--max-history-turns", "1", "--prefill", OVERSIGHT_PREFILL, "--lr", "1e-3", "-G", "8",
           "--temperature", "1.0"))

# fourteenth try: `inbox-grpo-gpu`, then a second GRPO stage like its first from that stage's adapter (a stage of its
# own: fresh AdamW state, the KL anchored to its start, its questions drawn with seed + 1000, so none of the first
# stage's order again). Run from a folder holding each seed's finished SFT and GRPO stages (--sft-from): only the new
# stage trains, so the lease holds six GRPO steps where it held three.
PRESETS["inbox-grpo-gpu-more"] = dataclasses.replace(PRESETS["inbox-grpo-gpu"], rl_more=(PRESETS["inbox-grpo-gpu"].rl,))


def env_code(env: str) -> str:
    """A digest of the environment package's source files: what its worlds, views and rubric are made of."""
    import hashlib
    import importlib

    folder = Path(importlib.import_module(f"drill.envs.{env}").__file__).parent  # type: ignore[arg-type]
    digest = hashlib.sha256()
    for file in sorted(folder.rglob("*.py")):
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def teacher_source(preset: Preset, output_dir: Path, strict: bool = True) -> Path:
    """The teacher's episodes on the training split, written once (same tasks, same teacher: same file), with the
    digest of the environment's code it was played on (`env_code`). A file from other code is refused: worlds,
    views and rubrics change (ChaosOps' trace wording, 2026-11-28), and a stale file would train on old text. Not
    `strict` (an earlier chain's folder, whose finished SFT stages are copied), it is a warning."""
    path = output_dir / "teacher-train.json"
    if path.exists():
        written = json.loads(path.read_text(encoding="utf-8")).get("env_code")
        if written != env_code(preset.env):
            message = (f"{path} was written by other {preset.env} code ({written or 'unrecorded'}, now "
                       f"{env_code(preset.env)})")
            if strict:
                raise SystemExit(f"{message}: remove it, or give another --output-dir, to play the teacher again")
            print(f"warning: {message}; the SFT starts copied from {output_dir} were trained on it", flush=True)
        return path
    spec = registry.specs()[preset.env]
    make_env = spec.make(spec.parse_options(preset.options))
    teacher = preset.teacher(preset.options)  # type: ignore[misc]
    tasks = make_env().tasks("train")
    if preset.teacher_tasks is not None:
        from drill.evaluate.commands import pick_tasks

        tasks = pick_tasks(tasks, preset.teacher_tasks, 0)
    jobs = [(t, seed) for t in tasks for seed in range(preset.teacher_seeds(t))]
    episodes = run_episodes(make_env, jobs, teacher, spec.rubric_for(preset.options))
    mean = statistics.fmean(e.score.total for e in episodes)  # type: ignore[union-attr]
    print(f"teacher on {len(tasks)} training tasks ({len(jobs)} episodes): total {mean:.3f}", flush=True)
    output_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"env_code": env_code(preset.env),
                                "episodes": [e.model_dump(mode="json") for e in episodes]}), encoding="utf-8")
    return path


def copy_earlier_stages(preset: Preset, earlier: Path, folder: Path) -> None:
    """Copy an earlier chain's finished stages that this chain repeats into `folder`, so that `--resume` skips them:
    the SFT stage, and, for a chain with further RL stages, each RL stage but the last whose method is the same (the
    stages' options must be the same too: that is the caller's to know). The first stage that is missing or differs
    ends the copying."""
    for index, spec in enumerate((preset.sft, *preset.stages[:-1]), start=1):
        name = f"stage-{index}-{spec.split(':', 1)[0]}"
        if not (earlier / name / "stage.json").is_file():
            return
        shutil.copytree(earlier / name, folder / name)
        print(f"{folder.name}: stage {index} copied from {earlier / name}", flush=True)


def train_command(preset: Preset, seed: int, source: Path | None, folder: Path, eval_tasks: int,
                  untrained: bool) -> list[str]:
    sft = preset.sft.format(source=source) if source is not None else preset.sft
    options = [item for name, value in preset.options.items() for item in ("-E", f"{name}={value}")]
    stages = [item for stage in (sft, *preset.stages) for item in ("--stage", stage)]
    return ["drill", "train", preset.env, *options, *stages, *preset.flags,
            "--seed", str(seed), "--eval-split", "validation", "--eval-tasks", str(eval_tasks),
            "--eval-baseline", "heuristic", *([] if untrained else ["--no-eval-untrained"]),
            "--output-dir", str(folder)]


def evaluate_missing(folder: Path, untrained: bool = False, batch: int | None = None) -> None:
    """A seed's finished stage adapters that its held-out file lacks (all of them, and the heuristic, when there is no
    file; with `untrained`, the untrained model when the file has no row of it), through the same closing evaluation
    (`drill.train.heldout.evaluate_heldout`, the run's own settings, every validation task, greedy, each row in its
    own lockstep batches of `batch` or the environment's), their rows added after the file's rows. For a seed whose
    RL stage did not fit (its SFT row alone counts toward the SFT spread), and for one whose run was stopped in its
    closing evaluation: a greedy row already played is kept, not played again."""
    from drill.evaluate.report import write_results
    from drill.train.heldout import evaluate_heldout
    from drill.train.methods import configure
    from drill.train.rollouts import prompt_options
    from drill.train.target import load_target

    stages = sorted((path for path in folder.glob("stage-*") if (path / "stage.json").is_file()),
                    key=lambda path: int(path.name.split("-")[1]))
    if not stages:
        raise SystemExit(f"{folder}: no stage is complete")
    path = folder / "heldout.json"
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    have = {row["policy"] for row in old["summary"]} if old else set()
    missing = {stage.name.removeprefix("stage-"): stage / "adapter" for stage in stages
               if stage.name.removeprefix("stage-") not in have}
    untrained = untrained and "untrained" not in have
    if not missing and not untrained:
        print(f"{folder}: every finished stage has its held-out row", flush=True)
        return
    settings = json.loads((stages[0] / "config.json").read_text(encoding="utf-8"))
    method = stages[0].name.split("-", 2)[2]  # stage-1-sft: the stage's options are under its method's name
    settings.pop(method)
    config, _ = configure(method, **settings)
    config = config.updated(output_dir=folder, eval_tasks=10_000, eval_split="validation",
                            eval_baselines=[] if old else ["heuristic"], eval_untrained=untrained)
    target = load_target(config.env, config.env_options)
    if batch is not None:  # a greedy episode's batch-mates change only its padding: floating-point rounding at most
        target = dataclasses.replace(target, spec=dataclasses.replace(target.spec, batch=batch))
    model_id = json.loads((stages[0] / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"]
    playing = ", ".join([*missing, *(["untrained"] if untrained else [])])
    stored = f" beside the stored {', '.join(sorted(have))}" if have else ""
    print(f"{folder}: playing {playing}{stored}", flush=True)
    # played into a folder of their own, so that the stored file stays whole until the merged one replaces it
    scratch = folder / "heldout-adding"
    scratch.mkdir(exist_ok=True)
    evaluate_heldout(config, target, list(config.roles or target.roles), missing, model_id, scratch,
                     prompt_options(config, target))
    if old:
        write_results(path, *merged(old, json.loads((scratch / "heldout.json").read_text(encoding="utf-8"))))
    else:
        (scratch / "heldout.json").replace(path)
    shutil.rmtree(scratch)


def merged(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]], list[Episode]]:
    """Two held-out files of one run as one (`write_results`' meta, summary rows and episodes): `old`'s rows, then
    `new`'s. Refused when they were played on other tasks or another split, or when a row is in both."""
    for key in ("split", "tasks"):
        if old["meta"].get(key) != new["meta"].get(key):
            raise SystemExit(f"the held-out rows to add were played on other {key} than the stored ones")
    stored, adding = (meta.get("precision") for meta in (old["meta"], new["meta"]))
    if stored and adding and stored != adding:
        raise SystemExit(f"the held-out rows to add were played at {adding}, the stored ones at {stored}: greedy rows "
                         "at two precisions differ; play every row where the stored ones were played")
    if not stored or not adding:  # a file from before the precision was recorded
        print(f"the precision of the {'stored' if not stored else 'new'} held-out rows is not recorded: compare them "
              f"with the {'new' if not stored else 'stored'} ones ({adding or stored or 'unknown'}) only if they were "
              "played the same way", flush=True)
    twice = {row["policy"] for row in old["summary"]} & {row["policy"] for row in new["summary"]}
    if twice:
        raise SystemExit(f"held-out rows {sorted(twice)} are both stored and new")
    meta = old["meta"] | {"adapter": old["meta"].get("adapter", {}) | new["meta"].get("adapter", {}),
                          "precision": stored or adding}
    return (meta, old["summary"] + new["summary"],
            [Episode.model_validate(e) for e in old["episodes"] + new["episodes"]])


def rows_of(preset: Preset, played: dict[str, list[Episode]]) -> dict[str, dict[str, Any]]:
    """Each held-out row of a run (`1-sft`, `2-rft`, `untrained`, `heuristic`): the spec's summary of its episodes
    and the success rate, computed here from the stored episodes (`episodes_of`), so every row is measured the same
    way, whenever it was played."""
    spec, tasks = registry.specs()[preset.env], validation_tasks(preset)
    rows = {}
    for name, mine in played.items():
        summary = {"total": statistics.fmean(e.score.total for e in mine),  # type: ignore[union-attr]
                   **(spec.summarize(mine, tasks) if spec.summarize else {})}
        summary["success"] = statistics.fmean(spec.success(e, tasks[e.task_id]) for e in mine) if spec.success \
            else None
        summary["invalid"] = statistics.fmean(e.count("invalid_action") for e in mine)  # calls per episode
        rows[name] = summary
    return rows


def zero_variance(folder: Path, method: str) -> str:
    """The RL stage's fraction of zero-variance groups over its steps: from the run's metrics file, or, for a run
    stopped before it wrote one, from its RL stage folders' own (`stage-2-grpo*/metrics.jsonl`)."""
    def read(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    if (folder / "metrics.jsonl").is_file():
        lines = [r for r in read(folder / "metrics.jsonl") if r.get("method", r.get("stage")) == method]
    else:
        lines = [r for path in sorted(folder.glob(f"stage-*-{method}*/metrics.jsonl")) for r in read(path)]
    flat = [r["group_flat/total"] for r in lines if "group_flat/total" in r]
    return "—" if not flat else " ".join(f"{value:.0%}" for value in flat)


def validation_tasks(preset: Preset) -> dict[str, Any]:
    spec = registry.specs()[preset.env]
    return {t.id: t for t in spec.make(spec.parse_options(preset.options))().tasks("validation")}


def episodes_of(preset: Preset, folder: Path) -> dict[str, list[Episode]]:
    """A run's held-out episodes by row (`1-sft`, `2-grpo`, `untrained`, `heuristic`), each scored again by today's
    rubric: a rubric fixed after a run judges its episodes too."""
    spec, tasks = registry.specs()[preset.env], validation_tasks(preset)
    rubric = spec.rubric_for(preset.options)
    data = json.loads((folder / "heldout.json").read_text(encoding="utf-8"))
    episodes = [Episode.model_validate(e) for e in data["episodes"]]
    episodes = [e.model_copy(update={"score": rubric.score(e, tasks[e.task_id])}) for e in episodes]
    rows, start = {}, 0
    for row in data["summary"]:
        rows[row["policy"]] = episodes[start:start + row["episodes"]]
        start += row["episodes"]
    return rows


def acted(episode: Episode, limit: int = 320) -> str:
    """What the episode's roles did, one call per turn, cut to `limit` characters each."""
    lines = []
    for turn in episode.turns:
        action = turn.action
        text = f"{action.tool}({json.dumps(action.arguments)})" if action.tool else f"invalid: {action.raw!r}"
        lines.append(f"    {turn.role}: {text[:limit]}{' ...' if len(text) > limit else ''}")
    return "\n".join(lines)


def changed(preset: Preset, folder: Path, count: int) -> None:
    """The held-out episodes whose total moved most between the SFT adapter and the RL one, each way: what to read
    before trusting a table (issue 41 asks for two per environment, quoted in the log)."""
    spec, tasks = registry.specs()[preset.env], validation_tasks(preset)
    rows = episodes_of(preset, folder)
    sft_name = next(n for n in rows if n.endswith("sft"))
    rl_name = next(n for n in rows if n.startswith(preset.rl_name))
    before = {(e.task_id, e.seed): e for e in rows[sft_name]}
    pairs = [(before[(e.task_id, e.seed)], e) for e in rows[rl_name] if (e.task_id, e.seed) in before]

    def delta(pair: tuple[Episode, Episode]) -> float:
        return pair[1].score.total - pair[0].score.total  # type: ignore[union-attr]

    pairs.sort(key=delta)
    for title, chosen in (("RL gained", pairs[::-1][:count]), ("RL lost", pairs[:count])):
        for old, new in chosen:
            if delta((old, new)) == 0:
                continue
            task = tasks[old.task_id]
            outcome = "" if spec.success is None else (f", success {spec.success(old, task):.0f} -> "
                                                       f"{spec.success(new, task):.0f}")
            print(f"\n{title}: {old.task_id} seed {old.seed} ({spec.describe(task) if spec.describe else ''}): "
                  f"total {old.score.total:.3f} -> {new.score.total:.3f}{outcome}")  # type: ignore[union-attr]
            print(f"  {sft_name}:\n{acted(old)}\n  {rl_name}:\n{acted(new)}")


def flips(preset: Preset, rows: dict[str, list[Episode]], sft_name: str, rl_name: str) -> tuple[int, int]:
    """How many held-out episodes the RL adapter turned from failure to success, and from success to failure."""
    spec, tasks = registry.specs()[preset.env], validation_tasks(preset)
    before = {(e.task_id, e.seed): spec.success(e, tasks[e.task_id]) for e in rows[sft_name]}  # type: ignore[misc]
    after = {(e.task_id, e.seed): spec.success(e, tasks[e.task_id]) for e in rows[rl_name]}  # type: ignore[misc]
    shared = before.keys() & after.keys()
    return (sum(after[k] > before[k] for k in shared), sum(after[k] < before[k] for k in shared))


def paired_deltas(rows: dict[str, list[Episode]], sft_name: str, rl_name: str) -> list[float]:
    """Each held-out episode's total under the RL adapter minus its total under the SFT start (same task and seed)."""
    before = {(e.task_id, e.seed): e.score.total for e in rows[sft_name]}  # type: ignore[union-attr]
    return [e.score.total - before[(e.task_id, e.seed)] for e in rows[rl_name]  # type: ignore[union-attr]
            if (e.task_id, e.seed) in before]


def paired_interval(deltas: Sequence[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """The mean of per-episode changes and its 95% bootstrap interval (resampling the episodes). Not the issue's bar,
    which compares a seed's gain with the spread of every seed's SFT start: this asks whether one seed's RL stage
    changed its own start's total beyond the noise of which questions happened to be held out."""
    import numpy as np

    values = np.asarray(deltas, dtype=float)
    means = np.random.default_rng(seed).choice(values, size=(resamples, len(values))).mean(axis=1)
    return float(values.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def rl_row(preset: Preset, output_dir: Path, seed: int) -> bool:
    """Whether the seed's held-out file has an RL row (read from its summary, without parsing the episodes)."""
    summary = json.loads((output_dir / f"seed-{seed}" / "heldout.json").read_text(encoding="utf-8"))["summary"]
    return any(row["policy"].startswith(preset.rl_name) for row in summary)


def report(name: str, seeds: Sequence[int], output_dir: Path) -> None:
    preset = PRESETS[name]
    method = preset.stages[-1].split(":", 1)[0]
    played = {seed: episodes_of(preset, output_dir / f"seed-{seed}") for seed in seeds
              if (output_dir / f"seed-{seed}" / "heldout.json").exists()}  # read and scored once a seed
    runs = {seed: rows_of(preset, episodes) for seed, episodes in played.items()}
    if not runs:
        raise SystemExit(f"no finished run under {output_dir}")
    columns = ("total", "success", *preset.behaviours)  # each gets a verdict; the table also shows invalid calls
    options = ", ".join(f"{k}={v}" for k, v in preset.options.items())
    print(f"\n{preset.env}, validation split, greedy ({options}), every episode scored by today's rubric; "
          f"SFT {preset.sft.split(',')[0]}, RL {' then '.join(preset.stages)}")
    precisions = {seed: json.loads((output_dir / f"seed-{seed}" / "heldout.json").read_text(encoding="utf-8"))["meta"]
                  .get("precision") or "not recorded" for seed in runs}
    print("model rows played at: " + ", ".join(f"seed {seed} {where}" for seed, where in precisions.items()))
    if len(set(precisions.values())) > 1:
        print("WARNING: the seeds' rows were played at different precisions, and the spread and gains below mix them")
    print()
    print("| row | seed | " + " | ".join(columns) + " | invalid calls / episode | RL zero-variance groups per round |")
    print("|---" * (len(columns) + 4) + "|")
    shown = set()
    for seed, rows in runs.items():
        for name, row in rows.items():
            if name in ("untrained", "heuristic") and name in shown:
                continue  # greedy and seed-independent: shown once
            shown.add(name)
            cells = " | ".join("—" if row.get(c) is None else f"{row[c]:.3f}" for c in columns)
            flat = zero_variance(output_dir / f"seed-{seed}", method) if name.startswith(preset.rl_name) else ""
            print(f"| {name} | {seed if name not in ('untrained', 'heuristic') else '—'} | {cells} | "
                  f"{row['invalid']:.2f} | {flat} |")
    sft_name = next(n for n in next(iter(runs.values())) if n.endswith("sft"))
    rl_name = next((n for rows in runs.values() for n in rows if n.startswith(preset.rl_name)), None)
    with_rl = [rows for rows in runs.values() if rl_name in rows]
    print(f"\n{len(runs)} SFT seeds; {len(with_rl)} with the RL stage")
    for seed, rows in runs.items():
        if rl_name in rows and registry.specs()[preset.env].success is not None:
            gained, lost = flips(preset, played[seed], sft_name, rl_name)
            print(f"seed {seed}: success per task, SFT -> RL: {gained} gained, {lost} lost")
    for seed, rows in runs.items():  # information beside the bar, not the bar (`paired_interval`)
        if rl_name in rows:
            deltas = paired_deltas(played[seed], sft_name, rl_name)
            mean, low, high = paired_interval(deltas)
            print(f"seed {seed}: total, RL minus its own SFT start per episode: mean {mean:+.3f}, 95% bootstrap "
                  f"interval [{low:+.3f}, {high:+.3f}] over {len(deltas)} episodes")
    for column in columns:
        if any(rows[name].get(column) is None for rows in runs.values() for name in (sft_name, rl_name)
               if name in rows):
            print(f"{column}: not defined for every run (no submission to measure it on)")
            continue
        sft = [rows[sft_name][column] for rows in runs.values()]
        changes = [rows[rl_name][column] - rows[sft_name][column] for rows in with_rl]
        print(f"{column}: {verdict(sft, changes, column in preset.lower, column in preset.neutral)}")
    if rl_name is not None:
        plot_gains(preset, runs, sft_name, rl_name, columns, output_dir / "chain.png")
        print(f"\nwrote {output_dir / 'chain.png'}")


def plot_gains(preset: Preset, runs: dict[int, dict[str, dict[str, Any]]], sft_name: str, rl_name: str,
               columns: Sequence[str], path: Path) -> None:
    """One panel per column: each seed's RL gain over its SFT start (a fall, for a column where lower is better) as a
    bar, and the SFT seeds' max-min spread as a dashed line. A bar above the line is a gain that counts (issue 41),
    green when three SFT seeds give the spread (fewer give no verdict: every bar gray)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from drill.evaluate.report import save_figure

    shown = [c for c in columns if c not in preset.neutral
             and all(rows.get(n, {}).get(c) is not None for rows in runs.values() for n in (sft_name, rl_name)
                     if n in rows)]
    if not shown:
        return
    fig, axes = plt.subplots(1, len(shown), figsize=(2.4 * len(shown), 3.2), squeeze=False)
    for axis, column in zip(axes[0], shown):
        seeds = [seed for seed, rows in runs.items() if rl_name in rows]
        spread, gains, counts = counted([rows[sft_name][column] for rows in runs.values()],
                                        [runs[s][rl_name][column] - runs[s][sft_name][column] for s in seeds],
                                        column in preset.lower)
        verdict = len(runs) >= 3
        axis.bar([str(s) for s in seeds], gains, color=["tab:green" if c and verdict else "tab:gray" for c in counts])
        axis.axhline(spread, linestyle="--", color="tab:red", label=f"SFT spread {spread:.3f}")
        axis.axhline(0.0, color="black", linewidth=0.8)
        axis.set_title(column + (" (fall)" if column in preset.lower else ""), fontsize=9)
        axis.set_xlabel("seed", fontsize=8)
        axis.legend(fontsize=7)
        axis.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel(f"RL gain over the SFT start ({rl_name})", fontsize=8)
    fig.suptitle(f"{preset.env}, validation, greedy: gains that count are green", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


def counted(sft: Sequence[float], changes: Sequence[float], lower: bool = False
            ) -> tuple[float, list[float], list[bool]]:
    """The SFT seeds' max-min spread, each seed's gain (a fall where `lower` is better) and whether it counts."""
    spread = max(sft) - min(sft)
    gains = [0.0 - c for c in changes] if lower else list(changes)  # 0.0 - 0.0 is 0.0, where -0.0 would print "-0.000"
    return spread, gains, [g > spread + 1e-9 for g in gains]  # rates are fractions of the tasks: a tie is no gain


def verdict(sft: Sequence[float], changes: Sequence[float], lower: bool = False, neutral: bool = False) -> str:
    """One column against the bar: each seed's RL change (RL minus its SFT start) counts as a gain when it exceeds
    the max-min spread of every SFT seed's value (issue 41). `lower`: lower is better, so a fall is the gain;
    `neutral`: no better direction, so changes are printed and never counted."""
    spread, gains, counts = counted(sft, changes, lower)
    start = f"SFT {statistics.fmean(sft):.3f} (spread {spread:.3f} over {len(sft)} seeds)"
    if neutral:
        return (f"{start}; RL change per seed {', '.join(f'{c:+.3f}' for c in changes) or '—'} "
                f"(no better direction: no verdict)")
    beats = sum(counts)
    outcome = ("no RL run" if not gains else "fewer than 3 SFT seeds: no verdict" if len(sft) < 3 else
               f"{beats} of {len(gains)} RL gains beat the spread"
               + ("" if len(gains) == len(sft) else f" (only {len(gains)} of {len(sft)} seeds have the RL stage)"))
    return (f"{start}; RL gain per seed {', '.join(f'{g:+.3f}' for g in gains) or '—'}"
            f" (mean {statistics.fmean(gains) if gains else float('nan'):+.3f})"
            f"{' (lower is better)' if lower else ''}: {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", choices=sorted(PRESETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--eval-tasks", type=int, default=10_000, help="validation tasks (default: all)")
    parser.add_argument("--sft-from", type=Path, default=None,
                        help="an earlier chain's output folder: each seed whose SFT stage finished there starts from "
                             "a copy of it (the SFT preset must be the same; the RL stage may differ); a preset with "
                             "further RL stages also copies the finished RL stages before its last")
    parser.add_argument("--untrained-seed", type=int, default=0,
                        help="the seed whose run (or --evaluate-only) also plays the untrained model (greedy: the "
                             "same in every run); -1: none")
    parser.add_argument("--evaluate-only", action="store_true",
                        help="train nothing: play each seed's finished stage adapters that its held-out file lacks and "
                             "add their rows to it (a seed whose RL stage did not fit, or whose run was stopped in "
                             "its closing evaluation)")
    parser.add_argument("--eval-batch", type=int, default=None, metavar="N",
                        help="--evaluate-only: episodes per lockstep batch (default: the environment's). 32 rows of "
                             "an adapter looping for all ten turns outgrow the prefix cache (DRILL_PREFIX_CACHE_MB), "
                             "and their later turns prefill their whole prompts again")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--teacher-only", action="store_true",
                        help="write the teacher's training episodes (OUTPUT_DIR/teacher-train.json) and stop: before "
                             "seeds that share the file start side by side")
    parser.add_argument("--episodes", type=int, default=0, metavar="N",
                        help="also print, per seed, the N held-out episodes RL changed most each way")
    args = parser.parse_args()
    preset = PRESETS[args.preset]
    if args.teacher_only:
        if preset.teacher is None:
            raise SystemExit(f"preset {args.preset} has no teacher")
        print(teacher_source(preset, args.output_dir))
        return
    for seed in args.seeds if args.evaluate_only else ():
        evaluate_missing(args.output_dir / f"seed-{seed}", untrained=seed == args.untrained_seed, batch=args.eval_batch)
    if not args.report_only and not args.evaluate_only:
        source = teacher_source(preset, args.sft_from or args.output_dir, strict=args.sft_from is None) \
            if preset.teacher else None
        for seed in args.seeds:
            folder = args.output_dir / f"seed-{seed}"
            if (folder / "heldout.json").exists() and rl_row(preset, args.output_dir, seed):
                continue  # done; a held-out file without the RL row is replaced by a whole run (or: --evaluate-only)
            if args.sft_from and not folder.exists():
                copy_earlier_stages(preset, args.sft_from / f"seed-{seed}", folder)
            command = train_command(preset, seed, source, folder, args.eval_tasks, seed == args.untrained_seed)
            print("$ " + " ".join(command), flush=True)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "drill.cli", *command[1:],
                            *(["--resume"] if folder.exists() else [])], check=True)
            print(f"seed {seed}: {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    report(args.preset, args.seeds, args.output_dir)
    for seed in args.seeds if args.episodes else ():
        if (args.output_dir / f"seed-{seed}" / "heldout.json").exists() and rl_row(preset, args.output_dir, seed):
            print(f"\n## seed {seed}: episodes RL changed")
            changed(preset, args.output_dir / f"seed-{seed}", args.episodes)


if __name__ == "__main__":
    main()
