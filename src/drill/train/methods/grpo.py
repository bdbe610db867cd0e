"""GRPO with LoRA on Drill environments: the whole training loop, top to bottom, in `train()`.

How to run it:

    drill train triage --steps 30 --output-dir runs/triage           # reader mode, embedded SmolLM2-135M
    drill train triage --config run.toml --resume                    # continue a killed run
    drill train chaosops --role oversight --scripted-policy heuristic \\
        --role-reward oversight=rogue_caught+rogue_false_positive \\
        --weight "rogue_multiplier=2.0->1.0" --curriculum easy:200,medium:200,hard:200

    from drill.train import RunConfig, train
    from drill.train.methods import grpo
    result = train(RunConfig(env="triage"), "grpo", grpo.Options(steps=30))

Each step: (1) draw `tasks_per_step` training tasks and roll out a group of `group_size` episodes per
task with one LLM policy for the trained roles (every turn of every running episode is one batched
`generate` call; other roles are scripted); (2) score them with the step's rubric (weight schedules
applied); (3) compute group-relative advantages per trained role and turn every model turn into a
sample of its exact sampled token ids; (4) compute the clipped policy-gradient loss with the k3 KL to
the reference; (5) update the LoRA adapter; (6) append a metrics line; (7) checkpoint every N steps.
After the last step: the adapter, the learning curve and a held-out evaluation (`Run.finish`).

Where this departs from the papers (GRPO: Shao et al. 2024; Dr. GRPO: Liu et al. 2025):

* LoRA, not full fine-tuning. The reference policy is the one the stage started from (`Run.reference`): from a
  fresh adapter the base model itself, reached by disabling the adapter, with no second copy of the weights; after
  an SFT stage (or `--init-adapter`) the SFT adapter, as in RLHF after SFT, whose LoRA weights are swapped in for
  the reference pass.
* Old log-probabilities are not the sampler's. The first update's forward pass over
  prompt + completion gives the log-probabilities the loss uses, and their detached values are the
  "old" ones: same weights as at sampling time, the same numerics as the training pass, the logits
  divided by the sampling temperature (as TRL does). With `ppo_epochs=1` (the default, one update per
  rollout batch) the ratio is exactly 1 and the clip never binds; the gradient is the plain
  advantage-weighted policy gradient. With `ppo_epochs > 1` the later updates are clipped against them.
* Multi-turn episodes: every model turn is its own sample (prompt = everything the model was shown,
  loss on its sampled tokens only), and all of a role's turns in an episode share the episode's
  advantage for that role (outcome supervision, no per-turn credit assignment).
* Zero-variance groups (every episode got the same reward) have zero advantages and so give zero
  policy gradient. They are counted in the metrics (`zero_variance_groups`), not dropped or
  resampled; they still count in the loss normaliser. When `kl_beta == 0` their samples are not
  even forwarded (their loss is exactly zero), which saves time; the logged KL is then the mean over
  the samples that were trained on.
* `loss_type=dr_grpo` divides the token sum by samples x max_new_tokens (Dr. GRPO's constant);
  `advantage_scaling=none` drops the std division. Dr. GRPO proper is both together.
* Guards the papers do not need: the run stops with the step number when the loss or the gradient
  norm is not finite, or when the mean KL exceeds `kl_abort`, before that update is applied.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from drill.evaluate.report import progress_bar
from drill.train.config import setting
from drill.train.exploration import component_group_std, group_signal
from drill.train.metrics import REWARD_PREFIX
from drill.train.objective import AdvantageScaling, LossType, grpo_loss
from drill.train.run import Run, TrainingStopped, TrainResult
from drill.train.samples import group_samples, micro_batch_logprobs, micro_batches, token_budget
from drill.train.schedules import TaskSampler


@dataclass(frozen=True)
class Options:
    """What GRPO adds to the run config."""

    steps: int = setting("GRPO", 30, "Optimizer steps (one rollout batch each).")
    loss_type: LossType = setting(
        "GRPO", "grpo",
        "grpo: mean over each sample's tokens, then over samples (GRPO paper). dr_grpo: sum over tokens divided by "
        "samples x max_new_tokens, a constant (Dr. GRPO), with no length bias.")
    advantage_scaling: AdvantageScaling = setting(
        "GRPO", "group",
        "group: (r - mean) / (std + 1e-4) within the group (GRPO). none: r - mean only (Dr. GRPO).")
    clip_epsilon: float = setting("GRPO", 0.2, "PPO clip range: the ratio is clipped to [1 - eps, 1 + eps].")
    kl_beta: float = setting(
        "GRPO", 0.04,
        "Weight of the k3 KL penalty to the reference, the policy the stage started from (the base weights for a fresh "
        "adapter; the previous stage's adapter after --stage or --init-adapter); 0 turns the "
        "penalty off and skips the reference pass except on each step's first micro-batch, where the logged KL is "
        "measured (a sample).")
    ppo_epochs: int = setting(
        "GRPO", 1,
        "Optimizer updates per rollout batch. With 1 the ratio is exactly 1 and clipping never binds; with more, later"
        " updates are clipped against the first update's log-probabilities.")
    kl_abort: float | None = setting(
        "GRPO", 2.0,
        "Stop the run when the mean KL to the reference exceeds this (None: never).")
    audit_every: int = setting(
        "GRPO", 0,
        "Run the reward-hacking detectors (drill.audit.detectors) every N steps and print what they find; 0: never.")
    audit_stop: bool = setting("GRPO", False, "Stop the run when the detectors find something (with audit_every).")
    store: str | None = setting(
        "GRPO", None,
        "Write every rollout episode to this trajectory store (SQLite; created if missing), method grpo@STEP, success "
        "judged against the oracle as drill eval does.")

    def __post_init__(self) -> None:
        problems = []
        for name in ("steps", "ppo_epochs"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.loss_type not in ("grpo", "dr_grpo"):
            problems.append(f"loss_type must be grpo or dr_grpo, got {self.loss_type!r}")
        if self.advantage_scaling not in ("group", "none"):
            problems.append(f"advantage_scaling must be group or none, got {self.advantage_scaling!r}")
        if not 0 < self.clip_epsilon < 1:
            problems.append(f"clip_epsilon must be in (0, 1), got {self.clip_epsilon}")
        if self.kl_beta < 0:
            problems.append(f"kl_beta must be >= 0, got {self.kl_beta}")
        if self.audit_every < 0:
            problems.append(f"audit_every must be >= 0, got {self.audit_every}")
        if self.kl_abort is not None and not self.kl_abort > 0:
            problems.append(f"kl_abort must be > 0 or None, got {self.kl_abort}")
        if problems:
            raise ValueError("invalid grpo options: " + "; ".join(problems))


def train(run: Run, options: Options) -> TrainResult:
    """Run GRPO as the module docstring says; returns where everything was written."""
    config, target, roles = run.config, run.target, run.roles
    schedules, curriculum = run.plan.schedules, run.plan.curriculum
    model, optimizer, device = run.model, run.optimizer, run.device
    sampler = TaskSampler(run.plan.pools, config.seed)
    budget = token_budget(config.micro_batch_tokens, model, device)  # 0 on the CPU by default: micro_batch_size
    start = run.resume(sampler)
    store = None
    if options.store is not None:
        from drill.memory import TrajectoryStore

        store = TrajectoryStore(options.store)
    measure_success = store is not None or curriculum.gated
    if measure_success and "oracle" not in target.baselines:
        raise ValueError(f"--store and @RATE curriculum stages judge success against the oracle, and {target.name} "
                         "has none")
    history = [(r["stage"], r.get("success")) for r in run.metrics.read()]  # the curriculum's input, resumed too
    print(f"grpo: the KL is measured against {run.reference.describe()}"
          + ("" if options.kl_beta > 0 else " (logged, not penalised: kl_beta=0)"), flush=True)

    pool = None  # --rollout-workers: each step's episodes played by Ray actors calling the generation server
    if config.rollout_workers:
        from drill.evaluate.distributed import RayPool
        from drill.train.rollouts import server_step_policies

        pool = RayPool(target.make_env, server_step_policies(config, run.base, target, roles, run.prompting),
                       config.rollout_workers, config.ray_address, config.max_turns)
    with progress_bar() as progress, pool or contextlib.nullcontext():
        bar = progress.add_task("GRPO", total=options.steps, completed=start)
        for step in range(start + 1, options.steps + 1):
            started = time.perf_counter()
            # 1. roll out a group of G episodes per task; the trained roles share one batched policy
            stage = curriculum.next_stage(history)
            tasks = sampler.draw(stage, config.tasks_per_step)
            weights = {s.name: s.value_at(step, options.steps) for s in schedules}
            rubric = target.rubric(weights, config.shaping)
            # 2. score: every episode is scored with this step's rubric
            policies = run.policies(step)  # binds this step's adapter to the generation engine
            played = run.play_groups(run.group_jobs(step, tasks), policies, rubric, pool, step)
            episodes = [e for group in played for e in group]
            rollout_s = time.perf_counter() - started
            success_rate = None
            if measure_success:  # half the oracle's total on the same task and seed, as drill eval judges it
                from drill.memory import SuccessRule

                by_id = {t.id: t for t in tasks}
                success = SuccessRule(target.make_env, rubric, target.baselines["oracle"])
                success_rate = sum(success(e, by_id[e.task_id]) for e in episodes) / len(episodes)
                if store is not None:  # --store: every rollout episode
                    store.add(episodes, by_id, target.options, success, method=f"grpo@{step}")

            # 3. group-relative advantages; one sample per model turn, from its exact sampled token ids
            groups = [group_samples(group, k * config.group_size, roles, config.role_rewards,
                                    options.advantage_scaling) for k, group in enumerate(played)]
            samples = [s for g in groups for s in g.samples]
            trained = samples if options.kl_beta > 0 else [s for s in samples if s.advantage != 0.0]
            batches = micro_batches(trained, config.micro_batch_size, run.pad_id, budget)

            # 4. clipped policy-gradient loss + k3 KL to the starting policy;  5. LoRA update(s)
            model.train()
            old: list[torch.Tensor] = []
            ref: list[torch.Tensor | None] = []
            first_loss = kl_sum = grad_norm = 0.0
            kl_tokens = clipped = clip_tokens = 0
            for epoch in range(options.ppo_epochs):
                optimizer.zero_grad(set_to_none=True)
                epoch_loss = 0.0
                for i, batch in enumerate(batches):
                    if epoch == 0:
                        # the reference pass: every micro-batch when the KL is penalised; with kl_beta == 0 only the
                        # step's first one, so the logged KL is measured on a sample and the rest of the work is saved.
                        # It comes before the policy's forward pass: a starting adapter is swapped in for it.
                        if options.kl_beta > 0 or i == 0:
                            with run.reference():
                                ref.append(micro_batch_logprobs(model, batch, config.temperature))  # (B, T)
                        else:
                            ref.append(None)
                    logprobs = micro_batch_logprobs(model, batch, config.temperature)  # (B, T)
                    if epoch == 0:
                        old.append(logprobs.detach())  # (B, T) the sampling-time policy: ratio 1 in epoch 0
                    mask = batch.tokens.completion_mask.to(device)  # (B, T)
                    terms = grpo_loss(logprobs, old[i], ref[i], batch.tokens.advantages.to(device), mask,
                                      loss_type=options.loss_type, clip_epsilon=options.clip_epsilon,
                                      kl_beta=options.kl_beta, num_samples=len(samples),
                                      max_new_tokens=config.max_new_tokens)
                    terms.loss.backward()
                    epoch_loss += float(terms.loss.detach())
                    clipped, clip_tokens = clipped + terms.clipped_tokens, clip_tokens + terms.tokens
                    if epoch == 0 and ref[i] is not None:
                        kl_sum, kl_tokens = kl_sum + terms.kl_sum, kl_tokens + terms.tokens
                grad_norm = float(torch.nn.utils.clip_grad_norm_(run.params, config.max_grad_norm)) if batches else 0.0
                kl_mean = kl_sum / kl_tokens if kl_tokens else None
                problem = training_problem(epoch_loss, grad_norm, kl_mean, options.kl_abort)
                if problem is not None:
                    raise TrainingStopped(step, problem)
                if batches:
                    optimizer.step()
                first_loss = epoch_loss if epoch == 0 else first_loss

            # 6. log one line of metrics
            step_s = time.perf_counter() - started
            kl_mean = kl_sum / kl_tokens if kl_tokens else None
            clip_fraction = clipped / clip_tokens if clip_tokens else 0.0
            record = step_record(step, stage, tasks, episodes, groups, weights, config.shaping, first_loss,
                                 kl_mean, clip_fraction, grad_norm, len(samples), len(trained), rollout_s, step_s)
            if success_rate is not None:
                record["success"] = success_rate
            history.append((stage, success_rate))
            run.metrics.append(record)
            progress.update(bar, completed=step)
            progress.console.print(step_line(record, options.steps), highlight=False, markup=False)
            if options.audit_every and step % options.audit_every == 0:  # reward-hacking detectors (drill.audit)
                from drill.audit.training import audit_training_step
                audit_training_step(step, run.metrics.read(), episodes, options.audit_stop, progress.console)

            # 7. checkpoint atomically every N steps and at the end
            run.checkpoint(step, options.steps, sampler.state_dict())

    return run.finish(options.steps, f"GRPO on {target.name} ({run.base.model_id})")


def training_problem(loss: float, grad_norm: float, kl_mean: float | None, kl_abort: float | None) -> str | None:
    """Why the update must not be applied (every reason found), or None."""
    problems = []
    if not np.isfinite(loss):
        problems.append(f"the loss is {loss} (not finite)")
    if kl_mean is not None and not np.isfinite(kl_mean):
        problems.append(f"the KL to the reference is {kl_mean} (not finite)")
    elif kl_abort is not None and kl_mean is not None and kl_mean > kl_abort:
        problems.append(f"the mean KL to the reference {kl_mean:.4f} exceeds kl_abort={kl_abort}")
    if not np.isfinite(grad_norm):
        problems.append(f"the gradient norm is {grad_norm} (not finite)")
    return "; ".join(problems) + "; no update was applied" if problems else None


def step_record(step: int, stage: str, tasks: list[Any], episodes: list[Any], groups: list[Any],
                weights: dict[str, float], shaping: list[str], loss: float, kl: float | None, clip_fraction: float,
                grad_norm: float, samples: int, trained: int, rollout_s: float, step_s: float) -> dict[str, Any]:
    scores = [e.score for e in episodes]
    lengths = [len(t.action.generation.token_ids) for e in episodes for t in e.turns
               if t.action.generation is not None]
    record: dict[str, Any] = {"step": step, "stage": stage, "tasks": [t.id for t in tasks],
                              f"{REWARD_PREFIX}total": float(np.mean([s.total for s in scores]))}
    if shaping:
        record["env_reward/total"] = float(np.mean([s.total - sum(s.contribution(n) for n in shaping) for s in scores]))
    for name in scores[0].components:
        record[f"{REWARD_PREFIX}{name}"] = float(np.mean([s.components[name] for s in scores]))
    for group in groups:
        for role, values in group.rewards.items():
            record.setdefault(f"role_reward/{role}", []).extend(values)
    for key in [k for k in record if k.startswith("role_reward/")]:
        record[key] = float(np.mean(record[key]))
    record |= {f"weight/{name}": value for name, value in weights.items()}
    record |= component_group_std(episodes, len(episodes) // len(tasks))  # per-component spread within groups
    record |= {
        "loss": loss, "kl": kl, "clip_fraction": clip_fraction, "grad_norm": grad_norm,
        "completion_tokens_mean": float(np.mean(lengths)) if lengths else 0.0,
        "completion_tokens_max": max(lengths, default=0),
        "tokens_per_s": sum(lengths) / rollout_s if rollout_s > 0 else 0.0,
        "rollout_s": rollout_s, "train_s": step_s - rollout_s, "step_s": step_s,
        "groups": sum(len(g.rewards) for g in groups), "zero_variance_groups": sum(g.zero_variance for g in groups),
        "samples": samples, "trained_samples": trained,
    }
    return record


def step_line(record: dict[str, Any], steps: int) -> str:
    components = " ".join(f"{k[len(REWARD_PREFIX):]}={v:.2f}" for k, v in record.items()
                          if k.startswith(REWARD_PREFIX) and k != f"{REWARD_PREFIX}total")
    kl = "—" if record["kl"] is None else f"{record['kl']:.4f}"
    return (f"step {record['step']}/{steps}  reward {record[f'{REWARD_PREFIX}total']:.3f}  [{components}]  "
            f"kl {kl}  loss {record['loss']:+.4f}  clip {record['clip_fraction']:.2f}  "
            f"zero-var {record['zero_variance_groups']}/{record['groups']}  {group_signal(record)}  "
            f"len {record['completion_tokens_mean']:.0f}  "
            + (f"success {record['success']:.0%} ({record['stage']})  " if "success" in record else "")
            + f"{record['step_s']:.1f}s")
