"""Rendering conversations into prompt token ids with a tokenizer's chat template.

Shared by the backends that tokenize themselves (transformers and vLLM), so both build the exact
same prompts. A trailing assistant message is a prefill the reply continues from. Whether the template renders tools is detected, not assumed: a conversation is
rendered with a probe tool and the probe's name must appear in the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drill.core.types import ToolSpec
from drill.models.base import Message, ModelLoadError

_PROBE_TOOL = ToolSpec(name="drill_probe_tool_7f3a", description="A probe tool.",
                       parameters={"type": "object", "properties": {}, "required": []})


class ChatTemplate:
    """A tokenizer's chat template, with tool support detected once."""

    def __init__(self, tokenizer: Any, name: str) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ModelLoadError(f"{name}: the tokenizer has no chat template; Drill needs an instruct (chat) model")
        self.tokenizer = tokenizer
        probe = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=[_PROBE_TOOL.openai_format()],
                                              tokenize=False, add_generation_prompt=True)
        self.native_tools: bool = _PROBE_TOOL.name in probe

    def render(self, conversation: Sequence[Message], tools: Sequence[ToolSpec] | None) -> str:
        """The prompt text, ending with the assistant header the model continues from.

        A conversation that ends with an assistant message is a prefill: the header is rendered for the
        messages before it and the message's text is appended verbatim (whitespace included), so the
        model continues the reply from exactly that text.
        """
        messages = list(conversation)
        prefill = ""
        if messages and messages[-1]["role"] == "assistant":
            prefill = messages.pop()["content"]
        tool_dicts = [t.openai_format() for t in tools] if tools and self.native_tools else None
        text = self.tokenizer.apply_chat_template(messages, tools=tool_dicts, tokenize=False,
                                                  add_generation_prompt=True)
        assert isinstance(text, str)
        return text + prefill

    def prompt_token_ids(self, conversation: Sequence[Message], tools: Sequence[ToolSpec] | None) -> list[int]:
        """Token ids of the rendered prompt. The template writes every special token itself."""
        ids = self.tokenizer(self.render(conversation, tools), add_special_tokens=False)["input_ids"]
        return list(ids)
