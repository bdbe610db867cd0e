"""`RemoteEnv`: a served environment used exactly like a local one.

`RemoteEnv(url, local)` has the public surface of `drill.core.Env` (`name`, `roles`, `tasks`, `task`, `reset`,
`step`, `done`) and plays each episode over one OpenEnv `/ws` session. The task set comes from `local`, an
environment built from the same spec and options on this side, because tasks carry ground truth and the server
never sends it; `reset(task, seed)` sends only the task id and the seed. The server's rubric total at the end of
an episode is kept in `final_score`, so a caller can check it against its own scoring.

    remote = RemoteEnv("http://127.0.0.1:8000", spec.make(options)())
    observation = remote.reset(task, seed=0)
    result = remote.step(Action.call("search_kb", query="vpn"))

`drill eval ENV --env-url URL` builds one per episode through `remote_spec`.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from contextlib import ExitStack
from typing import Any

from websockets.exceptions import InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from drill.core.env import Env
from drill.core.spec import EnvSpec
from drill.core.types import Action, Event, Observation, Score, StepResult, Task

__all__ = ["RemoteEnv", "RemoteEnvError", "check_server", "remote_spec", "ws_url"]


class RemoteEnvError(RuntimeError):
    """The server refused a message (its typed error frame), or the connection failed."""


def ws_url(url: str) -> str:
    """`http://host:port[/prefix]` as the `/ws` URL of that server."""
    url = url.rstrip("/")
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if url.startswith(http):
            url = ws + url[len(http):]
    return url if url.endswith("/ws") else url + "/ws"


class RemoteEnv:
    def __init__(self, url: str, local: Env, timeout: float = 60.0, max_size: int = 16 * 2**20) -> None:
        self.url, self.local, self.timeout, self.max_size = ws_url(url), local, timeout, max_size
        self.name, self.roles = local.name, local.roles
        self._socket: ClientConnection | None = None
        self._stack = ExitStack()
        self._done = False
        self.final_score: Score | None = None

    def tasks(self, split: str = "test") -> list[Task]:
        return self.local.tasks(split)

    def task(self, task_id: str) -> Task:
        return self.local.task(task_id)

    @property
    def done(self) -> bool:
        return self._done

    def reset(self, task: Task, seed: int) -> Observation:
        self.final_score, self._done = None, False
        data = self._send({"type": "reset", "data": {"task_id": task.id, "seed": seed}})
        return _observation(data["observation"], self.local.observation_type)

    def step(self, action: Action) -> StepResult:
        wire = {"tool": action.tool, "arguments": action.arguments}
        if action.parse_error is not None:
            wire["parse_error"] = action.parse_error
        data = self._send({"type": "step", "data": wire})
        fields = data["observation"]
        self._done = bool(data["done"])
        if self._done and fields.get("score") is not None:
            self.final_score = Score.model_validate(fields["score"])
        if self._done:
            self.close()
        return StepResult(observation=_observation(fields, self.local.observation_type), done=self._done,
                          events=[Event.model_validate(e) for e in fields.get("events", [])])

    def close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.send(json.dumps({"type": "close"}))
            finally:
                self._socket = None
                self._stack.close()

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._socket is None:
            try:
                self._socket = self._stack.enter_context(connect(self.url, open_timeout=self.timeout,
                                                                 max_size=self.max_size))
            except OSError as exc:
                raise RemoteEnvError(f"cannot reach {self.url}: {exc}") from exc
            except InvalidHandshake as exc:  # a 403 from the origin guard, a proxy's 401, a path that is no server
                body = exc.response.body.decode("utf-8", "replace")[:300] if isinstance(exc, InvalidStatus) else ""
                raise RemoteEnvError(f"{self.url} refused the WebSocket: {exc} {body}".strip()) from None
        self._socket.send(json.dumps(message))  # ASCII: lone surrogates travel escaped, as JSON allows
        reply = json.loads(self._socket.recv(timeout=self.timeout))
        if reply.get("type") == "error":
            detail = reply.get("data", {})
            raise RemoteEnvError(f"{self.url}: {detail.get('code', 'ERROR')}: {detail.get('message', detail)}")
        return reply["data"]


def _observation(fields: dict[str, Any], kind: type[Observation] = Observation) -> Observation:
    """The observation as the environment made it: its base fields and its own (`extra`), parsed by its class."""
    base = {k: fields[k] for k in ("role", "content", "step", "tools", "instructions", "error")}
    return kind.model_validate({**base, **(fields.get("extra") or {})})


def check_server(url: str, name: str, options: dict[str, Any], timeout: float = 10.0) -> None:
    """OSError if nothing answers at `url`; ValueError if it serves another environment, or the same one with other
    options (the episodes would differ from local ones)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/web/info", timeout=timeout) as response:
            info = json.loads(response.read())
    except (OSError, ValueError) as exc:
        raise OSError(f"cannot reach a served environment at {url}: {exc}") from None
    if info.get("env") != name:
        raise ValueError(f"{url} serves {info.get('env')!r}, not {name!r}")
    if info.get("options") != options:
        raise ValueError(f"{url} serves {name} with options {info.get('options')}, not {options}; "
                         "give the same -E options on both sides")


def remote_spec(spec: EnvSpec, url: str) -> EnvSpec:
    """`spec` whose `load(**options)` gives a `RemoteEnv` on `url` (tasks from a local env with those options).
    The first load checks that `url` serves this environment."""
    checked = False

    def load(**options: Any) -> Any:
        nonlocal checked
        if not checked:
            check_server(url, spec.name, json.loads(json.dumps(options)))
            checked = True
        return RemoteEnv(url, spec.load(**options))

    return dataclasses.replace(spec, load=load, text_option=None)  # the served env renders with its own options
