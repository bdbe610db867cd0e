"""The one configuration of `drill train`: a dataclass whose fields are documented once.

The CLI (`drill train ENV --group-size 8 ...`) and a config file (`--config run.toml` or `.json`)
both fill a `GRPOConfig`; an option given on the command line overrides the file. Each field's help
text lives in its `metadata["help"]`, and the CLI reads it from there.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

LossType = Literal["grpo", "dr_grpo"]
AdvantageScaling = Literal["group", "none"]
EnvOptionValue = str | int | float | bool


def _help(default: Any, text: str) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": text})
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class GRPOConfig:
    """Everything one GRPO run needs. `GRPOConfig.help(name)` gives a field's documentation."""

    # -- what is trained, on what -----------------------------------------------------------------
    env: str = _help("triage", "Environment to train on: a package under drill.envs (triage, chaosops, ...).")
    env_options: dict[str, EnvOptionValue] = _help(
        {}, "Keyword options for the environment's load(), e.g. {mode: reader} for triage (the default there).")
    env_url: str | None = _help(
        None, "A served environment (drill serve ENV, same -E options) to play every episode on, rollouts and the "
              "held-out evaluation alike; the tasks and the rubric stay local. Empty plays them in this process.")
    model: str | None = _help(
        None, "Base model: a local HF folder or hub id; empty means the embedded SmolLM2-135M-Instruct.")
    roles: list[str] = _help(
        [], "Roles the model plays and is trained on; empty means every role. The others are scripted.")
    scripted_policy: str = _help(
        "oracle", "Policy for the roles the model does not play: a baseline name (oracle, heuristic, random).")
    role_rewards: dict[str, str] = _help(
        {}, "Reward for each trained role's turns: 'total' (the team's weighted total, the default) or "
            "component names joined by '+', summing their weighted contributions, e.g. "
            "oversight=rogue_caught+rogue_false_positive.")
    # -- GRPO -------------------------------------------------------------------------------------
    steps: int = _help(30, "Optimizer steps (one rollout batch each).")
    tasks_per_step: int = _help(2, "Tasks rolled out per step; each gets a group of `group_size` episodes.")
    group_size: int = _help(8, "Episodes per task (G). Advantages compare episodes within a group.")
    loss_type: LossType = _help(
        "grpo", "grpo: mean over each sample's tokens, then over samples (GRPO paper). dr_grpo: sum over "
                "tokens divided by samples x max_new_tokens, a constant (Dr. GRPO), with no length bias.")
    advantage_scaling: AdvantageScaling = _help(
        "group", "group: (r - mean) / (std + 1e-4) within the group (GRPO). none: r - mean only (Dr. GRPO).")
    clip_epsilon: float = _help(0.2, "PPO clip range: the ratio is clipped to [1 - eps, 1 + eps].")
    kl_beta: float = _help(
        0.04, "Weight of the k3 KL penalty to the reference (the base weights with the adapter disabled); "
              "0 turns the penalty off and skips the reference pass except on each step's first micro-batch, "
              "where the logged KL is measured (a sample).")
    ppo_epochs: int = _help(
        1, "Optimizer updates per rollout batch. With 1 the ratio is exactly 1 and clipping never binds; "
           "with more, later updates are clipped against the first update's log-probabilities.")
    learning_rate: float = _help(
        5e-4, "AdamW learning rate for the LoRA weights. 1e-4..1e-3 suits LoRA on 0.1B-1B models; "
              "much smaller leaves the policy flat within a short run.")
    weight_decay: float = _help(0.0, "AdamW weight decay.")
    max_grad_norm: float = _help(1.0, "Gradient-norm clip before each update.")
    micro_batch_size: int = _help(8, "Samples per forward/backward pass; gradients accumulate across them.")
    micro_batch_tokens: int | None = _help(
        None, "Size micro-batches by padded tokens (samples x longest prompt + completion) instead of by "
              "micro_batch_size; 0 turns it off. Default: off on the CPU, and on CUDA what half the free memory "
              "holds of the full-vocabulary logits.")
    # -- LoRA -------------------------------------------------------------------------------------
    lora_rank: int = _help(16, "LoRA rank r.")
    lora_alpha: int = _help(32, "LoRA alpha; the update is scaled by alpha / r.")
    lora_target_modules: list[str] = _help(
        ["q_proj", "k_proj", "v_proj", "o_proj"], "Linear layers that get LoRA adapters.")
    # -- sampling ---------------------------------------------------------------------------------
    max_new_tokens: int = _help(128, "Tokens the model may generate per turn.")
    temperature: float = _help(1.0, "Sampling temperature during rollouts (must be > 0: GRPO needs varied groups).")
    max_turns: int = _help(200, "Safety bound on turns per episode.")
    # -- prompt (the held-out evaluation prompts the trained and untrained model the same way) ------
    tool_listing: str = _help(
        "schema", "How tools are listed in the system prompt: schema (JSON Schema per tool) or compact (one "
                  "signature line per tool, far fewer tokens; better for 0.1B-1B models).")
    prefill: str = _help(
        "", "Text every reply starts with; the model continues it. Its tokens are prompt, never trained on. E.g. "
            "'<tool_call>\\n{\"name\": \"submit_resolution\", \"arguments\": {\"resolution\": \"' for the "
            "triage reader. Empty: none.")
    react: bool = _help(
        False, "ReAct prompting: every reply is 'Thought: ...' then 'Action: {...}' instead of a Hermes tool call. "
               "SFT then trains on the source's thoughts too (its actions must carry them, see drill.train.sft).")
    demos: int = _help(
        0, "Worked examples in every prompt: the oracle's first turn on the first N training tasks (never "
           "held-out ones). 0: none.")
    demo_selection: str = _help(
        "first", "Which training tasks the demonstrations come from: first (the first N) or diverse (the first N "
                 "whose oracle calls differ in their non-text arguments, e.g. confidence and escalation, so a small "
                 "model that copies the examples still varies; see drill.train.exploration).")
    # -- schedules --------------------------------------------------------------------------------
    curriculum: str = _help(
        "", "Task stages as NAME:STEPS,..., e.g. easy:200,medium:200,hard:200; NAME matches the task field "
            "`curriculum_field`. Steps past the last stage stay in it. NAME:STEPS@RATE ends a stage early once "
            "its last 3 steps average RATE success (half the oracle's total). Empty: all training tasks.")
    curriculum_field: str = _help("tier", "The task attribute that curriculum stage names select on.")
    weight_schedules: list[str] = _help(
        [], "Reward weights over the run: NAME=VALUE (constant) or NAME=START->END (linear over the run) or "
            "NAME=START->END@STEPS (linear over STEPS, then held). NAME is a rubric component (sets its weight) "
            "or a keyword of the environment's rubric(), e.g. rogue_multiplier=2.0->1.0.")
    shaping: list[str] = _help(
        [], "Training-only shaping rewards added to the rubric (drill.train.shaping), e.g. tool_call_format; "
            "weight them with a schedule such as tool_call_format=0.5->0.0. Never part of the evaluation.")
    # -- stages (drill.train.stages) ---------------------------------------------------------------
    stages: list[str] = _help(
        [], "Chained training stages, each METHOD:KEY=VALUE,... with METHOD sft, rft, dpo or grpo, each starting "
            "from the previous stage's adapter, e.g. sft:source=oracle,epochs=2 then grpo:steps=60. Empty: one "
            "GRPO run.")
    init_adapter: str | None = _help(
        None, "Start from this saved LoRA adapter (a folder such as an earlier run's OUTPUT/adapter or "
              "OUTPUT/stage-1-sft/adapter) instead of a fresh one; with stages, the first stage starts from it. "
              "Its LoRA rank and target modules must be this run's.")
    # -- robustness and outputs -------------------------------------------------------------------
    seed: int = _help(0, "Seeds task order, episode seeds, sampling and LoRA initialisation.")
    output_dir: Path = _help(Path("runs/train"), "Where metrics.jsonl, the curve PNG, checkpoints and the adapter go.")
    checkpoint_every: int = _help(10, "Write an atomic checkpoint every N steps (and at the end).")
    keep_checkpoints: int = _help(2, "How many of the newest checkpoints to keep.")
    resume: bool = _help(
        False, "Continue from the newest checkpoint in output_dir: step, optimizer, RNG, data position.")
    kl_abort: float | None = _help(
        2.0, "Stop the run when the mean KL to the reference exceeds this (None: never).")
    audit_every: int = _help(
        0, "Run the reward-hacking detectors (drill.audit.detectors) every N steps and print what they find; 0: never.")
    audit_stop: bool = _help(False, "Stop the run when the detectors find something (with audit_every).")
    rollout_workers: int = _help(
        0, "Play each step's episodes on this many Ray rollout workers (pip install 'drill[ray]'), each with its own "
           "environments and a client of the generation server (needs generation_backend server); 0: in this "
           "process.")
    ray_address: str | None = _help(None, "A Ray cluster for the rollout workers (e.g. auto or ray://head:10001); "
                                          "default a local Ray started for the run.")
    # -- memory (drill.memory) --------------------------------------------------------------------
    store: str | None = _help(None, "Write every rollout episode to this trajectory store (SQLite; created if "
                                    "missing), method grpo@STEP, success judged against the oracle as drill eval does.")
    memory: str | None = _help(None, "Show the trained policy the most similar successful training episodes of this "
                                     "trajectory store as worked examples, in rollouts and in the held-out rows.")
    memory_k: int = _help(2, "Episodes retrieved per task with memory.")
    eval_tasks: int = _help(
        20, "Held-out (test split) tasks in the closing evaluation of the trained policy, the untrained model "
            "and the baselines; 0 skips it.")
    eval_baselines: list[str] = _help(["random", "heuristic", "oracle"], "Baselines in the closing evaluation.")
    # -- hardware ---------------------------------------------------------------------------------
    device: Literal["auto", "cpu", "cuda"] = _help("auto", "auto: CUDA when present, else CPU.")
    bf16: bool | None = _help(None, "Train and generate in bfloat16; default: on with CUDA, off on CPU.")
    autocast: bool = _help(False, "Mixed precision: the training forward passes (not generation) run "
                                  "under torch.autocast in bfloat16, while the weights, gradients and AdamW state "
                                  "stay float32. About 1.9x faster per step on a CPU with AMX/AVX512-BF16 "
                                  "(benchmarks/sft_speed.py); refused on a CPU whose bfloat16 matmuls are slower "
                                  "than float32 ones, and with --bf16.")
    generation_backend: Literal["transformers", "vllm", "server"] = _help(
        "transformers", "Rollout generation: the training model itself; vLLM in this process (CUDA and the vllm "
                        "extra); or a server at --generation-url that returns token ids. With vllm and server the "
                        "adapter is saved and loaded into the engine each step.")
    generation_url: str | None = _help(
        None, "With --generation-backend server: the OpenAI-compatible address (e.g. http://gpu-node:8000/v1) of a "
              "server that returns token ids and loads LoRA adapters at run time (vLLM >= 0.10.2 with "
              "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora); it must read OUTPUT/rollout_adapter.")

    def __post_init__(self) -> None:
        problems = []
        for name in ("steps", "tasks_per_step", "ppo_epochs", "micro_batch_size", "lora_rank", "lora_alpha",
                     "max_new_tokens", "checkpoint_every", "keep_checkpoints", "max_turns"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.group_size < 2:
            problems.append(f"group_size must be at least 2 (advantages compare episodes), got {self.group_size}")
        if self.loss_type not in ("grpo", "dr_grpo"):
            problems.append(f"loss_type must be grpo or dr_grpo, got {self.loss_type!r}")
        if self.advantage_scaling not in ("group", "none"):
            problems.append(f"advantage_scaling must be group or none, got {self.advantage_scaling!r}")
        if not 0 < self.clip_epsilon < 1:
            problems.append(f"clip_epsilon must be in (0, 1), got {self.clip_epsilon}")
        if self.kl_beta < 0:
            problems.append(f"kl_beta must be >= 0, got {self.kl_beta}")
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
        if self.audit_every < 0:
            problems.append(f"audit_every must be >= 0, got {self.audit_every}")
        if self.kl_abort is not None and not self.kl_abort > 0:
            problems.append(f"kl_abort must be > 0 or None, got {self.kl_abort}")
        if self.tool_listing not in ("schema", "compact"):
            problems.append(f"tool_listing must be schema or compact, got {self.tool_listing!r}")
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
        return next(f.metadata["help"] for f in fields(GRPOConfig) if f.name == name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["output_dir"] = str(self.output_dir)
        return data

    def updated(self, **changes: Any) -> GRPOConfig:
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> GRPOConfig:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{source}: unknown option(s) {', '.join(unknown)}; known: {', '.join(known)}")
        for name, value in data.items():
            expected = _FILE_TYPES[name]
            if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
                names = " or ".join("null" if t is type(None) else t.__name__ for t in expected)
                raise ValueError(f"{source}: {name} must be {names}, got {value!r}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: Path) -> GRPOConfig:
        """Read a `.toml` or `.json` file whose keys are field names."""
        if not path.is_file():
            raise ValueError(f"config file {path} does not exist")
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{path}: not valid TOML: {exc}") from exc
        elif path.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: not valid JSON: {exc}") from exc
            if not isinstance(data, dict):
                raise ValueError(f"{path}: the top level must be an object")
        else:
            raise ValueError(f"config file {path} must end in .toml or .json")
        return cls.from_dict(data, source=str(path))


def _file_type(default: Any, name: str) -> tuple[type, ...]:
    optional = {"model": (str, type(None)), "init_adapter": (str, type(None)), "kl_abort": (float, int, type(None)),
                "bf16": (bool, type(None))}
    if name in optional:
        return optional[name]
    if isinstance(default, bool):
        return (bool,)
    if isinstance(default, float):
        return (float, int)
    if isinstance(default, Path):
        return (str,)
    return (type(default),)


_FILE_TYPES: dict[str, tuple[type, ...]] = {
    f.name: _file_type(f.default if f.default is not MISSING else f.default_factory(), f.name)  # type: ignore[misc]
    for f in fields(GRPOConfig)
}
