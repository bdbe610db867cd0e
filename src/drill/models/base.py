"""The chat-model interface every backend implements.

A backend turns a batch of conversations into one `Generation` each: the text plus, where the
backend can give them, the exact prompt token ids, sampled token ids and their logprobs. Training
uses those ids as they are; nothing is ever re-tokenized.
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
    max_new_tokens: int = 256
    """Upper bound on tokens generated per turn."""
    temperature: float = 0.7
    """0 means greedy decoding."""
    top_p: float = 1.0
    seed: int | None = None
    """Seeds the sampler so that a batch is reproducible on the same machine."""


class ChatModel(Protocol):
    @property
    def model_id(self) -> str: ...

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]: ...
