"""Online DPO on trajectory pairs from GRPO-style groups: the whole loop in `train()`.

How to run it:

    drill train triage -E k=1 --stage sft:source=oracle --stage dpo:steps=20,beta=0.1 ...

    from drill.train.dpo import DPOOptions, train
    result = train(config, DPOOptions(steps=20), init_adapter=Path("runs/sft/adapter"))

Each step: (1) draw `config.tasks_per_step` training tasks and sample a group of `config.group_size` episodes
per task from the current adapter, all with the same environment seed (`grpo.episode_seed`), at
`config.temperature`; (2) score them; (3) form preference pairs (`preference_pairs`): among a group's
samples of a trained role that share a prompt (a single-turn group's turns always do; in multi-turn
episodes, turns whose whole prompt is identical), the best-rewarded against the worst, when their reward
margin exceeds `min_margin` (equal rewards never form a pair); (4) the DPO loss (`dpo_loss`) on the
summed log-probabilities of exactly the sampled tokens, against the reference; (5) one AdamW update of the
LoRA weights; (6) a metrics line; (7) a checkpoint every `config.checkpoint_every` steps.

Where this departs from the DPO paper (Rafailov et al. 2023):

* Online and on-policy: pairs come from the current adapter's samples each step, ranked by the rubric,
  not from a fixed human-preference set.
* The reference is the base model with the adapter disabled (`with model.disable_adapter():`), as in the
  GRPO trainer, not the SFT model: after an SFT stage the DPO loss still measures the move away from the
  base weights, so its implicit KL anchor is the base model.
* A step whose groups form no pair makes no update; it is logged (`pairs: 0`), not skipped silently.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from drill.core.rollout import run_episodes
from drill.core.types import Episode
from drill.evaluate.report import atomic_write_text, progress_bar
from drill.train.checkpoint import save_checkpoint
from drill.train.config import GRPOConfig
from drill.train.exploration import component_group_std
from drill.train.metrics import REWARD_PREFIX, MetricsLog, plot_learning_curve
from drill.train.samples import Sample, collate, completion_logprobs, episode_samples, role_reward
from drill.train.target import TrainTarget


@dataclass(frozen=True)
class DPOOptions:
    """What DPO adds to the run config."""

    steps: int = 20
    """Optimizer steps, one rollout batch each."""
    beta: float = 0.1
    """DPO temperature: the weight of the log-ratio margin inside the sigmoid."""
    min_margin: float = 0.0
    """A pair is formed only when the chosen reward exceeds the rejected one by more than this (>= 0)."""

    def __post_init__(self) -> None:
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
    margin: float
    """Reward of the chosen minus reward of the rejected; always > min_margin >= 0."""


def dpo_loss(chosen: Tensor, rejected: Tensor, ref_chosen: Tensor, ref_rejected: Tensor, beta: float) -> Tensor:
    """-log sigmoid(beta * ((pi_c - ref_c) - (pi_r - ref_r))), averaged over pairs. # 4 x (P,) -> ()

    Each argument is a sequence log-probability: the sum of the log-probabilities of one sample's sampled tokens.
    """
    logits = beta * ((chosen - ref_chosen) - (rejected - ref_rejected))  # (P,)
    return -F.logsigmoid(logits).mean()


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


def train(config: GRPOConfig, options: DPOOptions, target: TrainTarget | None = None, base: Any = None,
          init_adapter: Path | None = None) -> Any:
    """Run online DPO as the module docstring says; returns a `TrainResult`."""
    from drill.models.adapters import save_adapter
    from drill.train.grpo import TrainResult, episode_seed, load_base, plan_run, resume_or_start, seed_everything
    from drill.train.heldout import evaluate_heldout
    from drill.train.lora import attach_lora
    from drill.train.rollouts import prompt_options, rollout_policies
    from drill.train.schedules import TaskSampler

    # -- setup: as grpo.train, from the previous stage's adapter when given -------------------------------------
    config = config.updated(steps=options.steps)  # resume_or_start and the schedules read config.steps
    plan = plan_run(config, target)
    target, roles, curriculum = plan.target, plan.roles, plan.curriculum
    if curriculum.gated:
        raise ValueError("dpo: curriculum stages that advance on success (@RATE) are for GRPO; give NAME:STEPS stages")
    sampler = TaskSampler(plan.pools, config.seed)
    base = base or load_base(config.model)
    seed_everything(config.seed)
    model = attach_lora(base.model, config, init_adapter)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    pad_id = base.tokenizer.pad_token_id if base.tokenizer.pad_token_id is not None else 0
    out = config.output_dir
    metrics = MetricsLog(out / "metrics.jsonl")
    start = resume_or_start(config, out, metrics, model, optimizer, sampler)
    atomic_write_text(out / "config.json", json.dumps(config.to_dict() | {"dpo": vars(options)}, indent=1))
    prompting = prompt_options(config, target)
    generate = rollout_policies(config, model, base, target, roles, out, prompting)
    rubric = target.rubric({})

    with progress_bar() as progress:
        bar = progress.add_task("DPO", total=options.steps, completed=start)
        for step in range(start + 1, options.steps + 1):
            started = time.perf_counter()
            # 1-2. a group of G episodes per task, same environment seed within a group, scored
            tasks = sampler.draw(curriculum.stage_at(step), config.tasks_per_step)
            jobs = [(task, episode_seed(config.seed, step, k)) for k, task in enumerate(tasks)
                    for _ in range(config.group_size)]
            episodes = run_episodes(target.make_env, jobs, generate(step), rubric, config.max_turns)
            # 3. best against worst per shared prompt, margin > min_margin
            pairs = [p for k in range(len(tasks))
                     for p in preference_pairs(episodes[k * config.group_size:(k + 1) * config.group_size], roles,
                                               config.role_rewards, options.min_margin)]
            # 4-5. the DPO loss against the base weights, one update
            loss_value, accuracy = 0.0, 0.0
            model.train()
            optimizer.zero_grad(set_to_none=True)
            for i in range(0, len(pairs), config.micro_batch_size):
                chunk = pairs[i:i + config.micro_batch_size]
                both = [p.chosen for p in chunk] + [p.rejected for p in chunk]
                policy = sequence_logprobs(model, both, pad_id)  # (2P,)
                with torch.no_grad(), model.disable_adapter():
                    reference = sequence_logprobs(model, both, pad_id)  # (2P,)
                n = len(chunk)
                loss = dpo_loss(policy[:n], policy[n:], reference[:n], reference[n:], options.beta) * n / len(pairs)
                loss.backward()
                loss_value += float(loss.detach())
                accuracy += float(((policy[:n] - reference[:n]) > (policy[n:] - reference[n:])).sum()) / len(pairs)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)) if pairs else 0.0
            if not (np.isfinite(loss_value) and np.isfinite(grad_norm)):
                raise FloatingPointError(f"dpo step {step}: loss {loss_value}, gradient norm {grad_norm}; "
                                         "no update was applied")
            if pairs:
                optimizer.step()
            # 6. metrics;  7. checkpoint
            scores = [e.score for e in episodes if e.score is not None]
            record = {"step": step, "stage": "dpo", "tasks": [t.id for t in tasks],
                      f"{REWARD_PREFIX}total": float(np.mean([s.total for s in scores]))}
            record |= {f"{REWARD_PREFIX}{c}": float(np.mean([s.components[c] for s in scores]))
                       for c in scores[0].components}
            record |= component_group_std(episodes, config.group_size)
            record |= {"loss": loss_value, "pairs": len(pairs), "reward_accuracy": accuracy,
                       "margin_mean": float(np.mean([p.margin for p in pairs])) if pairs else 0.0,
                       "grad_norm": grad_norm, "step_s": time.perf_counter() - started}
            metrics.append(record)
            progress.update(bar, completed=step)
            progress.console.print(f"dpo step {step}/{options.steps}  reward {record['reward/total']:.3f}  "
                                   f"pairs {len(pairs)}  loss {loss_value:.4f}  {record['step_s']:.1f}s",
                                   highlight=False, markup=False)
            if step % config.checkpoint_every == 0 or step == options.steps:
                save_checkpoint(out, step, model, optimizer, sampler.state_dict(), config.to_dict(),
                                config.keep_checkpoints)

    adapter_dir = out / "adapter"
    save_adapter(model, adapter_dir, base_model_id=base.model_id)
    records = metrics.read()
    plot_learning_curve(records, out / "learning_curve.png", f"DPO on {target.name} ({base.model_id})")
    evaluation = (evaluate_heldout(config, target, roles, adapter_dir, base.model_id, out, prompting)
                  if config.eval_tasks else [])
    return TrainResult(output_dir=out, adapter_dir=adapter_dir, steps=options.steps, metrics=records,
                       evaluation=evaluation)
