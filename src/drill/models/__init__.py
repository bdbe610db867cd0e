"""Language models for Drill: chat backends, tool-call parsing, and the LLM policy.

Backends (each a `ChatModel`): `drill.models.local` (transformers; the embedded SmolLM2 by default),
`drill.models.openai_backend` (any OpenAI-compatible server) and `drill.models.vllm_backend`
(vLLM in-process, CUDA only). Adapters: `drill.models.adapters`. The backends import torch,
transformers or openai only when used, so importing this package stays cheap. See README.md.
"""

from drill.models.base import (
    AdapterLoadError,
    ChatModel,
    Message,
    ModelCallError,
    ModelLoadError,
    SamplingParams,
)
from drill.models.parsing import ToolCallParseError, parse_action, parse_tool_call
from drill.models.policy import LLMPolicy, PolicyOptions, build_llm_policy

__all__ = [
    "AdapterLoadError", "ChatModel", "LLMPolicy", "Message", "ModelCallError", "ModelLoadError", "PolicyOptions",
    "SamplingParams", "ToolCallParseError", "build_llm_policy", "parse_action", "parse_tool_call",
]
