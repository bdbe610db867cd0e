"""Rejection-sampling fine-tuning (RFT, STaR) with rationalization: the whole loop in `train()`.

How to run it:

    drill train triage -E k=1 --stage sft:source=oracle --stage rft:rounds=3,bar=heuristic ...

    from drill.train import train
    from drill.train.methods import rft
    result = train(config, "rft", rft.Options(rounds=3, bar="group_mean"), init_adapter=Path("runs/sft/adapter"))

Each round: (1) sample `config.group_size` episodes per training task (`tasks_per_round` of them, drawn in a
seeded order across rounds; never a test task) from the current adapter at `config.temperature`, one
environment seed per group; (2) score them; (3) keep the episodes above the bar (`kept_episodes`):
`absolute:X` (total >= X), `group_mean` (total > the group's mean, so a zero-variance group keeps none) or
`heuristic` (total > the heuristic baseline's total on the same task and seed), and with `floor`, only those
whose total is also at least the floor; (4) rationalization: for a
task where nothing cleared the bar, sample again with a hint in the prompt (the oracle's call for that turn,
written in the reply format), keep those that clear the bar, and train on each hinted completion against
the prompt *without* the hint; (5) fine-tune on the kept samples, every trained turn but those the environment
answered as invalid (`skip_invalid`) (`samples.nll_update`: mean NLL per sampled
token, `epochs` passes); (6) a metrics line; (7) a checkpoint after every round.

Where this departs from STaR (Zelikman et al. 2022): the base for each round is the current adapter, not the
original model (the paper restarts from the pre-trained model every outer loop); the filter is a reward
bar, not exact answer match; and the hint is the oracle's whole call for the turn, shown in the observation,
rather than the gold answer alone. Rationalized samples keep the tokens the model sampled under the hint,
so they are the model's own tokens, but conditioned on a prompt it will never see again: that mismatch is
the method, and it is why they are logged apart (`rationalized`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from drill.core.policy import Policy, PolicyInput
from drill.core.rollout import run_episodes
from drill.core.types import Action, Episode, PolicyInfo, Task
from drill.evaluate.report import progress_bar
from drill.models.policy import LLMPolicy, render_call
from drill.train.config import setting
from drill.train.exploration import component_group_std, group_signal
from drill.train.metrics import REWARD_PREFIX
from drill.train.run import Job, Run, TrainResult
from drill.train.samples import Sample, episode_samples, nll_update
from drill.train.target import TrainTarget

HINT = "Hint from a reviewer: a correct reply here is\n{reply}"


@dataclass(frozen=True)
class Options:
    """What RFT adds to the run config."""

    rounds: int = setting("RFT", 3, "Sample -> filter -> fine-tune rounds.")
    tasks_per_round: int = setting(
        "RFT", 16,
        "Training tasks sampled per round (each gets a group of `config.group_size` episodes).")
    bar: str = setting(
        "RFT", "group_mean",
        "Which episodes are kept: `absolute:X`, `group_mean` or `heuristic` (see the module docstring).")
    floor: float | None = setting(
        "RFT", None,
        "Keep only episodes whose total is also at least this, whatever the bar (None: no floor). Against the "
        "group's mean alone, a group of four failures still has members above its mean: an inbox round that sampled "
        "mostly failures kept them, and the adapter learned to loop on cut-off calls (experiments/LOG.md).")
    rationalize: bool = setting(
        "RFT", True,
        "For tasks where nothing clears the bar, sample with the oracle's call as a hint (needs an oracle).")
    skip_invalid: bool = setting(
        "RFT", True,
        "Train on a kept episode's turns except those the environment answered as invalid (the later turns still "
        "see them in their prompts): a kept episode's invalid call is not imitated. Off, an inbox round kept "
        "`return_final_answer({})` before right answers and RFT spread it to 35 of 95 held-out episodes.")
    epochs: int = setting("RFT", 1, "Passes over a round's kept samples.")
    batch_size: int = setting("RFT", 8, "Samples per optimizer step.")

    def __post_init__(self) -> None:
        for name in ("rounds", "tasks_per_round", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"rft: {name} must be at least 1, got {getattr(self, name)}")
        if self.bar not in ("group_mean", "heuristic") and not self.bar.startswith("absolute:"):
            raise ValueError(f"rft: bar must be absolute:X, group_mean or heuristic, got {self.bar!r}")
        if self.bar.startswith("absolute:"):
            float(self.bar.removeprefix("absolute:"))  # a bad number raises ValueError here
        if self.floor is not None and (isinstance(self.floor, bool) or not isinstance(self.floor, int | float)):
            raise ValueError(f"rft: floor must be a number, got {self.floor!r}")


def kept_episodes(group: Sequence[Episode], bar: str, baseline: float | None = None,
                  floor: float | None = None) -> list[int]:
    """Indices of a group's episodes (same task and seed) above the bar and at or above `floor` (when given);
    `baseline` is the heuristic's total."""
    totals = []
    for episode in group:
        if episode.score is None:
            raise ValueError(f"episode of task {episode.task_id} seed {episode.seed} was not scored")
        totals.append(episode.score.total)
    above = _above_bar(totals, bar, baseline)
    return above if floor is None else [i for i in above if totals[i] >= floor]


def _above_bar(totals: Sequence[float], bar: str, baseline: float | None) -> list[int]:
    if bar.startswith("absolute:"):
        threshold = float(bar.removeprefix("absolute:"))
        return [i for i, t in enumerate(totals) if t >= threshold]
    if bar == "group_mean":
        mean = float(np.mean(totals))
        return [i for i, t in enumerate(totals) if t > mean]
    if bar == "heuristic":
        if baseline is None:
            raise ValueError("the heuristic bar needs the heuristic's total on the task")
        return [i for i, t in enumerate(totals) if t > baseline]
    raise ValueError(f"unknown bar {bar!r}")


class HintedPolicy:
    """The LLM policy prompted with the oracle's call for the turn as a hint; each generation is then re-attached
    to the prompt ids *without* the hint, which is what the model is trained on."""

    def __init__(self, llm: LLMPolicy, oracle: Policy) -> None:
        self.llm = llm
        self.oracle = oracle

    @property
    def info(self) -> PolicyInfo:
        return self.llm.info

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        calls = self.oracle.act(inputs)
        hinted = [PolicyInput(task=i.task, seed=i.seed, history=i.history, observation=i.observation.model_copy(
            update={"content": i.observation.content + "\n\n" + HINT.format(reply=render_call(c.tool, c.arguments))}))
            for i, c in zip(inputs, calls, strict=True)]
        actions = self.llm.act(hinted)
        plain = []
        for item, action in zip(inputs, actions, strict=True):
            if action.generation is None:
                raise ValueError("the hinted policy's action has no Generation")
            prompt = self.llm.model.prompt_token_ids(self.llm.conversation(item), None)  # the prompt without the hint
            plain.append(action.model_copy(update={"generation": action.generation.model_copy(
                update={"prompt_token_ids": prompt})}))
        return plain


def train(run: Run, options: Options) -> TrainResult:
    """Run rejection sampling with rationalization as the module docstring says."""
    config, target, roles = run.config, run.target, run.roles
    if options.rationalize and "oracle" not in target.baselines:
        raise ValueError(f"rft: rationalization needs an oracle, and {target.name} has none; set rationalize=false")
    if options.bar == "heuristic" and "heuristic" not in target.baselines:
        raise ValueError(f"rft: bar=heuristic but {target.name} has no heuristic baseline")
    train_tasks = target.tasks("train")
    start = run.resume()
    rubric = target.rubric({})
    scripted = {r: target.baselines[config.scripted_policy]() for r in target.roles if r not in roles}

    with progress_bar() as progress:
        bar = progress.add_task("RFT rounds", total=options.rounds, completed=start)
        for round_ in range(start + 1, options.rounds + 1):
            started = time.perf_counter()
            # 1-2. G episodes per task from the current adapter, one environment seed per group, scored
            jobs = run.group_jobs(round_, round_tasks(train_tasks, options.tasks_per_round, config.seed, round_))
            policies = run.policies(round_)
            groups = run.play_groups(jobs, policies, rubric)
            episodes = [e for group in groups for e in group]
            # 3. keep what clears the bar
            baselines = heuristic_totals(target, jobs, rubric, config.max_turns) \
                if options.bar == "heuristic" else [None] * len(jobs)
            kept = [[g[i] for i in kept_episodes(g, options.bar, b, options.floor)] for g, b in zip(groups, baselines)]
            # 4. rationalization for the tasks with nothing kept: hinted samples, trained without the hint
            missed = [k for k, chosen in enumerate(kept) if not chosen]
            rationalized = 0
            if options.rationalize and missed:
                hinted = HintedPolicy(policies[roles[0]], target.baselines["oracle"]())
                assignment = {r: hinted if r in roles else scripted[r] for r in target.roles}
                again = run.play_groups([jobs[k] for k in missed], assignment, rubric)
                for k, group in zip(missed, again):
                    bar_total = rationalization_bar(options.bar, groups[k], baselines[k])
                    if options.floor is not None:
                        bar_total = max(bar_total, options.floor)
                    kept[k] = [e for e in group if e.score is not None and e.score.total >= bar_total]
                    rationalized += len(kept[k])
            samples, skipped = kept_samples([e for chosen in kept for e in chosen], roles, options.skip_invalid)
            # 5. fine-tune on the kept samples
            losses = []
            run.model.train()
            for epoch in range(options.epochs):
                order = list(range(len(samples)))
                random.Random(f"rft:{config.seed}:{round_}:{epoch}").shuffle(order)
                for i in range(0, len(order), options.batch_size):
                    chosen_samples = [samples[j] for j in order[i:i + options.batch_size]]
                    losses.append(nll_update(run.model, run.optimizer, run.params, chosen_samples, run.pad_id,
                                             config)[0])
            # 6. metrics;  7. checkpoint after every round
            scores = [e.score for e in episodes if e.score is not None]
            record = {"step": round_, "stage": "rft", "tasks": [task.id for task, _ in jobs],
                      f"{REWARD_PREFIX}total": float(np.mean([s.total for s in scores]))}
            record |= {f"{REWARD_PREFIX}{c}": float(np.mean([s.components[c] for s in scores]))
                       for c in scores[0].components}
            record |= component_group_std(episodes, config.group_size)
            record |= {"kept_episodes": sum(len(k) for k in kept), "episodes": len(episodes),
                       "rationalized": rationalized, "tasks_missed": len(missed), "samples": len(samples),
                       "invalid_turns_skipped": skipped,
                       "loss": float(np.mean(losses)) if losses else None, "step_s": time.perf_counter() - started}
            run.metrics.append(record)
            progress.update(bar, completed=round_)
            progress.console.print(f"rft round {round_}/{options.rounds}  reward {record['reward/total']:.3f}  "
                                   f"kept {record['kept_episodes']}/{len(episodes)} (+{rationalized} rationalized)  "
                                   f"{group_signal(record)}  {record['step_s']:.1f}s", highlight=False, markup=False)
            run.checkpoint(round_, round_, {"round": round_})

    return run.finish(options.rounds, f"RFT on {target.name} ({run.base.model_id})")


def kept_samples(kept: Sequence[Episode], roles: Sequence[str], skip_invalid: bool) -> tuple[list[Sample], int]:
    """The trained roles' turns of the kept episodes as samples, and how many invalid turns were left out
    (`skip_invalid`: a turn with an `invalid_action` event is not trained on)."""
    samples: list[Sample] = []
    skipped = 0
    for episode in kept:
        invalid = {t.index for t in episode.turns if t.role in roles and any(e.name == "invalid_action"
                                                                              for e in t.events)}
        for sample in episode_samples(episode, 0, {role: 1.0 for role in roles}):
            if skip_invalid and sample.turn in invalid:
                skipped += 1
            else:
                samples.append(sample)
    return samples, skipped


def round_tasks(train_tasks: Sequence[Task], count: int, seed: int, round_: int) -> list[Task]:
    """The round's tasks: consecutive slices of one seeded shuffle of the training split (reshuffled per pass)."""
    picked = []
    for position in range((round_ - 1) * count, round_ * count):
        epoch, offset = divmod(position, len(train_tasks))
        order = list(range(len(train_tasks)))
        random.Random(f"rft-tasks:{seed}:{epoch}").shuffle(order)
        picked.append(train_tasks[order[offset]])
    return picked


def heuristic_totals(target: TrainTarget, jobs: Sequence[Job], rubric: Any, max_turns: int) -> list[float | None]:
    """The heuristic baseline's total on each job (task and seed): the `heuristic` bar."""
    episodes = run_episodes(target.make_env, list(jobs), target.baselines["heuristic"](), rubric, max_turns)
    return [e.score.total if e.score is not None else None for e in episodes]


def rationalization_bar(bar: str, group: Sequence[Episode], baseline: float | None) -> float:
    """The total a hinted sample must reach: the same bar as the unhinted group faced."""
    if bar.startswith("absolute:"):
        return float(bar.removeprefix("absolute:"))
    if bar == "heuristic":
        return float(baseline if baseline is not None else 0.0) + 1e-9
    return float(np.mean([e.score.total for e in group if e.score is not None])) + 1e-9

