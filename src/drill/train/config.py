"""The settings of `drill train`: `RunConfig`, what every training method shares, and `setting`, the one way a
setting is declared (by `RunConfig` and by each method's `Options` in `drill.train.methods`).

A setting is a dataclass field with its default, its help text and its group in `metadata`; the CLI
(`drill train ENV --group-size 8 ...`, `drill.train.cli`) and a config file (`--config run.toml` or `.json`)
are both derived from these fields, and an option given on the command line overrides the file.
"""

from __future__ import annotations

import json
import tomllib
import types
import typing
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from drill.models.prompt import PROMPT_FLAGS, tool_listing_problem

EnvOptionValue = str | int | float | bool


def parse_scalar(text: str) -> str | int | float | bool | None:
    """A value written on the command line (`-E k=1`, `--stage sft:epochs=2`): true/false, none/null, an int, a
    float, else the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def setting(group: str, default: Any, text: str) -> Any:
    """A documented setting: `text` is its help, `group` its heading in `drill train --help`."""
    metadata = {"help": text, "group": group}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def prompt_setting(name: str, group: str = "prompt") -> Any:
    """A setting every LLM command shares (`drill eval`, `watch`, `serve`, training): its default and help are
    `drill.models.prompt.PROMPT_FLAGS`'s, so they are declared once."""
    flag = next(f for f in PROMPT_FLAGS if f.name == name)
    return setting(group, flag.default, flag.help)


@dataclass(frozen=True)
class RunConfig:
    """What every training method needs: the environment, the model and LoRA shape, prompts and sampling, the
    optimizer, schedules, outputs and hardware. A method's own settings are its `Options`
    (`drill.train.methods`). `RunConfig.help(name)` gives a field's documentation."""

    # -- environment: what is trained, on what -----------------------------------------------------
    env: str = setting(
        "environment", "triage",
        "Environment to train on: a package under drill.envs (triage, chaosops, ...).")
    env_options: dict[str, EnvOptionValue] = setting(
        "environment", {},
        "Keyword options for the environment's load(), e.g. {mode: reader} for triage (the default there).")
    env_url: str | None = setting(
        "environment", None,
        "A served environment (drill serve ENV, same -E options) to play every episode on, rollouts and the held-out "
        "evaluation alike; the tasks and the rubric stay local. Empty plays them in this process.")
    roles: list[str] = setting(
        "environment", [],
        "Roles the model plays and is trained on; empty means every role. The others are scripted.")
    scripted_policy: str = setting(
        "environment", "oracle",
        "Policy for the roles the model does not play: a baseline name (oracle, heuristic, random).")
    role_rewards: dict[str, str] = setting(
        "environment", {},
        "Reward for each trained role's turns: 'total' (the team's weighted total, the default) or component names "
        "joined by '+', summing their weighted contributions, e.g. oversight=rogue_caught+rogue_false_positive.")
    # -- model: the base model and the LoRA adapter ------------------------------------------------
    model: str | None = setting(
        "model", None,
        "Base model: a local HF folder or hub id; empty means the embedded SmolLM2-135M-Instruct.")
    lora_rank: int = setting("model", 16, "LoRA rank r.")
    lora_alpha: int = setting("model", 32, "LoRA alpha; the update is scaled by alpha / r.")
    lora_target_modules: list[str] = setting(
        "model", ["q_proj", "k_proj", "v_proj", "o_proj"],
        "Linear layers that get LoRA adapters.")
    init_adapter: str | None = setting(
        "model", None,
        "Start from this saved LoRA adapter (a folder such as an earlier run's OUTPUT/adapter or "
        "OUTPUT/stage-1-sft/adapter) instead of a fresh one; with stages, the first stage starts from it. Its LoRA "
        "rank and target modules must be this run's.")
    # -- prompt: the settings every LLM command shares, declared once in drill.models.prompt (PROMPT_FLAGS); the
    # held-out evaluation prompts the trained and untrained model the same way ----------------------------------
    tool_listing: str = prompt_setting("tool_listing")
    prefill: str = prompt_setting("prefill")
    react: bool = prompt_setting("react")
    demos: int = prompt_setting("demos")
    max_history_turns: int = prompt_setting("max_history_turns")
    demo_selection: str = setting(
        "prompt", "first",
        "Which training tasks the demonstrations come from: first (the first N) or diverse (the first N whose oracle "
        "calls differ in their non-text arguments, e.g. confidence and escalation, so a small model that copies the "
        "examples still varies; see drill.train.exploration).")
    memory: str | None = setting(
        "prompt", None,
        "Show the trained policy the most similar successful training episodes of this trajectory store as worked "
        "examples, in rollouts and in the held-out rows.")
    memory_k: int = setting("prompt", 2, "Episodes retrieved per task with memory.")
    # -- sampling ----------------------------------------------------------------------------------
    tasks_per_step: int = setting(
        "sampling", 2,
        "Tasks rolled out per step; each gets a group of `group_size` episodes.")
    group_size: int = setting("sampling", 8, "Episodes per task (G). Advantages compare episodes within a group.")
    max_new_tokens: int = prompt_setting("max_new_tokens", "sampling")
    temperature: float = setting(
        "sampling", 1.0,
        "Sampling temperature of the rollouts (must be > 0: GRPO needs varied groups). Not the prompt setting of "
        "drill eval (greedy by default): the held-out evaluation here is greedy too.")
    max_turns: int = setting("sampling", 200, "Safety bound on turns per episode.")
    # -- optimization ------------------------------------------------------------------------------
    learning_rate: float = setting(
        "optimization", 5e-4,
        "AdamW learning rate for the LoRA weights. 1e-4..1e-3 suits LoRA on 0.1B-1B models; much smaller leaves the "
        "policy flat within a short run.")
    weight_decay: float = setting("optimization", 0.0, "AdamW weight decay.")
    max_grad_norm: float = setting("optimization", 1.0, "Gradient-norm clip before each update.")
    micro_batch_size: int = setting(
        "optimization", 8,
        "Samples per forward/backward pass; gradients accumulate across them.")
    micro_batch_tokens: int | None = setting(
        "optimization", None,
        "Size micro-batches by padded tokens (samples x longest prompt + completion) instead of by micro_batch_size; 0"
        " turns it off. Default: off on the CPU, and on CUDA what half the free memory holds of the full-vocabulary "
        "logits.")
    # -- schedule: tasks, rewards, stages, seed ----------------------------------------------------
    curriculum: str = setting(
        "schedule", "",
        "Task stages as NAME:STEPS,..., e.g. easy:200,medium:200,hard:200; NAME matches the task field "
        "`curriculum_field`. Steps past the last stage stay in it. NAME:STEPS@RATE ends a stage early once its last 3 "
        "steps average RATE success (half the oracle's total). Empty: all training tasks.")
    curriculum_field: str = setting("schedule", "tier", "The task attribute that curriculum stage names select on.")
    weight_schedules: list[str] = setting(
        "schedule", [],
        "Reward weights over the run: NAME=VALUE (constant) or NAME=START->END (linear over the run) or "
        "NAME=START->END@STEPS (linear over STEPS, then held). NAME is a rubric component (sets its weight) or a "
        "keyword of the environment's rubric(), e.g. rogue_multiplier=2.0->1.0.")
    shaping: list[str] = setting(
        "schedule", [],
        "Training-only shaping rewards added to the rubric (drill.train.shaping), e.g. tool_call_format; weight them "
        "with a schedule such as tool_call_format=0.5->0.0. Never part of the evaluation.")
    stages: list[str] = setting(
        "schedule", [],
        "Chained training stages, each METHOD:KEY=VALUE,... with METHOD sft, rft, dpo or grpo, each starting from the "
        "previous stage's adapter, e.g. sft:source=oracle,epochs=2 then grpo:steps=60. Empty: one GRPO run.")
    seed: int = setting("schedule", 0, "Seeds task order, episode seeds, sampling and LoRA initialisation.")
    # -- outputs -----------------------------------------------------------------------------------
    output_dir: Path = setting(
        "outputs", Path("runs/train"),
        "Where metrics.jsonl, the curve PNG, checkpoints and the adapter go.")
    checkpoint_every: int = setting("outputs", 10, "Write an atomic checkpoint every N steps (and at the end).")
    keep_checkpoints: int = setting("outputs", 2, "How many of the newest checkpoints to keep.")
    resume: bool = setting(
        "outputs", False,
        "Continue from the newest checkpoint in output_dir: step, optimizer, RNG, data position.")
    eval_tasks: int = setting(
        "outputs", 20,
        "Held-out tasks (of eval_split) in the closing evaluation of the trained policy, the untrained model and "
        "the baselines; 0 skips it.")
    eval_split: Literal["validation", "test"] = setting(
        "outputs", "validation",
        "The split of the closing evaluation (heldout.json). validation: where recipes, hyperparameters and "
        "checkpoints are chosen; test: only for the final table, played once (drill eval ENV --split test).")
    eval_baselines: list[str] = setting(
        "outputs", ["random", "heuristic", "oracle"],
        "Baselines in the closing evaluation.")
    eval_untrained: bool = setting(
        "outputs", True,
        "Play the untrained model in the closing evaluation (greedy, so the same in every run with these prompt "
        "settings; off for the other seeds of a multi-seed experiment, where it can be the slowest row).")
    # -- hardware ----------------------------------------------------------------------------------
    rollout_workers: int = setting(
        "hardware", 0,
        "Play each step's episodes on this many Ray rollout workers (pip install 'drill[ray]'), each with its own "
        "environments and a client of the generation server (needs generation_backend server); 0: in this process.")
    ray_address: str | None = setting(
        "hardware", None,
        "A Ray cluster for the rollout workers (e.g. auto or ray://head:10001); default a local Ray started for the "
        "run.")
    device: Literal["auto", "cpu", "cuda"] = setting("hardware", "auto", "auto: CUDA when present, else CPU.")
    bf16: bool | None = setting("hardware", None, "Train and generate in bfloat16; default: on with CUDA, off on CPU.")
    autocast: bool = setting(
        "hardware", False,
        "Mixed precision: the training forward passes (not generation) run under torch.autocast in bfloat16, while the"
        " weights, gradients and AdamW state stay float32. About 1.9x faster per step where PyTorch has fast bfloat16 "
        "kernels for the CPU (AMX; some AVX512-BF16 CPUs; benchmarks/sft_speed.py); refused on a CPU whose bfloat16 "
        "matmuls measure slower than float32 ones, and with --bf16.")
    generation_backend: Literal["transformers", "vllm", "server"] = setting(
        "hardware", "transformers",
        "Rollout generation: the training model itself; vLLM in this process (CUDA and the vllm extra); or a server at"
        " --generation-url that returns token ids. With vllm and server the adapter is saved and loaded into the "
        "engine each step.")
    generation_url: str | None = setting(
        "hardware", None,
        "With --generation-backend server: the OpenAI-compatible address (e.g. http://gpu-node:8000/v1) of a server "
        "that returns token ids and loads LoRA adapters at run time (vLLM >= 0.10.2 with "
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora); it must read OUTPUT/rollout_adapter.")

    def __post_init__(self) -> None:
        problems = []
        for name in ("tasks_per_step", "micro_batch_size", "lora_rank", "lora_alpha",
                     "max_new_tokens", "checkpoint_every", "keep_checkpoints", "max_turns"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_history_turns < 0:
            problems.append(f"max_history_turns must be >= 0, got {self.max_history_turns}")
        if self.group_size < 2:
            problems.append(f"group_size must be at least 2 (advantages compare episodes), got {self.group_size}")
        if not self.learning_rate > 0:
            problems.append(f"learning_rate must be > 0, got {self.learning_rate}")
        if not self.temperature > 0:
            problems.append(f"temperature must be > 0 for rollouts, got {self.temperature}")
        if self.rollout_workers < 0:
            problems.append(f"rollout_workers must be >= 0, got {self.rollout_workers}")
        if self.rollout_workers and self.generation_backend != "server":
            problems.append("rollout_workers needs generation_backend server: each worker is a client of the "
                            "generation server (the model being trained stays in this process)")
        if self.ray_address and not self.rollout_workers:
            problems.append("ray_address needs rollout_workers N (how many workers to start on the cluster)")
        if self.rollout_workers and self.memory is not None:
            problems.append("memory runs with in-process rollouts only (rollout_workers 0)")
        if self.memory_k < 0:
            problems.append(f"memory_k must be >= 0, got {self.memory_k}")
        if self.memory is not None and not Path(self.memory).is_file():
            problems.append(f"memory {self.memory}: no trajectory store there (fill one with drill eval --store)")
        listing = tool_listing_problem(self.tool_listing)
        if listing is not None:
            problems.append(listing)
        if self.demo_selection not in ("first", "diverse"):
            problems.append(f"demo_selection must be first or diverse, got {self.demo_selection!r}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 0:
            problems.append(f"micro_batch_tokens must be >= 0, got {self.micro_batch_tokens}")
        if self.demos < 0:
            problems.append(f"demos must be >= 0, got {self.demos}")
        if self.react and self.demos:
            problems.append("demos are written as Hermes tool calls, not in the ReAct form; with react give demos 0")
        if self.eval_tasks < 0:
            problems.append(f"eval_tasks must be >= 0, got {self.eval_tasks}")
        if self.eval_split not in ("validation", "test"):
            problems.append(f"eval_split must be validation or test, got {self.eval_split!r}")
        if not self.lora_target_modules:
            problems.append("lora_target_modules must name at least one module")
        if self.device not in ("auto", "cpu", "cuda"):
            problems.append(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.generation_backend not in ("transformers", "vllm", "server"):
            problems.append(f"generation_backend must be transformers, vllm or server, got {self.generation_backend!r}")
        if (self.generation_backend == "server") != bool(self.generation_url):
            problems.append("generation_backend server needs generation_url (the server's address), and "
                            "generation_url is only for generation_backend server")
        for role, reward in self.role_rewards.items():
            if not reward.strip() or any(not part.strip() for part in reward.split("+")):
                problems.append(f"role_rewards[{role!r}] must be 'total' or component names joined by '+'")
        if self.init_adapter is not None and not (Path(self.init_adapter) / "adapter_config.json").is_file():
            problems.append(f"init_adapter {self.init_adapter}: no saved adapter there (no adapter_config.json)")
        if problems:
            raise ValueError("invalid training config: " + "; ".join(problems))
        object.__setattr__(self, "output_dir", Path(self.output_dir))

    @staticmethod
    def help(name: str) -> str:
        return next(f.metadata["help"] for f in fields(RunConfig) if f.name == name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["output_dir"] = str(self.output_dir)
        return data

    def updated(self, **changes: Any) -> RunConfig:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)


def checked(cls: Any, data: dict[str, Any], source: str) -> Any:
    """`cls(**data)` for a settings dataclass, after checking each value's type against its field (as read from a
    file or a stage string); raises ValueError naming the key."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{source}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        expected = accepted_types(hints[name])
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in expected)
            raise ValueError(f"{source}: {name} must be {names}, got {value!r}")
    return cls(**data)


def accepted_types(hint: Any) -> tuple[type, ...]:
    """The value types a setting of type `hint` takes from a file: ints for floats, strings for paths and choices."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(t for arg in typing.get_args(hint) for t in accepted_types(arg))
    if typing.get_origin(hint) is Literal:
        return (str,)
    if hint is float:
        return (float, int)
    if hint is Path:
        return (str, Path)
    if hint is type(None):
        return (type(None),)
    return (typing.get_origin(hint) or hint,)


def read_settings(path: Path) -> dict[str, Any]:
    """The keys of a `.toml` or `.json` settings file: fields of `RunConfig` and of a method's `Options`."""
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{path}: the top level must be an object")
        return data
    raise ValueError(f"config file {path} must end in .toml or .json")
