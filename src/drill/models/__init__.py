"""Language models for Drill: chat backends, tool-call parsing, and the LLM policy.

Backends (each a `ChatModel`): `drill.models.local` (transformers; the embedded SmolLM2 by default),
`drill.models.openai_backend` (any OpenAI-compatible server) and `drill.models.vllm_backend`
(vLLM in-process, CUDA only). Adapters: `drill.models.adapters`. The backends import torch,
transformers or openai only when used, so importing this package stays cheap. See README.md.
"""

from drill.models.adapters import load_lora, save_adapter
from drill.models.base import (
    AdapterLoadError,
    ChatModel,
    Message,
    ModelCallError,
    ModelLoadError,
    SamplingParams,
)
from drill.models.local import EMBEDDED_MODEL_ID, TransformersChatModel, fresh_model, load_embedded, load_local
from drill.models.openai_backend import OpenAIChatModel
from drill.models.parsing import ToolCallParseError, parse_action, parse_tool_call
from drill.models.policy import LLMPolicy, PolicyOptions, build_llm_policy

__all__ = [
    "EMBEDDED_MODEL_ID", "AdapterLoadError", "ChatModel", "LLMPolicy", "Message", "ModelCallError", "ModelLoadError",
    "OpenAIChatModel", "PolicyOptions", "SamplingParams", "ToolCallParseError", "TransformersChatModel",
    "build_llm_policy", "fresh_model", "load_embedded", "load_local", "load_lora", "parse_action", "parse_tool_call",
    "save_adapter",
]
