"""The OpenAI-compatible backend: vLLM, llama.cpp server, Ollama, SGLang or a hosted API, via the `openai` client.

* The API key is read from an environment variable (`OPENAI_API_KEY` unless told otherwise). A server
  on this machine (localhost, 127.0.0.1, ::1) gets the placeholder key "EMPTY" when the variable is
  unset; any other server without a key is a `ModelLoadError` naming the variable.
* Tools go in the request's native `tools` field (`native_tools` is True).
* Structured `tool_calls` in a response are written into the text as Hermes blocks,
  `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, after any content, so the one parser
  reads every backend's output and `Action.raw` shows what the model did. Two calls stay two blocks,
  which the parser rejects as two calls.
* Logprobs of the sampled tokens are requested; a server that rejects the `logprobs` field is asked
  again without it (with a warning) and its generations carry no logprobs. Token ids are not
  available through this API, so `token_ids` and `prompt_token_ids` stay empty: train with the
  local backend.
* A batch is sent as concurrent requests (servers such as vLLM batch them). Row i of a seeded
  batch uses seed + i, so a group of identical prompts still gets different samples.
"""

from __future__ import annotations

import ipaddress
import json
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

from drill.core.types import Generation, ToolSpec
from drill.models.base import Message, ModelCallError, ModelLoadError, SamplingParams

PLACEHOLDER_KEY = "EMPTY"


def is_loopback(base_url: str | None) -> bool:
    if not base_url:
        return False
    host = urlparse(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAIChatModel:
    """A model behind an OpenAI-compatible `/v1/chat/completions` endpoint."""

    native_tools = True

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY", *,
                 max_concurrency: int = 8, timeout_s: float = 120.0, request_logprobs: bool = True) -> None:
        from openai import OpenAI

        if not model:
            raise ModelLoadError("openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        key = os.environ.get(api_key_env)
        if not key:
            if not is_loopback(base_url):
                where = base_url or "the OpenAI API"
                raise ModelLoadError(f"environment variable {api_key_env} is not set; {where} needs an API key "
                                     "(set it, or name another variable with --api-key-env)")
            key = PLACEHOLDER_KEY
        self.model_id = model
        self.base_url = base_url
        self.max_concurrency = max_concurrency
        self.request_logprobs = request_logprobs
        self.client = OpenAI(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=2)

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]:
        if not conversations:
            return []
        if any(c and c[-1]["role"] == "assistant" for c in conversations):
            raise ModelCallError(f"openai:{self.model_id}: an assistant prefill (a conversation ending with an "
                                 "assistant message) is not part of the OpenAI chat API; use a backend that renders "
                                 "the prompt itself (llm, lora:, vllm:)")
        jobs = list(enumerate(conversations))
        if len(jobs) == 1:
            return [self._complete(jobs[0][1], tools, params, 0)]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(jobs))) as pool:
            return list(pool.map(lambda job: self._complete(job[1], tools, params, job[0]), jobs))

    def _request(self, conversation: Sequence[Message], tools: Sequence[ToolSpec] | None, params: SamplingParams,
                 row: int) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model_id, "messages": [dict(m) for m in conversation],
            "max_tokens": params.max_new_tokens, "temperature": params.temperature, "top_p": params.top_p,
        }
        if tools:
            request["tools"] = [t.openai_format() for t in tools]
        if params.seed is not None:
            request["seed"] = params.seed + row
        if params.stop:
            request["stop"] = list(params.stop)
        if self.request_logprobs:
            request["logprobs"] = True
        return request

    def _complete(self, conversation: Sequence[Message], tools: Sequence[ToolSpec] | None, params: SamplingParams,
                  row: int) -> Generation:
        import openai

        request = self._request(conversation, tools, params, row)
        try:
            response = self.client.chat.completions.create(**request)
        except openai.BadRequestError as exc:
            if "logprobs" not in request or "logprob" not in str(exc).lower():
                raise ModelCallError(f"openai:{self.model_id} at {self._where()} rejected the request: {exc}") from exc
            warnings.warn(f"openai:{self.model_id} at {self._where()} rejects logprobs; generating without them",
                          stacklevel=2)
            self.request_logprobs = False
            request.pop("logprobs")
            try:
                response = self.client.chat.completions.create(**request)
            except openai.OpenAIError as retry_exc:
                raise ModelCallError(f"openai:{self.model_id} at {self._where()}: {retry_exc}") from retry_exc
        except openai.OpenAIError as exc:
            raise ModelCallError(f"openai:{self.model_id} at {self._where()}: {exc}") from exc
        if not response.choices:
            raise ModelCallError(f"openai:{self.model_id} at {self._where()} returned no choices")
        choice = response.choices[0]
        logprobs = [float(t.logprob) for t in (choice.logprobs.content or [])] if choice.logprobs else []
        return Generation(text=response_text(choice.message), logprobs=logprobs, model=response.model or self.model_id,
                          finish_reason=choice.finish_reason or "")

    def _where(self) -> str:
        return self.base_url or "api.openai.com"


def response_text(message: Any) -> str:
    """The message content followed by one Hermes `<tool_call>` block per structured tool call."""
    parts = [message.content] if message.content else []
    for call in message.tool_calls or []:
        raw_arguments = call.function.arguments
        try:
            arguments: Any = json.loads(raw_arguments) if raw_arguments else {}
        except json.JSONDecodeError:
            arguments = raw_arguments  # left as the string it was; the parser reports it
        parts.append("<tool_call>" + json.dumps({"name": call.function.name, "arguments": arguments}) + "</tool_call>")
    return "\n".join(parts)
