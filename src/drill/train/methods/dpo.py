"""DPO on trajectory pairs: online from GRPO-style groups (`train()`), or offline against an expert's calls at
the states a model reached (`train_on_expert_pairs()`); each is one loop.

How to run it:

    drill train triage -E k=1 --stage sft:source=oracle --stage dpo:steps=20,beta=0.1 ...
    drill train inbox --init-adapter runs/sft/adapter --method dpo \
        --source results:runs/rollin/results.json --expert reader --epochs 1 --nll 1 ...

    from drill.train import train
    from drill.train.methods import dpo
    result = train(config, "dpo", dpo.Options(steps=20), init_adapter=Path("runs/sft/adapter"))

Each step: (1) draw `config.tasks_per_step` training tasks and sample a group of `config.group_size` episodes
per task from the current adapter, all with the same environment seed (`run.episode_seed`), at
`config.temperature`; (2) score them; (3) form preference pairs (`preference_pairs`): among a group's
samples of a trained role that share a prompt (a single-turn group's turns always do; in multi-turn
episodes, turns whose whole prompt is identical), the best-rewarded against the worst, when their reward
margin exceeds `min_margin` (equal rewards never form a pair); (4) the DPO loss (`dpo_loss`) on the
summed log-probabilities of exactly the sampled tokens, against the reference; (5) one AdamW update of the
LoRA weights; (6) a metrics line; (7) a checkpoint every `config.checkpoint_every` steps.

Where this departs from the DPO paper (Rafailov et al. 2023):

* Online and on-policy: pairs come from the current adapter's samples each step, ranked by the rubric,
  not from a fixed human-preference set.
* The reference is the policy the stage started from (`Run.reference`, as in the GRPO trainer): the base model
  with the adapter disabled for a fresh adapter; after an SFT stage the SFT adapter, as in the DPO paper.
* A step whose groups form no pair makes no update; it is logged (`pairs: 0`), not skipped silently.

**Offline, against an expert** (`source=` and `expert=` given; DAgger's data with a preference loss). The
source (a model's play: `lora:PATH`, `llm`, or `results:PATH` of one, as SFT's sources) drives the episodes on
the training split and the expert baseline labels every trained state, as in SFT's `expert=`
(`sources.play_source`). Wherever the two differ, the pair is the expert's call (chosen, written in the reply
format) against the tokens the source sampled there (rejected), on the same prompt; `max_reward` keeps only
states of source episodes that scored below it (its failures). Then `epochs` passes over the pairs in a seeded
order, `batch_size` pairs per AdamW update. Departures, besides the pairs' origin: the reference is the adapter
the stage starts from (the SFT model, as in the DPO paper), its log-probabilities computed once before the first
update; and `nll` adds that weight times the chosen call's mean token NLL (RPO, Pang et al. 2024), since DPO
alone can lower the chosen call's likelihood along with the rejected one's.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from drill.core.types import Episode
from drill.evaluate.report import progress_bar
from drill.train.config import setting
from drill.train.exploration import component_group_std, group_signal
from drill.train.metrics import REWARD_PREFIX
from drill.train.run import Run, TrainResult
from drill.train.samples import (Sample, collate, completion_logprobs, episode_samples, role_reward,
                                 shared_prompt_logprobs)
from drill.train.schedules import TaskSampler
from drill.train.sources import ExpertLabels, epoch_order, play_source, teacher_prompter


@dataclass(frozen=True)
class Options:
    """What DPO adds to the run config."""

    steps: int = setting("DPO", 20, "Optimizer steps, one rollout batch each.")
    beta: float = setting("DPO", 0.1, "DPO temperature: the weight of the log-ratio margin inside the sigmoid.")
    min_margin: float = setting(
        "DPO", 0.0,
        "A pair is formed only when the chosen reward exceeds the rejected one by more than this (>= 0).")
    source: str | None = setting(
        "DPO", None,
        "Offline pairs: who drives the episodes (a model's play: `lora:PATH`, `llm`, `results:PATH`); needs `expert`.")
    expert: str | None = setting(
        "DPO", None,
        "Offline pairs: the baseline whose call is preferred wherever it differs from the source's.")
    epochs: int = setting("DPO", 1, "Offline: passes over the pairs (`steps` is for online DPO).")
    batch_size: int = setting("DPO", 8, "Offline: pairs per optimizer step.")
    nll: float = setting(
        "DPO", 0.0,
        "Weight of the chosen call's mean token NLL added to the DPO loss (RPO); 0: plain DPO.")
    max_reward: float | None = setting(
        "DPO", None,
        "Offline: pairs only from source episodes whose total reward is below this (None: every episode).")

    def __post_init__(self) -> None:
        if (self.source is None) != (self.expert is None):
            raise ValueError("dpo: offline pairs need both source= (whose play) and expert= (whose calls to prefer); "
                             "give both, or neither for online DPO")
        if self.source is not None and self.source == self.expert:
            raise ValueError(f"dpo: expert {self.expert!r} is also the source; it would never disagree with itself")
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"dpo: {name} must be at least 1, got {getattr(self, name)}")
        if self.nll < 0:
            raise ValueError(f"dpo: nll must be >= 0, got {self.nll}")
        if self.source is None and self.max_reward is not None:
            raise ValueError("dpo: max_reward filters the source's episodes of offline pairs; give source= and "
                             "expert=, or drop it")
        if self.steps < 1:
            raise ValueError(f"dpo: steps must be at least 1, got {self.steps}")
        if not self.beta > 0:
            raise ValueError(f"dpo: beta must be > 0, got {self.beta}")
        if self.min_margin < 0:
            raise ValueError(f"dpo: min_margin must be >= 0, got {self.min_margin}")


@dataclass(frozen=True)
class PreferencePair:
    chosen: Sample
    rejected: Sample
    margin: float | None
    """Reward of the chosen minus reward of the rejected; always > min_margin >= 0. None for an expert pair."""


def dpo_loss(chosen: Tensor, rejected: Tensor, ref_chosen: Tensor, ref_rejected: Tensor, beta: float) -> Tensor:
    """-log sigmoid(beta * ((pi_c - ref_c) - (pi_r - ref_r))), averaged over pairs. # 4 x (P,) -> ()

    Each argument is a sequence log-probability: the sum of the log-probabilities of one sample's sampled tokens.
    """
    logits = beta * ((chosen - ref_chosen) - (rejected - ref_rejected))  # (P,)
    return -F.logsigmoid(logits).mean()


def chosen_nll(chosen: Tensor, pairs: Sequence[PreferencePair]) -> Tensor:
    """The chosen completions' mean token NLL, averaged over pairs: the RPO term (`nll` weighs it). # (P,) -> ()

    `chosen` holds the pairs' chosen sequence log-probabilities (sums over their sampled tokens), in order."""
    lengths = torch.tensor([len(p.chosen.completion_ids) for p in pairs], dtype=chosen.dtype, device=chosen.device)
    return (-chosen / lengths).mean()


def preference_pairs(episodes: Sequence[Episode], roles: Collection[str], role_rewards: Mapping[str, str],
                     min_margin: float) -> list[PreferencePair]:
    """Pairs from one group (same task, same seed): per trained role and shared prompt, the best against the worst
    sample when their reward margin exceeds `min_margin`. Ties never pair."""
    pairs = []
    for role in roles:
        scored: list[tuple[Sample, float]] = []
        for index, episode in enumerate(episodes):
            if episode.score is None:
                raise ValueError(f"episode of task {episode.task_id} seed {episode.seed} was not scored")
            reward = role_reward(episode.score, role_rewards.get(role, "total"))
            scored.extend((s, reward) for s in episode_samples(episode, index, {role: 0.0}))
        scored.sort(key=lambda item: (item[0].prompt_ids, -item[1], item[0].episode))
        for _, same in groupby(scored, key=lambda item: item[0].prompt_ids):
            members = list(same)
            (best, high), (worst, low) = members[0], members[-1]
            if len(members) > 1 and high - low > min_margin:
                pairs.append(PreferencePair(chosen=best, rejected=worst, margin=high - low))
    return pairs


def sequence_logprobs(model: Any, samples: Sequence[Sample], pad_id: int) -> Tensor:
    """Summed log-probabilities of each sample's sampled tokens, at temperature 1. # (B,)"""
    batch = collate(samples, pad_id)
    logprobs = completion_logprobs(model, batch, 1.0)  # (B, T)
    return (logprobs * batch.completion_mask.to(logprobs.device)).sum(dim=1)  # (B,)


def train(run: Run, options: Options) -> TrainResult:
    """Run online DPO as the module docstring says (offline when `options.source` is given)."""
    if options.source is not None:
        return train_on_expert_pairs(run, options)
    config, target, roles, curriculum = run.config, run.target, run.roles, run.plan.curriculum
    if curriculum.gated:
        raise ValueError("dpo: curriculum stages that advance on success (@RATE) are for GRPO; give NAME:STEPS stages")
    sampler = TaskSampler(run.plan.pools, config.seed)
    start = run.resume(sampler)
    rubric = target.rubric({})
    model = run.model

    with progress_bar() as progress:
        bar = progress.add_task("DPO", total=options.steps, completed=start)
        for step in range(start + 1, options.steps + 1):
            started = time.perf_counter()
            # 1-2. a group of G episodes per task, same environment seed within a group, scored
            tasks = sampler.draw(curriculum.stage_at(step), config.tasks_per_step)
            groups = run.play_groups(run.group_jobs(step, tasks), run.policies(step), rubric)
            episodes = [e for group in groups for e in group]
            # 3. best against worst per shared prompt, margin > min_margin
            pairs = [p for group in groups
                     for p in preference_pairs(group, roles, config.role_rewards, options.min_margin)]
            # 4-5. the DPO loss against the starting policy, one update
            loss_value, accuracy = 0.0, 0.0
            model.train()
            run.optimizer.zero_grad(set_to_none=True)
            for i in range(0, len(pairs), config.micro_batch_size):
                chunk = pairs[i:i + config.micro_batch_size]
                both = [p.chosen for p in chunk] + [p.rejected for p in chunk]
                with run.reference():  # before the policy's pass: a starting adapter is swapped in for it
                    reference = sequence_logprobs(model, both, run.pad_id)  # (2P,)
                policy = sequence_logprobs(model, both, run.pad_id)  # (2P,)
                n = len(chunk)
                loss = dpo_loss(policy[:n], policy[n:], reference[:n], reference[n:], options.beta)
                if options.nll:
                    loss = loss + options.nll * chosen_nll(policy[:n], chunk)
                loss = loss * n / len(pairs)
                loss.backward()
                loss_value += float(loss.detach())
                accuracy += float(((policy[:n] - reference[:n]) > (policy[n:] - reference[n:])).sum()) / len(pairs)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(run.params, config.max_grad_norm)) if pairs else 0.0
            if not (np.isfinite(loss_value) and np.isfinite(grad_norm)):
                raise FloatingPointError(f"dpo step {step}: loss {loss_value}, gradient norm {grad_norm}; "
                                         "no update was applied")
            if pairs:
                run.optimizer.step()
            # 6. metrics;  7. checkpoint
            scores = [e.score for e in episodes if e.score is not None]
            record = {"step": step, "stage": "dpo", "tasks": [t.id for t in tasks],
                      f"{REWARD_PREFIX}total": float(np.mean([s.total for s in scores]))}
            record |= {f"{REWARD_PREFIX}{c}": float(np.mean([s.components[c] for s in scores]))
                       for c in scores[0].components}
            record |= component_group_std(episodes, config.group_size)
            record |= {"loss": loss_value, "pairs": len(pairs), "reward_accuracy": accuracy,
                       "margin_mean": float(np.mean([p.margin or 0.0 for p in pairs])) if pairs else 0.0,
                       "grad_norm": grad_norm, "step_s": time.perf_counter() - started}
            run.metrics.append(record)
            progress.update(bar, completed=step)
            progress.console.print(f"dpo step {step}/{options.steps}  reward {record['reward/total']:.3f}  "
                                   f"pairs {len(pairs)}  loss {loss_value:.4f}  {group_signal(record)}  "
                                   f"{record['step_s']:.1f}s",
                                   highlight=False, markup=False)
            run.checkpoint(step, options.steps, sampler.state_dict())

    return run.finish(options.steps, f"DPO on {target.name} ({run.base.model_id})")


def expert_pairs(played: Sequence[Episode], labels: ExpertLabels, roles: Sequence[str],
                 max_reward: float | None = None) -> list[PreferencePair]:
    """At every trained state where the expert's call differs from what the source wrote: the expert's call
    (chosen, its prompt ids as the policy renders them) against the source's sampled tokens there (rejected, on
    the same prompt). With `max_reward`, only states of source episodes whose total is below it."""
    pairs = []
    for index, episode in enumerate(played):
        if episode.score is None:
            raise ValueError(f"episode of task {episode.task_id} seed {episode.seed} was not scored")
        if max_reward is not None and episode.score.total >= max_reward:
            continue
        labelled = labels.relabel(episode, roles)
        for turn, label in zip(episode.turns, labelled.turns, strict=True):
            if turn.role not in roles:
                continue
            wrote = turn.action.generation
            if wrote is None or not wrote.token_ids:
                raise ValueError(f"turn {turn.index} of task {episode.task_id}: the source's action carries no "
                                 f"sampled token ids (played by {turn.policy!r}); expert pairs need a model's play: "
                                 "lora:PATH, llm, or results:PATH of one")
            (chosen,) = episode_samples(episode.model_copy(update={"turns": [label]}), index, {turn.role: 0.0})
            rejected = Sample(prompt_ids=chosen.prompt_ids, completion_ids=tuple(wrote.token_ids), advantage=0.0,
                              episode=index, turn=turn.index, role=turn.role)
            same_call = (turn.action.parse_error is None
                         and (turn.action.tool, turn.action.arguments) == (label.action.tool, label.action.arguments))
            if not same_call and chosen.completion_ids != rejected.completion_ids:
                pairs.append(PreferencePair(chosen=chosen, rejected=rejected, margin=None))
    return pairs


def pair_logprobs(model: Any, pair: PreferencePair, pad_id: int) -> Tensor:
    """Summed log-probabilities of the chosen and the rejected completion, one shared prompt pass. # (2,)"""
    batch = collate([pair.chosen, pair.rejected], pad_id)
    logprobs = shared_prompt_logprobs(model, pair.chosen.prompt_ids, batch, 1.0)  # (2, T)
    return (logprobs * batch.completion_mask.to(logprobs.device)).sum(dim=1)  # (2,)


def train_on_expert_pairs(run: Run, options: Options) -> TrainResult:
    """Offline DPO on expert pairs as the module docstring says."""
    assert options.source is not None and options.expert is not None  # Options checks they come together
    # -- the source's play, the pairs, the reference ---------------------------------------------------------
    config, roles, model, pad_id = run.config, run.roles, run.model, run.pad_id
    played, labels = play_source(config, options.source, options.expert, run.target, roles,
                                 teacher_prompter(model, run.base, run.prompting))
    assert labels is not None  # an expert was given
    pairs = expert_pairs(played, labels, roles, options.max_reward)
    if not pairs:
        raise ValueError(f"dpo: {options.expert} never disagrees with {options.source} on the states kept "
                         f"(max_reward={options.max_reward}); there is nothing to prefer")
    print(f"dpo: {len(pairs)} pairs (the expert's call against the source's) from {len(played)} episodes")
    model.eval()
    with torch.no_grad():  # the reference: the starting adapter, before any update (and before a resume loads)
        reference = [pair_logprobs(model, pair, pad_id) for pair in pairs]  # P x (2,)
    batches_per_epoch = -(-len(pairs) // options.batch_size)
    total = options.epochs * batches_per_epoch
    start = run.resume()

    with progress_bar() as progress:
        bar = progress.add_task("DPO (expert pairs)", total=total, completed=start)
        for step in range(start + 1, total + 1):
            started = time.perf_counter()
            epoch, index = divmod(step - 1, batches_per_epoch)
            order = epoch_order(len(pairs), config.seed, epoch)[index * options.batch_size:
                                                                 (index + 1) * options.batch_size]
            model.train()
            run.optimizer.zero_grad(set_to_none=True)
            loss_value = nll_value = accuracy = chosen_shift = rejected_shift = 0.0
            for i in order:
                policy = pair_logprobs(model, pairs[i], pad_id)  # (2,)
                ref = reference[i].to(policy.device)  # (2,)
                nll = chosen_nll(policy[:1], [pairs[i]])
                loss = (dpo_loss(policy[:1], policy[1:], ref[:1], ref[1:], options.beta)
                        + options.nll * nll) / len(order)
                loss.backward()
                loss_value += float(loss.detach())
                nll_value += float(nll.detach()) / len(order)
                shift = (policy.detach() - ref).tolist()  # log pi - log ref, chosen and rejected
                accuracy += (shift[0] > shift[1]) / len(order)
                chosen_shift += shift[0] / len(order)
                rejected_shift += shift[1] / len(order)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(run.params, config.max_grad_norm))
            if not (np.isfinite(loss_value) and np.isfinite(grad_norm)):
                raise FloatingPointError(f"dpo step {step}: loss {loss_value}, gradient norm {grad_norm}; "
                                         "no update was applied")
            run.optimizer.step()
            record = {"step": step, "stage": "dpo", "epoch": epoch + 1, "loss": loss_value, "chosen_nll": nll_value,
                      "pairs": len(order), "reward_accuracy": accuracy, "chosen_logratio": chosen_shift,
                      "rejected_logratio": rejected_shift, "grad_norm": grad_norm,
                      "step_s": time.perf_counter() - started}
            run.metrics.append(record)
            progress.update(bar, completed=step)
            progress.console.print(f"dpo step {step}/{total}  loss {loss_value:.4f}  accuracy {accuracy:.2f}  "
                                   f"chosen {chosen_shift:+.2f}  rejected {rejected_shift:+.2f}  "
                                   f"{record['step_s']:.1f}s", highlight=False, markup=False)
            run.checkpoint(step, total, {"step": step})

    return run.finish(total, f"DPO on {run.target.name}: {options.expert} over {options.source} (curve: pair accuracy)",
                      lambda r: r | {"reward/total": r["reward_accuracy"]})
