"""The shipped test seam, as httpx ships `MockTransport`: test your environment, rubric or policy code against
a model whose replies you script, without loading weights or reaching a server.

* `ScriptedChatModel(replies)` — a `ChatModel` that answers each prompt with the next reply of the script and
  records every call (the conversations, tools and sampling it was given). Put it in an `LLMPolicy`.
* `StubOpenAIServer(reply)` — a real OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 (a thread of the
  standard library's HTTP server), answered by `reply(request) -> (status, body)` or by `text_reply(fn)`,
  keeping every request body and header. Use it as a context manager; `base_url` is what `openai:` needs.

    with StubOpenAIServer(text_reply(lambda request: "CORRECT")) as server:
        judge = AnswerJudge("openai:judge", server.base_url)

* `TokenServerStub(chat)` — a loopback `/v1/completions` server that returns token ids, completing with a local
  model (`server:MODEL` and `drill train --generation-backend server` against it), with runtime LoRA loading.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from drill.core.types import Generation, ToolSpec
from drill.models.base import Message, SamplingParams

__all__ = ["ScriptedChatModel", "StubOpenAIServer", "TokenServerStub", "chat_completion", "text_reply"]

Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


class ScriptedChatModel:
    """Replies from a script, one per prompt, in order; records every `generate` call.

    Each generation carries made-up but well-formed token ids and logprobs (two tokens), so code that reads
    them (a trainer's sample builder) runs; a script that runs out raises IndexError with a clear message.
    """

    model_id = "scripted"

    def __init__(self, replies: Sequence[str], native_tools: bool = False) -> None:
        self.replies = list(replies)
        self.native_tools = native_tools
        self.calls: list[tuple[list[list[Message]], Sequence[ToolSpec] | None, SamplingParams]] = []

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]:
        self.calls.append(([list(c) for c in conversations], tools, params))
        if len(self.replies) < len(conversations):
            raise IndexError(f"the script has {len(self.replies)} replies left for {len(conversations)} prompts")
        return [Generation(text=self.replies.pop(0), prompt_token_ids=[1], token_ids=[7, 8], logprobs=[-0.5, -0.25],
                           model=self.model_id, finish_reason="stop") for _ in conversations]


def chat_completion(message: dict[str, Any], finish_reason: str = "stop", model: str = "stub-model",
                    logprobs: list[float] | None = None) -> dict[str, Any]:
    """A `chat.completion` response body with one choice holding `message` (content and/or tool_calls)."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": f"t{i}", "logprob": lp, "bytes": None, "top_logprobs": []}
                                          for i, lp in enumerate(logprobs)]}
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model, "choices": [choice],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def text_reply(content: Callable[[dict[str, Any]], str]) -> Reply:
    """A reply function answering every request with the text `content(request)`."""
    return lambda request: (200, chat_completion({"content": content(request)}, model=request.get("model", "stub")))


class _LoopbackServer(ABC):
    """A JSON-over-HTTP server on 127.0.0.1 in a thread of the standard library's HTTP server; subclasses answer
    `handle(path, body, headers) -> (status, payload)`. Use it as a context manager."""

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @abstractmethod
    def handle(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        """The (status, JSON payload) for one POST; every concrete server defines it."""

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stub server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self):  # type: ignore[no-untyped-def]
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, payload = stub.handle(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None


def _no_route(path: str) -> tuple[int, dict[str, Any]]:
    return 404, {"error": {"message": f"no route {path}"}}


class StubOpenAIServer(_LoopbackServer):
    """An OpenAI-compatible chat-completions server on loopback, for tests. See the module docstring."""

    def __init__(self, reply: Reply) -> None:
        super().__init__()
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def handle(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if path != "/v1/chat/completions":
            return _no_route(path)
        self.requests.append(body)
        self.headers.append(headers)
        return self.reply(body)


class TokenServerStub(_LoopbackServer):
    """A `/v1/completions` server that returns token ids, over a local model, for tests of
    `drill.models.token_server`: the prompt comes as token ids and is completed with the local backend's own
    `generate_ids`, one request at a time; `/v1/load_lora_adapter` loads an adapter (`lora:` loading, on the
    same base) that later requests can name as their model, `/v1/unload_lora_adapter` drops it. With
    `token_ids=False` it answers like a server that cannot return ids (text only)."""

    def __init__(self, chat: Any, token_ids: bool = True) -> None:
        super().__init__()
        self.chat = chat
        self.token_ids = token_ids
        self.adapters: dict[str, Any] = {}
        self.requests: list[dict[str, Any]] = []
        self.generated: list[list[int]] = []
        self.loaded: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def handle(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        from drill.models.adapters import load_lora

        with self._lock:
            if path == "/v1/load_lora_adapter":
                self.adapters[body["lora_name"]] = load_lora(body["lora_path"], base_model=self.chat.model_id)[0]
                self.loaded.append((body["lora_name"], body["lora_path"]))
                return 200, "Success"
            if path == "/v1/unload_lora_adapter":
                self.adapters.pop(body["lora_name"], None)
                return 200, "Success"
            if path != "/v1/completions":
                return _no_route(path)
            self.requests.append(body)
            model = self.adapters.get(body["model"], self.chat)
            params = SamplingParams(max_new_tokens=body["max_tokens"], temperature=body["temperature"],
                                    top_p=body.get("top_p", 1.0), seed=body.get("seed"),
                                    stop=tuple(body.get("stop", ())))
            generation = model.generate_ids([body["prompt"]], params)[0]
            self.generated.append(generation.token_ids)
        choice: dict[str, Any] = {"index": 0, "text": generation.text, "finish_reason": generation.finish_reason,
                                  "logprobs": {"token_logprobs": generation.logprobs}}
        if self.token_ids:
            choice |= {"token_ids": generation.token_ids, "prompt_token_ids": body["prompt"]}
        return 200, {"id": "cmpl-stub", "object": "text_completion", "model": body["model"], "choices": [choice]}
