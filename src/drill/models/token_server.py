"""Generation from an OpenAI-compatible server that returns token ids, for evaluation (`--policy server:MODEL`)
and for training (`drill train --generation-backend server --generation-url URL`).

The prompt is rendered here, with the model's own tokenizer and chat template (exactly as the local backend
renders it), and sent to `POST {base_url}/completions` as a list of token ids with `return_token_ids: true`; the
server answers with the ids it sampled (vLLM >= 0.10.2 does: `vllm serve MODEL`). So the ids a trainer trains
on are the ids the server sampled, never a re-tokenization of its text:

* every choice must carry `token_ids`, and its `prompt_token_ids`, when present, must be the ids sent; a server
  that answers without ids (an older vLLM, llama.cpp, a hosted API) is refused with a `ModelCallError` on the
  first call, naming what is missing;
* the text is those ids decoded, without the end-of-turn token, as the local backend does;
* logprobs are the server's (`logprobs: 1`; the trainer recomputes its own either way).

For training, `load_adapter(name, folder)` registers a LoRA adapter with the server at run time
(`POST {base_url}/load_lora_adapter`, vLLM's runtime LoRA API: `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`,
`--enable-lora`), unloads the previous one, and makes every later request name it as the model. The folder
must be readable by the server at the same path (a shared filesystem).

A batch is sent as concurrent requests, one per row (the server batches them); row i of a seeded batch asks
for seed + i. `drill.models.testing.TokenServerStub` is a loopback server over a local model for tests.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from drill.core.types import Generation, ToolSpec
from drill.models.base import Message, ModelCallError, ModelLoadError, SamplingParams
from drill.models.chat_template import ChatTemplate
from drill.models.openai_backend import PLACEHOLDER_KEY, is_loopback

__all__ = ["TokenServerChatModel"]


class TokenServerChatModel:
    """A model behind `/v1/completions` that returns the sampled token ids (see the module docstring)."""

    def __init__(self, served_model: str, base_url: str | None, tokenizer: Any, model_id: str,
                 api_key_env: str = "OPENAI_API_KEY", *, max_concurrency: int = 64, timeout_s: float = 300.0) -> None:
        import httpx

        from drill.models.local import end_of_turn_ids

        if not base_url:
            raise ModelLoadError("server:MODEL needs --base-url, the server's OpenAI-compatible address "
                                 "(e.g. http://gpu-node:8000/v1)")
        if not served_model:
            raise ModelLoadError("server:MODEL needs the model name the server serves, "
                                 "e.g. server:Qwen/Qwen2.5-1.5B-Instruct")
        key = os.environ.get(api_key_env)
        if not key and not is_loopback(base_url):
            raise ModelLoadError(f"environment variable {api_key_env} is not set; {base_url} needs an API key "
                                 "(set it, or name another variable with --api-key-env)")
        self.served_model = served_model
        self.base_url = base_url.rstrip("/")
        self.model_id = model_id
        self.tokenizer = tokenizer
        self.template = ChatTemplate(tokenizer, model_id)
        self.native_tools: bool = self.template.native_tools
        self.stop_token_ids = end_of_turn_ids(tokenizer)
        self.max_concurrency = max_concurrency
        self.adapter: str | None = None
        self.client = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {key or PLACEHOLDER_KEY}"})

    def prompt_token_ids(self, conversation: Sequence[Message], tools: Sequence[ToolSpec] | None) -> list[int]:
        return self.template.prompt_token_ids(conversation, tools)

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]:
        prompts = [self.prompt_token_ids(c, tools) for c in conversations]
        if len(prompts) <= 1:
            return [self._complete(p, params, 0) for p in prompts]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as pool:
            return list(pool.map(lambda job: self._complete(job[1], params, job[0]), enumerate(prompts)))

    def load_adapter(self, name: str, folder: Path) -> None:
        """Register the LoRA adapter in `folder` as `name` with the server, unload the previous one, and name it in
        every later request. ModelCallError with the server's answer when it refuses."""
        self._post("/load_lora_adapter", {"lora_name": name, "lora_path": str(Path(folder).resolve())}, answer=False)
        previous, self.adapter = self.adapter, name
        if previous is not None and previous != name:
            self._post("/unload_lora_adapter", {"lora_name": previous}, answer=False)

    def _complete(self, prompt: list[int], params: SamplingParams, row: int) -> Generation:
        request: dict[str, Any] = {
            "model": self.adapter or self.served_model, "prompt": prompt, "max_tokens": params.max_new_tokens,
            "temperature": params.temperature, "top_p": params.top_p, "logprobs": 1, "return_token_ids": True,
            "skip_special_tokens": False, "include_stop_str_in_output": True,
        }
        if params.seed is not None:
            request["seed"] = params.seed + row
        if params.stop:
            request["stop"] = list(params.stop)
        data = self._post("/completions", request)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise ModelCallError(f"server:{self.served_model} at {self.base_url} returned no choices")
        choice = choices[0]
        ids = choice.get("token_ids")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise ModelCallError(
                f"server:{self.served_model} at {self.base_url} returned no token ids (the choice has no "
                "'token_ids'); training needs the exact sampled tokens, so this server cannot be used: run a server "
                "that honours return_token_ids, e.g. vLLM >= 0.10.2")
        sent = choice.get("prompt_token_ids", data.get("prompt_token_ids"))
        if sent is not None and list(sent) != prompt:
            raise ModelCallError(f"server:{self.served_model} at {self.base_url} completed a different prompt than "
                                 f"the {len(prompt)} token ids sent ({len(sent)} came back)")
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs") or []
        finish = choice.get("finish_reason") or ""
        text_ids = ids[:-1] if ids and ids[-1] in self.stop_token_ids else ids
        return Generation(text=self.tokenizer.decode(text_ids, skip_special_tokens=False), prompt_token_ids=prompt,
                          token_ids=ids, logprobs=[float(x) for x in logprobs] if len(logprobs) == len(ids) else [],
                          model=self.adapter or self.served_model, finish_reason=finish)

    def _post(self, path: str, body: dict[str, Any], answer: bool = True) -> Any:
        """POST `body` as JSON; the JSON answer when `answer`, else nothing (vLLM's LoRA routes answer plain text)."""
        import httpx

        try:
            response = self.client.post(self.base_url + path, json=body)
        except httpx.HTTPError as exc:
            raise ModelCallError(f"server:{self.served_model} at {self.base_url}{path}: {exc}") from exc
        if response.status_code >= 400:
            raise ModelCallError(f"server:{self.served_model} at {self.base_url}{path} answered "
                                 f"{response.status_code}: {response.text[:300]}")
        if not answer:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ModelCallError(f"server:{self.served_model} at {self.base_url}{path} answered with no JSON "
                                 f"({response.text[:120]!r})") from exc
