"""GRPO with LoRA on Drill environments: the whole training loop, top to bottom, in `train()`.

How to run it:

    drill train triage --steps 30 --output-dir runs/triage           # reader mode, embedded SmolLM2-135M
    drill train triage --config run.toml --resume                    # continue a killed run
    drill train chaosops --roles oversight --scripted-policy oracle \\
        --role-reward oversight=rogue_caught+rogue_false_positive \\
        --weight "rogue_multiplier=2.0->1.0" --curriculum easy:200,medium:200,hard:200

    from drill.train import GRPOConfig, train
    result = train(GRPOConfig(env="triage", steps=30))

Each step: (1) draw `tasks_per_step` training tasks and roll out a group of `group_size` episodes per
task with one LLM policy for the trained roles (every turn of every running episode is one batched
`generate` call; other roles are scripted); (2) score them with the step's rubric (weight schedules
applied); (3) compute group-relative advantages per trained role and turn every model turn into a
sample of its exact sampled token ids; (4) compute the clipped policy-gradient loss with the k3 KL to
the reference; (5) update the LoRA adapter; (6) append a metrics line; (7) checkpoint every N steps.
After the last step: the adapter, the learning curve and a held-out evaluation (`drill.train.heldout`).

Where this departs from the papers (GRPO: Shao et al. 2024; Dr. GRPO: Liu et al. 2025):

* LoRA, not full fine-tuning. The reference policy is the base model itself, reached by disabling the
  adapter (`with model.disable_adapter():`), so there is no second copy of the weights.
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
import hashlib
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drill.console import console
from drill.core.rollout import run_episodes
from drill.core.types import Task
from drill.evaluate.report import atomic_write_text, progress_bar
from drill.train.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint, save_checkpoint
from drill.train.config import GRPOConfig
from drill.train.exploration import component_group_std
from drill.train.metrics import REWARD_PREFIX, MetricsLog, plot_learning_curve
from drill.train.objective import grpo_loss
from drill.train.samples import group_samples, micro_batch_logprobs, micro_batches, token_budget
from drill.train.schedules import Curriculum, TaskSampler, WeightSchedule, parse_schedules
from drill.train.shaping import with_shaping
from drill.train.target import TrainTarget, load_target

RESUME_MUST_MATCH = ("env", "env_options", "model", "roles", "seed", "tasks_per_step", "curriculum",
                     "curriculum_field", "lora_rank", "lora_alpha", "lora_target_modules")
"""Config fields a resumed run must share with its checkpoint (the data order and the adapter's shape)."""


class TrainingStopped(RuntimeError):
    """The run stopped on a guard: a non-finite loss or gradient, or the KL abort threshold."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"training stopped at step {step}: {reason}")
        self.step = step
        self.reason = reason


@dataclass(frozen=True)
class BaseModel:
    """A loaded base model the trainer may wrap with LoRA (a copy of its own), its tokenizer and stable id."""

    model: Any
    tokenizer: Any
    model_id: str


@dataclass(frozen=True)
class TrainResult:
    output_dir: Path
    adapter_dir: Path
    steps: int
    metrics: list[dict[str, Any]]
    evaluation: list[dict[str, Any]] = field(default_factory=list)


def train(config: GRPOConfig, target: TrainTarget | None = None, base: BaseModel | None = None,
          init_adapter: Path | None = None) -> TrainResult:
    """Run GRPO as the module docstring says; returns where everything was written. `init_adapter`: start from
    that saved adapter (a previous stage's), else from `config.init_adapter`, instead of a fresh one."""
    from drill.train.heldout import evaluate_heldout
    from drill.train.lora import lora_training, run_device
    from drill.train.rollouts import prompt_options, rollout_policies

    # -- setup: environment, base model + LoRA adapter (fresh or loaded), optimizer, data order, outputs -------
    plan = plan_run(config, target)
    target, roles, schedules, curriculum = plan.target, plan.roles, plan.schedules, plan.curriculum
    sampler = TaskSampler(plan.pools, config.seed)
    device, _ = run_device(config)
    base = base or load_base(config.model)
    seed_everything(config.seed)
    # a chained stage starts from the previous stage's adapter
    model, params, optimizer, pad_id = lora_training(base, config, init_adapter)
    budget = token_budget(config.micro_batch_tokens, model, device)  # 0 on the CPU by default: micro_batch_size
    out = config.output_dir
    metrics = MetricsLog(out / "metrics.jsonl")
    start = resume_or_start(config, out, metrics, model, optimizer, sampler)
    atomic_write_text(out / "config.json", json.dumps(config.to_dict(), indent=1))
    prompting = prompt_options(config, target)  # demonstrations are played once, for rollouts and evaluation
    generate = rollout_policies(config, model, base, target, roles, out, prompting)
    store = None
    if config.store is not None:
        from drill.memory import TrajectoryStore

        store = TrajectoryStore(config.store)
    measure_success = store is not None or curriculum.gated
    if measure_success and "oracle" not in target.baselines:
        raise ValueError(f"--store and @RATE curriculum stages judge success against the oracle, and {target.name} "
                         "has none")
    history = [(r["stage"], r.get("success")) for r in metrics.read()]  # the curriculum's input, resumed too

    pool = None  # --rollout-workers: each step's episodes played by Ray actors calling the generation server
    if config.rollout_workers:
        from drill.evaluate.distributed import RayPool
        from drill.train.rollouts import server_step_policies

        pool = RayPool(target.make_env, server_step_policies(config, base, target, roles, prompting),
                       config.rollout_workers, config.ray_address, config.max_turns)
    with progress_bar() as progress, pool or contextlib.nullcontext():
        bar = progress.add_task("GRPO", total=config.steps, completed=start)
        for step in range(start + 1, config.steps + 1):
            started = time.perf_counter()
            # 1. roll out a group of G episodes per task; the trained roles share one batched policy
            stage = curriculum.next_stage(history)
            tasks = sampler.draw(stage, config.tasks_per_step)
            weights = {s.name: s.value_at(step, config.steps) for s in schedules}
            rubric = target.rubric(weights, config.shaping)
            jobs = [(task, episode_seed(config.seed, step, k)) for k, task in enumerate(tasks)
                    for _ in range(config.group_size)]
            # 2. score: run_episodes scores every episode with this step's rubric
            policies = generate(step)  # binds this step's adapter to the generation engine
            if pool is not None:  # one chunk of the step's jobs per worker, episodes back in job order
                episodes = pool.play(str(step), jobs, rubric, -(-len(jobs) // config.rollout_workers))
            else:
                episodes = run_episodes(target.make_env, jobs, policies, rubric, config.max_turns)
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
            groups = [group_samples(episodes[k * config.group_size:(k + 1) * config.group_size],
                                    k * config.group_size, roles, config.role_rewards, config.advantage_scaling)
                      for k in range(len(tasks))]
            samples = [s for g in groups for s in g.samples]
            trained = samples if config.kl_beta > 0 else [s for s in samples if s.advantage != 0.0]
            batches = micro_batches(trained, config.micro_batch_size, pad_id, budget)

            # 4. clipped policy-gradient loss + k3 KL to the base weights;  5. LoRA update(s)
            model.train()
            old: list[torch.Tensor] = []
            ref: list[torch.Tensor | None] = []
            first_loss = kl_sum = grad_norm = 0.0
            kl_tokens = clipped = clip_tokens = 0
            for epoch in range(config.ppo_epochs):
                optimizer.zero_grad(set_to_none=True)
                epoch_loss = 0.0
                for i, batch in enumerate(batches):
                    logprobs = micro_batch_logprobs(model, batch, config.temperature)  # (B, T)
                    if epoch == 0:
                        old.append(logprobs.detach())  # (B, T) the sampling-time policy: ratio 1 in epoch 0
                        # the reference pass: every micro-batch when the KL is penalised; with kl_beta == 0 only the
                        # step's first one, so the logged KL is measured on a sample and the rest of the work is saved
                        if config.kl_beta > 0 or i == 0:
                            with torch.no_grad(), model.disable_adapter():
                                ref.append(micro_batch_logprobs(model, batch, config.temperature))  # (B, T)
                        else:
                            ref.append(None)
                    mask = batch.tokens.completion_mask.to(device)  # (B, T)
                    terms = grpo_loss(logprobs, old[i], ref[i], batch.tokens.advantages.to(device), mask,
                                      loss_type=config.loss_type, clip_epsilon=config.clip_epsilon,
                                      kl_beta=config.kl_beta, num_samples=len(samples),
                                      max_new_tokens=config.max_new_tokens)
                    terms.loss.backward()
                    epoch_loss += float(terms.loss.detach())
                    clipped, clip_tokens = clipped + terms.clipped_tokens, clip_tokens + terms.tokens
                    if epoch == 0 and ref[i] is not None:
                        kl_sum, kl_tokens = kl_sum + terms.kl_sum, kl_tokens + terms.tokens
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)) if batches else 0.0
                kl_mean = kl_sum / kl_tokens if kl_tokens else None
                problem = training_problem(epoch_loss, grad_norm, kl_mean, config.kl_abort)
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
            metrics.append(record)
            progress.update(bar, completed=step)
            progress.console.print(step_line(record, config.steps), highlight=False, markup=False)
            if config.audit_every and step % config.audit_every == 0:  # reward-hacking detectors (drill.audit)
                from drill.audit.training import audit_training_step
                audit_training_step(step, metrics.read(), episodes, config.audit_stop, progress.console)

            # 7. checkpoint atomically every N steps and at the end
            if step % config.checkpoint_every == 0 or step == config.steps:
                save_checkpoint(out, step, model, optimizer, sampler.state_dict(), config.to_dict(),
                                config.keep_checkpoints)

    # -- outputs: adapter, learning curve, held-out evaluation -----------------------------------------
    from drill.models.adapters import save_adapter

    adapter_dir = out / "adapter"
    save_adapter(model, adapter_dir, base_model_id=base.model_id)
    records = metrics.read()
    plot_learning_curve(records, out / "learning_curve.png", f"GRPO on {target.name} ({base.model_id})")
    evaluation = (evaluate_heldout(config, target, roles, adapter_dir, base.model_id, out, prompting)
                  if config.eval_tasks else [])
    return TrainResult(output_dir=out, adapter_dir=adapter_dir, steps=config.steps, metrics=records,
                       evaluation=evaluation)


# -- the pieces train() calls, in the order it calls them ------------------------------------------------


@dataclass(frozen=True)
class RunPlan:
    """A config checked against its environment, before any model is loaded."""

    target: TrainTarget
    roles: list[str]
    schedules: list[WeightSchedule]
    curriculum: Curriculum
    pools: dict[str, list[Task]]


def plan_run(config: GRPOConfig, target: TrainTarget | None = None) -> RunPlan:
    """Check every option against the environment and the output folder; raises ValueError saying what is wrong."""
    target = target or load_target(config.env, config.env_options, config.env_url)
    roles = list(config.roles or target.roles)
    check_options(config, target, roles)
    from drill.train.lora import check_autocast

    check_autocast(config)  # a bfloat16 model, or a CPU without fast bfloat16 matmuls
    schedules = parse_schedules(config.weight_schedules)
    target.check_weight_names([s.name for s in schedules], config.shaping)
    with_shaping(target.rubric_factory(), config.shaping, {})  # unknown or clashing names fail here
    curriculum = Curriculum.parse(config.curriculum)
    pools = curriculum.pools(target.tasks("train"), config.curriculum_field)
    if config.demos:
        if "oracle" not in target.baselines:
            raise ValueError(f"demos={config.demos} needs an oracle baseline, and {target.name} has none")
        if config.demos > len(target.tasks("train")):
            raise ValueError(f"demos={config.demos} but {target.name} has only {len(target.tasks('train'))} "
                             "training tasks to draw them from")
    out = config.output_dir
    if not config.resume and ((out / "metrics.jsonl").exists() or list_checkpoints(out)):
        raise ValueError(f"{out} already holds a training run; pass --resume to continue it, "
                         "or choose another --output-dir")
    if config.resume and latest_checkpoint(out) is None:
        raise ValueError(f"--resume: no checkpoint in {out / 'checkpoints'}")
    return RunPlan(target=target, roles=roles, schedules=schedules, curriculum=curriculum, pools=pools)


def check_options(config: GRPOConfig, target: TrainTarget, roles: list[str]) -> None:
    """Fail before any model is loaded on options that do not fit the environment."""
    unknown = [r for r in [*roles, *config.role_rewards] if r not in target.roles]
    if unknown:
        raise ValueError(f"unknown role(s) {', '.join(unknown)} for {target.name}; roles are {', '.join(target.roles)}")
    untrained_rewards = [r for r in config.role_rewards if r not in roles]
    if untrained_rewards:
        raise ValueError(f"role_rewards names roles the model does not play: {', '.join(untrained_rewards)}")
    if len(roles) < len(target.roles) and config.scripted_policy not in target.baselines:
        raise ValueError(f"unknown scripted policy {config.scripted_policy!r}; "
                         f"choose from {', '.join(target.baselines)}")
    unknown_baselines = [b for b in config.eval_baselines if b not in target.baselines]
    if unknown_baselines:
        raise ValueError(f"unknown evaluation baseline(s) {', '.join(unknown_baselines)}; "
                         f"choose from {', '.join(target.baselines)}")
    for role, spec in config.role_rewards.items():
        if spec != "total":
            components = set(target.rubric_factory().weights)
            unknown_parts = [p.strip() for p in spec.split("+") if p.strip() not in components]
            if unknown_parts:
                raise ValueError(f"role reward {role}={spec} names unknown components {unknown_parts}; "
                                 f"known: total, {', '.join(sorted(components))}")


def load_base(model: str | None) -> BaseModel:
    """A private copy of the base model to put LoRA on. The cached original serves the held-out evaluation."""
    from drill.models.local import EMBEDDED_MODEL_ID, fresh_model, load_local

    name = model or EMBEDDED_MODEL_ID
    load_local(name)
    copy, tokenizer, model_id = fresh_model(name)
    return BaseModel(model=copy, tokenizer=tokenizer, model_id=model_id)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resume_or_start(config: GRPOConfig, out: Path, metrics: MetricsLog, model: Any, optimizer: torch.optim.Optimizer,
                    sampler: TaskSampler) -> int:
    """The last completed step: 0 for a fresh run, the checkpoint's step on --resume (state restored)."""
    if not config.resume:
        return 0
    checkpoint = latest_checkpoint(out)
    if checkpoint is None:
        raise ValueError(f"--resume: no checkpoint in {out / 'checkpoints'}")
    state = load_checkpoint(checkpoint, model, optimizer)
    saved, now = state.config, config.to_dict()
    changed = [name for name in RESUME_MUST_MATCH if saved.get(name) != now[name]]
    if changed:
        raise ValueError(f"--resume: {', '.join(changed)} differ from the checkpoint's run; "
                         "resume with the same values")
    sampler.load_state_dict(state.data_position)
    metrics.truncate_after(state.step)
    console.print(f"resuming from {checkpoint} (step {state.step})", highlight=False)
    return state.step


def episode_seed(seed: int, step: int, group: int) -> int:
    """The environment seed of one group: every episode of a group shares it, so only the model's samples differ."""
    digest = hashlib.sha256(f"{seed}:{step}:{group}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


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
            f"zero-var {record['zero_variance_groups']}/{record['groups']}  "
            f"len {record['completion_tokens_mean']:.0f}  "
            + (f"success {record['success']:.0%} ({record['stage']})  " if "success" in record else "")
            + f"{record['step_s']:.1f}s")
