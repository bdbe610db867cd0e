"""The chat-model interface every backend implements, and the errors a backend raises.

A backend turns a batch of conversations into one `Generation` each: the text plus, where the
backend can give them, the exact prompt token ids, sampled token ids and their logprobs. Training
uses those ids as they are; nothing is ever re-tokenized.

Tools reach the model one of two ways, and `ChatModel.native_tools` says which:

* `native_tools` is True: the backend passes `tools` to the chat template's `tools=` (local models
  whose template renders tools) or to the API's `tools` field (OpenAI-compatible servers).
* `native_tools` is False: the backend ignores `tools`, and the caller describes them in the
  system prompt (`drill.models.policy` writes the JSON tool protocol there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from drill.core.types import Generation, ToolSpec

Message = dict[str, str]
"""A chat message: {"role": "system"|"user"|"assistant"|"tool", "content": "..."}."""


@dataclass(frozen=True)
class SamplingParams:
    """How one reply is sampled. These defaults are the ones every command shows (`drill eval`, `watch`, `serve`,
    the memory methods, the trainer's prompt settings): they are declared here only."""

    max_new_tokens: int = 192
    """Upper bound on tokens generated per turn."""
    temperature: float = 0.0
    """0 means greedy decoding."""
    top_p: float = 1.0
    seed: int | None = None
    """Seeds the sampler so that a batch is reproducible on the same machine."""
    stop: tuple[str, ...] = ()
    """Strings that end a generation early (the stop string stays in the text and token ids)."""

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be 0 (greedy) or positive, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


class ChatModel(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def native_tools(self) -> bool:
        """Whether `generate` hands `tools` to the model itself (see the module docstring)."""
        ...

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]: ...


class ModelLoadError(ValueError):
    """A model or backend cannot be set up (missing files, missing API key, no GPU for vLLM).

    It is a ValueError so that the CLI's `--policy` handling prints it as one line and exits non-zero.
    """


class AdapterLoadError(ModelLoadError):
    """A LoRA adapter cannot be loaded. The message says why; no other policy is ever substituted."""


class ModelCallError(RuntimeError):
    """A backend failed while generating (server unreachable, request rejected)."""
