"""One training run, whatever the method: `Run` opens it, plays groups of episodes, checkpoints, and finishes it.

Every method in `drill.train.methods` is a loop between `Run.open` and `Run.finish`:

    run = Run.open(config, "sft", options)      # plan, base model + LoRA, optimizer, metrics, prompt options
    start = run.resume()                        # 0, or the newest checkpoint's step with its state restored
    for step in range(start + 1, last + 1):
        groups = run.play_groups(run.group_jobs(step, tasks), run.policies(step), rubric)   # G episodes per task
        ...                                     # the method's own update
        run.metrics.append(record); run.checkpoint(step, last, data_position)
    return run.finish(last, "SFT on ...")       # adapter, learning curve, held-out table -> TrainResult

`plan_run` checks a config against its environment before any model is loaded; `load_base`, `seed_everything`,
`episode_seed`, `TrainingStopped` and `TrainResult` are shared by every method, the stages and `drill.audit`.

An interrupted run (Ctrl-C) is never stranded: with a checkpoint, `--resume` continues from it; before the first
one, the folder is marked interrupted (`interrupted.json`) and the next run there, with or without `--resume`,
starts it over.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drill.console import console
from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.types import Episode, Task
from drill.evaluate.report import atomic_write_text
from drill.models.adapters import AdapterSettings, write_adapter_settings
from drill.models.prompt import PROMPT_FLAGS
from drill.train.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint, save_checkpoint
from drill.train.config import RunConfig
from drill.train.metrics import MetricsLog, plot_learning_curve
from drill.train.progress import Heartbeat
from drill.train.schedules import Curriculum, TaskSampler, WeightSchedule, parse_schedules
from drill.train.shaping import with_shaping
from drill.train.target import TrainTarget, load_target

RESUME_MUST_MATCH = ("env", "env_options", "model", "roles", "seed", "tasks_per_step", "curriculum",
                     "curriculum_field", "lora_rank", "lora_alpha", "lora_target_modules")
"""Config fields a resumed run must share with its checkpoint when it draws tasks from a `TaskSampler` (the data
order and the adapter's shape)."""

Job = tuple[Task, int]
"""One episode to play: a task and its environment seed."""

INTERRUPTED = "interrupted.json"
"""Marks an output folder whose run was interrupted before its first checkpoint: the next run there takes it over."""


class TrainingStopped(RuntimeError):
    """The run stopped on a guard: a non-finite loss or gradient, the KL abort threshold, or the audit."""

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


@dataclass(frozen=True)
class RunPlan:
    """A config checked against its environment, before any model is loaded."""

    target: TrainTarget
    roles: list[str]
    schedules: list[WeightSchedule]
    curriculum: Curriculum
    pools: dict[str, list[Task]]


class Run:
    """An open training run: the checked plan, the model with its LoRA adapter and optimizer, the metrics log and
    the prompt options rollouts and the held-out evaluation share. Made by `Run.open`; a method's `train(run,
    options)` drives it."""

    def __init__(self, config: RunConfig, plan: RunPlan, base: BaseModel, init_adapter: Path | None,
                 restarted: bool = False) -> None:
        from drill.train.lora import Reference, lora_training, run_device, starting_adapter
        from drill.train.rollouts import prompt_options

        self.config = config
        self.plan = plan
        self.base = base
        self.device, _ = run_device(config)
        seed_everything(config.seed)
        self.model, self.params, self.optimizer, self.pad_id = lora_training(base, config, init_adapter)
        self.reference = Reference(self.model, self.params, starting_adapter(config, init_adapter))
        """`with run.reference():` the policy this run started from, for KL and DPO reference passes (a resume does
        not move it: it is taken before `resume` loads a checkpoint)."""
        self.out = config.output_dir
        self.metrics = MetricsLog(self.out / "metrics.jsonl")
        self.prompting = prompt_options(config, plan.target)  # demonstrations are played once, for every use
        self.restarted = restarted
        """The folder held a run interrupted before its first checkpoint, and this one starts it over."""
        self.heartbeat = Heartbeat(lambda text: console.print(text, highlight=False, markup=False))
        """Prints what a long step is doing every half minute (`drill.train.progress`); stopped by `methods.train`."""
        self._policies: Callable[[int], dict[str, Policy]] | None = None

    @classmethod
    def open(cls, config: RunConfig, method: str, options: Any, target: TrainTarget | None = None,
             base: BaseModel | None = None, init_adapter: Path | None = None) -> Run:
        """Check the config, load the base model (unless given), put a fresh LoRA adapter on it (or
        `init_adapter`'s, a previous stage's, else `config.init_adapter`'s) and record the settings in
        OUTPUT/config.json."""
        plan = plan_run(config, target)
        restarted = take_over_interrupted(config.output_dir)
        run = cls(config, plan, base or load_base(config.model), init_adapter, restarted)
        settings = config.to_dict() | {method: asdict(options)}
        atomic_write_text(run.out / "config.json", json.dumps(settings, indent=1))
        return run

    @property
    def target(self) -> TrainTarget:
        return self.plan.target

    @property
    def roles(self) -> list[str]:
        return self.plan.roles

    def resume(self, sampler: TaskSampler | None = None) -> int:
        """The last completed step: 0 for a fresh run; on `config.resume` the newest checkpoint's, with adapter,
        optimizer and RNG restored. A `sampler`'s data position is restored too, and then the settings that
        decide the data order must be the checkpoint's."""
        if not self.config.resume or self.restarted:
            return 0
        checkpoint = latest_checkpoint(self.out)
        if checkpoint is None:
            raise ValueError(f"--resume: no checkpoint in {self.out / 'checkpoints'}")
        state = load_checkpoint(checkpoint, self.model, self.optimizer)
        if sampler is not None:
            saved, now = state.config, self.config.to_dict()
            changed = [name for name in RESUME_MUST_MATCH if saved.get(name) != now[name]]
            if changed:
                hint = (f" (a later stage of a method an earlier stage used draws with its own seed, "
                        "`drill.train.stages.fresh_draws`; a stage checkpointed before that rule resumes with "
                        f"`seed={saved.get('seed')}` in its --stage)" if "seed" in changed else "")
                raise ValueError(f"--resume: {', '.join(changed)} differ from the checkpoint's run; "
                                 f"resume with the same values{hint}")
            sampler.load_state_dict(state.data_position)
        self.metrics.truncate_after(state.step)
        console.print(f"resuming from {checkpoint} (step {state.step})", highlight=False)
        return state.step

    def interrupted(self) -> None:
        """After Ctrl-C: say how the run continues, and mark the folder when there is no checkpoint to resume."""
        checkpoint = latest_checkpoint(self.out)
        if checkpoint is not None:
            console.print(f"interrupted: {self.out} keeps {checkpoint.name}; --resume continues from it",
                          highlight=False)
            return
        atomic_write_text(self.out / INTERRUPTED, json.dumps({"interrupted": "before the first checkpoint"}))
        console.print(f"interrupted before the first checkpoint: {self.out} is marked so; a run there (with or "
                      "without --resume) starts it over", highlight=False)

    def policies(self, step: int) -> dict[str, Policy]:
        """Role -> policy for `step`: the trained roles share the adapter as it is now (bound to the generation
        engine), the other roles are scripted."""
        if self._policies is None:
            from drill.train.rollouts import rollout_policies

            self._policies = rollout_policies(self.config, self.model, self.base, self.target, self.roles, self.out,
                                              self.prompting)
        return self._policies(step)

    def group_jobs(self, step: int, tasks: Sequence[Task]) -> list[Job]:
        """One job per group: each task with its group's environment seed for this step."""
        return [(task, episode_seed(self.config.seed, step, k)) for k, task in enumerate(tasks)]

    def play_groups(self, groups: Sequence[Job], policies: dict[str, Policy], rubric: Any, pool: Any = None,
                    step: int = 0) -> list[list[Episode]]:
        """`group_size` scored episodes of each job, every episode of a group on the same task and seed, so only
        the model's samples differ. `pool` (a `RayPool`) plays them on rollout workers, in job order, with the
        policies of `step`."""
        size = self.config.group_size
        jobs = [job for job in groups for _ in range(size)]
        label = f"step {step}: " if step else ""
        self.heartbeat.phase(f"{label}playing {len(jobs)} episodes", total=0 if pool is not None else len(jobs))
        if pool is not None:  # one chunk of the jobs per worker
            episodes = pool.play(str(step), jobs, rubric, -(-len(jobs) // self.config.rollout_workers))
        else:
            episodes = run_episodes(self.target.make_env, jobs, policies, rubric, self.config.max_turns,
                                    on_episode_done=lambda _: self.heartbeat.done())
        self.heartbeat.phase(f"{label}updating the adapter on {len(episodes)} episodes")
        return [episodes[k * size:(k + 1) * size] for k in range(len(groups))]

    def checkpoint(self, step: int, last: int, data_position: dict[str, Any]) -> None:
        """An atomic checkpoint every `checkpoint_every` steps and at the `last` one."""
        if step % self.config.checkpoint_every == 0 or step == last:
            save_checkpoint(self.out, step, self.model, self.optimizer, data_position, self.config.to_dict(),
                            self.config.keep_checkpoints)

    def finish(self, steps: int, title: str, curve: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
               ) -> TrainResult:
        """Save the adapter, draw the learning curve (`curve` maps each metrics line to what it plots as the
        reward), and play the held-out evaluation unless `eval_tasks` is 0."""
        from drill.models.adapters import save_adapter
        from drill.train.heldout import evaluate_heldout

        self.heartbeat.phase(None)
        adapter_dir = self.out / "adapter"
        save_adapter(self.model, adapter_dir, base_model_id=self.base.model_id)
        write_adapter_settings(adapter_dir, adapter_settings(self.config, self.base.model_id))
        records = self.metrics.read()
        plot_learning_curve([curve(r) for r in records] if curve else records, self.out / "learning_curve.png",
                            title)
        evaluation = (evaluate_heldout(self.config, self.target, self.roles, adapter_dir, self.base.model_id,
                                       self.out, self.prompting) if self.config.eval_tasks else [])
        return TrainResult(output_dir=self.out, adapter_dir=adapter_dir, steps=steps, metrics=records,
                           evaluation=evaluation)


def adapter_settings(config: RunConfig, model_id: str) -> AdapterSettings:
    """What `--policy lora:ADAPTER` needs to prompt the adapter as this run did (`drill.models.adapters`)."""
    prompt = {f.name: getattr(config, f.name) for f in PROMPT_FLAGS if f.name != "temperature"}
    return AdapterSettings(base_model=model_id, env=config.env, env_options=dict(config.env_options), prompt=prompt,
                           demo_selection=config.demo_selection)


def plan_run(config: RunConfig, target: TrainTarget | None = None) -> RunPlan:
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
    interrupted = (out / INTERRUPTED).is_file() and latest_checkpoint(out) is None
    if not config.resume and not interrupted and ((out / "metrics.jsonl").exists() or list_checkpoints(out)):
        raise ValueError(f"{out} already holds a training run; pass --resume to continue it, "
                         "or choose another --output-dir")
    if config.resume and not interrupted and latest_checkpoint(out) is None:
        raise ValueError(f"--resume: no checkpoint in {out / 'checkpoints'}")
    return RunPlan(target=target, roles=roles, schedules=schedules, curriculum=curriculum, pools=pools)


def check_options(config: RunConfig, target: TrainTarget, roles: list[str]) -> None:
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


def take_over_interrupted(out: Path) -> bool:
    """Whether `out` held a run interrupted before its first checkpoint; its metrics and mark are then removed, so
    the new run starts from step 1 with a clean log."""
    if not (out / INTERRUPTED).is_file() or latest_checkpoint(out) is not None:
        return False
    (out / "metrics.jsonl").unlink(missing_ok=True)
    (out / INTERRUPTED).unlink()
    console.print(f"{out}: the run there was interrupted before its first checkpoint; starting it over",
                  highlight=False)
    return True


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


def episode_seed(seed: int, step: int, group: int) -> int:
    """The environment seed of one group: every episode of a group shares it, so only the model's samples differ."""
    digest = hashlib.sha256(f"{seed}:{step}:{group}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1
