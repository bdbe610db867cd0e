"""`drill train ENV`: GRPO with LoRA from the command line.

Every option is a field of `drill.train.config.GRPOConfig` and takes its help text from there. A
`--config FILE.toml|.json` supplies any fields; an option given on the command line overrides it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from drill.cli_options import unescape
from drill.console import fatal, usage_error
from drill.train.config import GRPOConfig

H = GRPOConfig.help


def _key_values(items: list[str], option: str, convert: bool) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            usage_error(f"{option} {item!r}: expected KEY=VALUE")
        parsed[key.strip()] = _scalar(value.strip()) if convert else value.strip()
    return parsed


def _scalar(text: str) -> str | int | float | bool:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def train(
    env: str = typer.Argument(..., help="Environment to train on: triage, chaosops, ..."),
    config_file: Path | None = typer.Option(None, "--config", help="A .toml or .json file of config fields; "
                                                                    "command-line options override it."),
    env_option: list[str] = typer.Option(
        [], "--env-option", "-E", help="KEY=VALUE for the env's load(), e.g. -E k=2 (repeatable). " + H("env_options")),
    env_url: str | None = typer.Option(None, "--env-url", help=H("env_url")),
    model: str | None = typer.Option(None, "--model", help=H("model")),
    role: list[str] = typer.Option([], "--role", help="A role the model plays (repeatable). " + H("roles")),
    scripted_policy: str | None = typer.Option(None, "--scripted-policy", help=H("scripted_policy")),
    role_reward: list[str] = typer.Option([], "--role-reward", help="ROLE=REWARD (repeatable). " + H("role_rewards")),
    steps: int | None = typer.Option(None, "--steps", help=H("steps")),
    tasks_per_step: int | None = typer.Option(None, "--tasks-per-step", help=H("tasks_per_step")),
    group_size: int | None = typer.Option(None, "--group-size", "-G", help=H("group_size")),
    loss_type: str | None = typer.Option(None, "--loss-type", help=H("loss_type")),
    advantage_scaling: str | None = typer.Option(None, "--advantage-scaling", help=H("advantage_scaling")),
    clip_epsilon: float | None = typer.Option(None, "--clip-epsilon", help=H("clip_epsilon")),
    kl_beta: float | None = typer.Option(None, "--kl-beta", help=H("kl_beta")),
    ppo_epochs: int | None = typer.Option(None, "--ppo-epochs", help=H("ppo_epochs")),
    learning_rate: float | None = typer.Option(None, "--learning-rate", "--lr", help=H("learning_rate")),
    weight_decay: float | None = typer.Option(None, "--weight-decay", help=H("weight_decay")),
    max_grad_norm: float | None = typer.Option(None, "--max-grad-norm", help=H("max_grad_norm")),
    micro_batch_size: int | None = typer.Option(None, "--micro-batch-size", help=H("micro_batch_size")),
    micro_batch_tokens: int | None = typer.Option(None, "--micro-batch-tokens", help=H("micro_batch_tokens")),
    lora_rank: int | None = typer.Option(None, "--lora-rank", help=H("lora_rank")),
    lora_alpha: int | None = typer.Option(None, "--lora-alpha", help=H("lora_alpha")),
    lora_targets: str | None = typer.Option(None, "--lora-targets",
                                            help="Comma-separated. " + H("lora_target_modules")),
    max_new_tokens: int | None = typer.Option(None, "--max-new-tokens", help=H("max_new_tokens")),
    temperature: float | None = typer.Option(None, "--temperature", help=H("temperature")),
    max_turns: int | None = typer.Option(None, "--max-turns", help=H("max_turns")),
    tool_listing: str | None = typer.Option(None, "--tool-listing", help=H("tool_listing")),
    prefill: str | None = typer.Option(None, "--prefill", help=H("prefill") + " On the command line \\n and \\t "
                                                                              "are read as newline and tab."),
    react: bool = typer.Option(False, "--react", help=H("react")),
    demos: int | None = typer.Option(None, "--demos", help=H("demos")),
    demo_selection: str | None = typer.Option(None, "--demo-selection", help=H("demo_selection")),
    curriculum: str | None = typer.Option(None, "--curriculum", help=H("curriculum")),
    curriculum_field: str | None = typer.Option(None, "--curriculum-field", help=H("curriculum_field")),
    weight: list[str] = typer.Option([], "--weight", help="A weight schedule (repeatable). " + H("weight_schedules")),
    shaping: list[str] = typer.Option([], "--shaping", help="Repeatable. " + H("shaping")),
    seed: int | None = typer.Option(None, "--seed", help=H("seed")),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", help=H("output_dir")),
    checkpoint_every: int | None = typer.Option(None, "--checkpoint-every", help=H("checkpoint_every")),
    keep_checkpoints: int | None = typer.Option(None, "--keep-checkpoints", help=H("keep_checkpoints")),
    resume: bool = typer.Option(False, "--resume", help=H("resume")),
    kl_abort: float | None = typer.Option(None, "--kl-abort", help=H("kl_abort") + " 0 means never."),
    audit_every: int | None = typer.Option(None, "--audit-every", help=H("audit_every")),
    audit_stop: bool = typer.Option(False, "--audit-stop", help=H("audit_stop")),
    eval_tasks: int | None = typer.Option(None, "--eval-tasks", help=H("eval_tasks")),
    eval_baseline: list[str] = typer.Option([], "--eval-baseline", help="Repeatable. " + H("eval_baselines")),
    device: str | None = typer.Option(None, "--device", help=H("device")),
    bf16: bool | None = typer.Option(None, "--bf16/--no-bf16", help=H("bf16")),
    autocast: bool = typer.Option(False, "--autocast", help=H("autocast")),
    generation_backend: str | None = typer.Option(None, "--generation-backend", help=H("generation_backend")),
    generation_url: str | None = typer.Option(None, "--generation-url", help=H("generation_url")),
    rollout_workers: int | None = typer.Option(None, "--rollout-workers", help=H("rollout_workers")),
    ray_address: str | None = typer.Option(None, "--ray-address", help=H("ray_address")),
    store: str | None = typer.Option(None, "--store", help=H("store")),
    memory: str | None = typer.Option(None, "--memory", help=H("memory")),
    memory_k: int | None = typer.Option(None, "--memory-k", help=H("memory_k")),
    init_adapter: str | None = typer.Option(None, "--init-adapter", help=H("init_adapter")),
    stage: list[str] = typer.Option([], "--stage", help="A training stage (repeatable, run in order). " + H("stages")),
) -> None:
    """Train a LoRA adapter with GRPO on ENV; writes metrics.jsonl, learning_curve.png, checkpoints, the adapter
    and a held-out evaluation table under --output-dir."""
    given: dict[str, Any] = {
        "env": env, "env_url": env_url, "model": model, "scripted_policy": scripted_policy, "steps": steps,
        "tasks_per_step": tasks_per_step,
        "group_size": group_size, "loss_type": loss_type, "advantage_scaling": advantage_scaling,
        "clip_epsilon": clip_epsilon, "kl_beta": kl_beta, "ppo_epochs": ppo_epochs, "learning_rate": learning_rate,
        "weight_decay": weight_decay, "max_grad_norm": max_grad_norm, "micro_batch_size": micro_batch_size,
        "micro_batch_tokens": micro_batch_tokens,
        "lora_rank": lora_rank, "lora_alpha": lora_alpha, "max_new_tokens": max_new_tokens,
        "temperature": temperature, "max_turns": max_turns, "tool_listing": tool_listing,
        "prefill": None if prefill is None else unescape(prefill), "react": react or None, "demos": demos,
        "demo_selection": demo_selection, "curriculum": curriculum,
        "curriculum_field": curriculum_field, "seed": seed, "output_dir": output_dir,
        "checkpoint_every": checkpoint_every, "keep_checkpoints": keep_checkpoints, "eval_tasks": eval_tasks,
        "device": device, "bf16": bf16, "autocast": autocast or None, "generation_backend": generation_backend,
        "generation_url": generation_url, "audit_every": audit_every, "store": store, "memory": memory,
        "memory_k": memory_k, "rollout_workers": rollout_workers, "ray_address": ray_address,
        "audit_stop": audit_stop or None, "init_adapter": init_adapter,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if env_option:
        given["env_options"] = _key_values(env_option, "--env-option", convert=True)
    if role:
        given["roles"] = list(role)
    if role_reward:
        given["role_rewards"] = _key_values(role_reward, "--role-reward", convert=False)
    if lora_targets is not None:
        given["lora_target_modules"] = [t.strip() for t in lora_targets.split(",") if t.strip()]
    if weight:
        given["weight_schedules"] = list(weight)
    if shaping:
        given["shaping"] = list(shaping)
    if eval_baseline:
        given["eval_baselines"] = list(eval_baseline)
    if resume:
        given["resume"] = True
    if kl_abort is not None:
        given["kl_abort"] = None if kl_abort == 0 else kl_abort
    if stage:
        given["stages"] = list(stage)

    from drill.models.base import ModelLoadError
    from drill.train.grpo import TrainingStopped, plan_run
    from drill.train.grpo import train as run_training

    try:
        base = GRPOConfig.from_file(config_file) if config_file is not None else GRPOConfig()
        config = base.updated(**given)
        if config.stages:  # chained stages (drill.train.stages): checked here, run, then done
            from drill.train.stages import plan_stages, run_stages

            plan_stages(config)
    except ValueError as exc:
        usage_error(" ".join(str(exc).split()))
    except OSError as exc:  # --env-url: nothing answers there
        fatal(str(exc))
    if config.stages:
        try:
            run_stages(config)
        except (TrainingStopped, FloatingPointError) as exc:
            fatal(f"{exc} (resume with --resume after changing the settings)")
        except ModelLoadError as exc:  # a --model or lora: path that does not load: one line, not a traceback
            usage_error(" ".join(str(exc).split()))
        return
    try:
        plan = plan_run(config)
    except ValueError as exc:
        usage_error(" ".join(str(exc).split()))
    except OSError as exc:  # --env-url: nothing answers there
        fatal(str(exc))
    try:
        result = run_training(config, target=plan.target)
    except ModelLoadError as exc:
        usage_error(" ".join(str(exc).split()))
    except TrainingStopped as exc:
        fatal(f"{exc} (metrics so far: {config.output_dir / 'metrics.jsonl'}; resume from the last checkpoint "
              "with --resume after changing the settings)")
    from drill.console import console

    console.print(f"adapter: {result.adapter_dir}  (evaluate with: {eval_command(config, result.adapter_dir)})",
                  highlight=False, soft_wrap=True)
    if config.demos and config.demo_selection != "first":
        console.print("note: drill eval --demos shows the first N training tasks' demonstrations, not the "
                      f"{config.demo_selection} ones this run used; heldout.json was prompted as in training",
                      highlight=False)
    console.print(f"metrics: {result.output_dir / 'metrics.jsonl'}  curve: {result.output_dir / 'learning_curve.png'}",
                  highlight=False)


def eval_command(config: GRPOConfig, adapter_dir: Path) -> str:
    """The `drill eval` command that evaluates the trained adapter on the same environment options and prompts it
    as training did."""
    import shlex

    parts = ["drill", "eval", config.env, "--policy", f"lora:{adapter_dir}"]
    for key, value in config.env_options.items():
        parts += ["-E", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    if config.env_url:
        parts += ["--env-url", config.env_url]
    if config.model:
        parts += ["--model", config.model]
    parts += ["--max-new-tokens", str(config.max_new_tokens)]
    if config.tool_listing != "schema":
        parts += ["--tool-listing", config.tool_listing]
    if config.prefill:
        parts += ["--prefill", config.prefill.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")]
    if config.react:
        parts.append("--react")
    if config.demos:
        parts += ["--demos", str(config.demos)]
    return shlex.join(parts)
