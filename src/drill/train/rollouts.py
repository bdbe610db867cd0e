"""The rollout policies of a training step: the model being trained for its roles, scripted ones for the rest.

Generation backends:

* `transformers` (default): the training model itself (the PEFT-wrapped base) generates, through
  `drill.models.local.TransformersChatModel`, one batched left-padded `generate` per turn.
* `vllm` (CUDA and `pip install 'drill[vllm]'`): an in-process vLLM engine with LoRA enabled. Each step
  the current adapter is saved to `OUTPUT/rollout_adapter/step-N` and every generate call of that
  step is bound to it with a `LoRARequest`, so rollouts always sample from the weights being trained.
* `server` (`--generation-url URL`): a server on other GPUs that returns token ids
  (`drill.models.token_server`, e.g. vLLM >= 0.10.2). Each step the adapter is saved the same way and loaded
  into the server at run time (`/v1/load_lora_adapter`, the previous one unloaded), and the step's requests
  name it; prompts are rendered here and sent as token ids, and the ids that come back are the ones trained on.

Sampling is seeded per step (`config.seed`, step), and `LLMPolicy` derives each call's seed from it
and the inputs, so a resumed run samples exactly as an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drill.core.policy import Policy
from drill.core.types import PolicyInfo
from drill.models.base import ModelLoadError, SamplingParams
from drill.models.policy import LLMPolicy, PolicyOptions, demonstrations
from drill.models.prompt import Demonstration
from drill.train.config import RunConfig
from drill.train.target import TrainTarget


def step_sampling_seed(seed: int, step: int) -> int:
    return int.from_bytes(hashlib.sha256(f"sampling:{seed}:{step}".encode()).digest()[:4], "big") >> 1


def rollout_policies(config: RunConfig, model: Any, base: Any, target: TrainTarget, roles: Sequence[str],
                     output_dir: Path, prompting: dict[str, Any]) -> Callable[[int], dict[str, Policy]]:
    """A function from step to the role -> policy mapping that step's `run_episodes` uses; `prompting` is
    `prompt_options(config, target)`."""
    from drill.models.local import TransformersChatModel

    chat: Any
    bind_adapter: Callable[[int], None] = lambda step: None
    if config.generation_backend == "vllm":
        chat, bind_adapter = _vllm_rollouts(config, model, base.model_id, output_dir)
    elif config.generation_backend == "server":
        chat, bind_adapter = _server_rollouts(config, model, base, output_dir)
    else:
        chat = TransformersChatModel(model, base.tokenizer, base.model_id)
    info = rollout_info(base.model_id)
    scripted = {role: target.baselines[config.scripted_policy]() for role in target.roles if role not in roles}
    memory = run_memory(config, target)

    def policies(step: int) -> dict[str, Policy]:
        bind_adapter(step)
        trained = step_policy(chat, info, config.max_new_tokens, config.temperature, config.seed, prompting, step)
        if memory is not None:
            from drill.memory.policy import MemoryPolicy

            trained = MemoryPolicy(trained, memory)
        return {role: trained if role in roles else scripted[role] for role in target.roles}

    return policies


@dataclass(frozen=True)
class ServerStepPolicies:
    """The policies of one training step, built inside a Ray rollout worker from the step number alone: the trained
    roles call the generation server with that step's adapter (`grpo-step-N`, which the trainer loaded before
    the step) and sampling seed, exactly as `rollout_policies` builds them in-process; the other roles play the
    scripted baseline. Shipped to the workers once, by Ray's serializer."""

    url: str
    tokenizer: Any
    model_id: str
    max_new_tokens: int
    temperature: float
    seed: int
    prompting: dict[str, Any]
    roles: tuple[str, ...]
    all_roles: tuple[str, ...]
    scripted: Callable[[], Policy] | None

    def __call__(self, key: str) -> dict[str, Policy]:
        from drill.models.token_server import TokenServerChatModel

        step = int(key)
        chat = TokenServerChatModel(self.model_id, self.url, self.tokenizer, self.model_id)
        chat.adapter = f"grpo-step-{step}"
        trained = step_policy(chat, rollout_info(self.model_id), self.max_new_tokens, self.temperature, self.seed,
                              self.prompting, step)
        scripted = self.scripted() if self.scripted is not None and set(self.roles) != set(self.all_roles) else None
        return {role: trained if role in self.roles else scripted for role in self.all_roles}  # type: ignore[misc]


def server_step_policies(config: RunConfig, base: Any, target: TrainTarget, roles: Sequence[str],
                         prompting: dict[str, Any]) -> ServerStepPolicies:
    """What Ray rollout workers build each step's policies from (`config.rollout_workers`)."""
    assert config.generation_url is not None  # the config requires it with rollout_workers
    return ServerStepPolicies(url=config.generation_url, tokenizer=base.tokenizer, model_id=base.model_id,
                              max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed,
                              prompting=prompting, roles=tuple(roles), all_roles=tuple(target.roles),
                              scripted=target.baselines.get(config.scripted_policy))


def step_policy(chat: Any, info: PolicyInfo, max_new_tokens: int, temperature: float, seed: int,
                prompting: dict[str, Any], step: int) -> LLMPolicy:
    """The trained roles' policy for `step`: `chat` sampled with the step's seed, prompted as `prompting` says
    (in-process and in a Ray rollout worker alike)."""
    sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature,
                              seed=step_sampling_seed(seed, step))
    return LLMPolicy(chat, info, PolicyOptions(sampling=sampling, **prompting))


def rollout_info(model_id: str) -> PolicyInfo:
    """What every rollout episode records for the trained roles."""
    return PolicyInfo(name="grpo-rollout", kind="lora", model=model_id, load_status="training")


def run_memory(config: RunConfig, target: TrainTarget) -> Any:
    """`config.memory` as a `drill.memory.Memory` on this environment and its options, or None."""
    if config.memory is None:
        return None
    from drill.memory import Memory, TrajectoryStore

    return Memory(TrajectoryStore(config.memory), target.spec.name, target.options, config.memory_k)


def prompt_options(config: RunConfig, target: TrainTarget) -> dict[str, Any]:
    """The prompt settings of `config` (tool listing, prefill, demonstrations) as PolicyOptions/LLMOptions
    keywords. Demonstrations are the oracle's first turns on the first `config.demos` training tasks
    (`plan_run` has checked that the target has an oracle and enough tasks)."""
    shown: tuple[Demonstration, ...] = ()
    if config.demos:
        tasks = target.tasks("train")
        if config.demo_selection == "diverse":  # decisions that differ, so groups can differ (drill.train.exploration)
            from drill.train.exploration import diverse_demo_tasks

            tasks = diverse_demo_tasks(target.make_env, tasks, target.baselines["oracle"](), config.demos,
                                       config.max_turns)
        shown = demonstrations(target.make_env, tasks, target.baselines["oracle"](), config.demos,
                               config.max_turns)
    return {"tool_listing": config.tool_listing, "prefill": config.prefill, "react": config.react,
            "max_history_turns": config.max_history_turns, "demonstrations": shown}


class _AdapterBoundEngine:
    """A `vllm.LLM` whose every `generate` call uses the current step's LoRA adapter."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.lora_request: Any = None

    def generate(self, prompts: Any, sampling: Any, use_tqdm: bool = False) -> Any:
        if self.lora_request is None:
            raise RuntimeError("vLLM rollout engine used before an adapter was bound for the step")
        return self.llm.generate(prompts, sampling, use_tqdm=use_tqdm, lora_request=self.lora_request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


def _vllm_rollouts(config: RunConfig, model: Any, model_id: str,
                   output_dir: Path) -> tuple[Any, Callable[[int], None]]:
    from drill.models.local import EMBEDDED_MODEL_ID
    from drill.models.vllm_backend import VLLMChatModel

    if model_id == EMBEDDED_MODEL_ID:
        raise ModelLoadError("vLLM generation needs an HF model folder or hub id (--model); the embedded GGUF "
                             "model trains with --generation-backend transformers")
    chat = VLLMChatModel(model_id, enable_lora=True, max_lora_rank=max(config.lora_rank, 8), max_loras=1,
                         dtype="bfloat16", gpu_memory_utilization=0.35)
    engine = _AdapterBoundEngine(chat.llm)
    chat.llm = engine

    def bind_adapter(step: int) -> None:
        from vllm.lora.request import LoRARequest

        folder = _save_rollout_adapter(model, output_dir, step)
        engine.lora_request = LoRARequest(f"grpo-step-{step}", step, str(folder))

    return chat, bind_adapter


def _server_rollouts(config: RunConfig, model: Any, base: Any,
                     output_dir: Path) -> tuple[Any, Callable[[int], None]]:
    from drill.models.token_server import TokenServerChatModel

    chat = TokenServerChatModel(base.model_id, config.generation_url, base.tokenizer, base.model_id)

    def bind_adapter(step: int) -> None:
        chat.load_adapter(f"grpo-step-{step}", _save_rollout_adapter(model, output_dir, step))

    return chat, bind_adapter


def _save_rollout_adapter(model: Any, output_dir: Path, step: int) -> Path:
    """The current adapter saved for a generation engine to load: `OUTPUT/rollout_adapter/step-N`."""
    folder = output_dir / "rollout_adapter" / f"step-{step:06d}"
    model.save_pretrained(str(folder))
    return folder
