"""The shipped test seam, as httpx ships `MockTransport`: test your environment, rubric or policy code against
a model whose replies you script, without loading weights or reaching a server.

* `ScriptedChatModel(replies)` — a `ChatModel` that answers each prompt with the next reply of the script and
  records every call (the conversations, tools and sampling it was given). Put it in an `LLMPolicy`.
* `StubOpenAIServer(reply)` — a real OpenAI-compatible `/v1/chat/completions` on 127.0.0.1 (a thread of the
  standard library's HTTP server), answered by `reply(request) -> (status, body)` or by `text_reply(fn)`,
  keeping every request body and header. Use it as a context manager; `base_url` is what `openai:` needs.

    with StubOpenAIServer(text_reply(lambda request: "CORRECT")) as server:
        judge = AnswerJudge("openai:judge", server.base_url)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from drill.core.types import Generation, ToolSpec
from drill.models.base import Message, SamplingParams

__all__ = ["ScriptedChatModel", "StubOpenAIServer", "chat_completion", "text_reply"]

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


class StubOpenAIServer:
    """An OpenAI-compatible chat-completions server on loopback, for tests. See the module docstring."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stub server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubOpenAIServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path != "/v1/chat/completions":
                    status, payload = 404, {"error": {"message": f"no route {self.path}"}}
                else:
                    stub.requests.append(body)
                    stub.headers.append({k.lower(): v for k, v in self.headers.items()})
                    status, payload = stub.reply(body)
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
