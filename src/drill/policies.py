"""Turning `--policy` text into policies, one per role.

Scripted names (`random`, `heuristic`, `oracle`) come from the environment's baselines. Model
specs go to `drill.models`:

* `llm`            the embedded SmolLM2-135M-Instruct, or `--model PATH_OR_HUB_ID`
* `openai:MODEL`   any OpenAI-compatible server at `--base-url`, key from `--api-key-env`
* `lora:PATH`      a trained LoRA adapter on its base model; a load failure stops the command
* `vllm:MODEL`     vLLM in-process (needs CUDA and the `vllm` extra)

The same spec text always maps to the same policy object, so roles that share a model share its
batched calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from drill.core.policy import Policy, parse_role_assignment
from drill.core.types import PolicyInfo

MODEL_PREFIXES = ("llm", "openai:", "lora:", "vllm:")
ToolListing = Literal["schema", "compact"]
TOOL_LISTINGS: tuple[str, ...] = ("schema", "compact")


@dataclass(frozen=True)
class Demonstration:
    """One worked example shown to a role before its own conversation: what it saw and a good reply."""

    role: str
    observation: str
    """The observation as the model would see it (a user message)."""
    reply: str
    """The reply, as a tool call in the prompt's reply format (an assistant message)."""


@dataclass(frozen=True)
class LLMOptions:
    """Options shared by every language-model policy, set from the CLI."""

    model: str | None = None
    """Local HF folder or hub id for `llm`; the base model for `lora:` when the adapter does not name one."""
    base_url: str | None = None
    """OpenAI-compatible endpoint for `openai:MODEL`, e.g. http://localhost:8000/v1."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key for `openai:`."""
    max_new_tokens: int = 192
    temperature: float = 0.0
    react: bool = False
    """Thought/Action prompting instead of plain tool calls."""
    seed: int = 0
    tool_listing: ToolListing = "schema"
    """How tools are listed in the system prompt: `schema` (each tool's JSON Schema) or `compact` (one
    signature line per tool, e.g. `submit_resolution(resolution: string, ...)`), much shorter for small models."""
    prefill: str = ""
    """Text every reply starts with, e.g. `<tool_call>\n{"name": "submit_resolution", "arguments": {`. It is part of
    the prompt (never trained on) and of the reply that is parsed. Needs a backend that renders prompts itself."""
    demonstrations: tuple[Demonstration, ...] = ()
    """Worked examples (see `drill.models.policy.demonstrations`) shown to their role before each conversation."""

    def __post_init__(self) -> None:
        if self.tool_listing not in TOOL_LISTINGS:
            raise ValueError(f"unknown tool listing {self.tool_listing!r}; choose from {', '.join(TOOL_LISTINGS)}")


def describe_choices(baselines: Mapping[str, object]) -> str:
    return ", ".join([*baselines, "llm", "openai:MODEL", "lora:PATH", "vllm:MODEL"])


def build_policy(spec: str, baselines: Mapping[str, Callable[[], Policy]], llm: LLMOptions) -> Policy:
    """One policy from one spec. Raises ValueError with the choices for an unknown name."""
    if spec in baselines:
        return baselines[spec]()
    if spec == "llm" or spec.startswith(MODEL_PREFIXES[1:]):
        from drill.models.policy import build_llm_policy

        return build_llm_policy(spec, llm)
    raise ValueError(f"unknown policy {spec!r}; choose from {describe_choices(baselines)}")


def resolve_policies(text: str, roles: Sequence[str], baselines: Mapping[str, Callable[[], Policy]],
                     llm: LLMOptions) -> dict[str, Policy]:
    """A policy per role from `--policy` text such as `heuristic,oversight=llm`."""
    specs = parse_role_assignment(text, roles)
    built: dict[str, Policy] = {}
    return {role: built.setdefault(spec, built.get(spec) or build_policy(spec, baselines, llm))
            for role, spec in specs.items()}


def policy_label(info: PolicyInfo) -> str:
    """Model, adapter (sha256 prefix) and load status of a language-model policy, for tables; "—" if scripted."""
    if info.kind == "scripted":
        return "—"
    label = info.model or info.name
    if info.adapter_path:
        label += f" + {info.adapter_path} ({(info.adapter_sha256 or '?')[:12]})"
    return f"{label} [{info.load_status}]"
