"""MCP over `drill serve`: a tool call runs on its session's thread, so a slow one does not stall `/health`; sessions
created over `/mcp` count against `--max-sessions`, live as long as the WebSocket attached to them, and cannot
fill the cap without one.

The server runs in this process (uvicorn on loopback, in a thread) around triage, whose steps wait at a gate the
test opens: a slow step without a sleep in the server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from websockets.sync.client import connect

from drill import registry
from drill.core.types import Action, StepResult
from drill.serve.app import build_app
from drill.serve.config import ServeConfig
from drill.serve.session import ServedEnv

OPTIONS = {"mode": "agent"}


class Gate:
    """Holds every step while `armed`, until `release` is set; `entered` says a step is waiting."""

    def __init__(self) -> None:
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()


class HeldEnv:
    """Triage, whose steps wait at the gate."""

    def __init__(self, inner: Any, gate: Gate) -> None:
        self._inner, self._gate = inner, gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def step(self, action: Action) -> StepResult:
        if self._gate.armed:
            self._gate.entered.set()
            if not self._gate.release.wait(timeout=30):
                raise TimeoutError("the test never opened the gate")
        return self._inner.step(action)


@contextmanager
def running(config: ServeConfig, gate: Gate) -> Iterator[str]:
    spec = registry.get("triage")
    make = spec.make(OPTIONS)
    served = ServedEnv(spec, OPTIONS, lambda: HeldEnv(make(), gate), spec.rubric_for(OPTIONS),  # type: ignore[arg-type]
                       dict(spec.baselines(OPTIONS)))
    server = uvicorn.Server(uvicorn.Config(build_app(served, config), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the in-process server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        gate.release.set()
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture
def start() -> Iterator[Callable[..., tuple[str, Gate]]]:
    """`start(max_sessions=.., idle_timeout=..)`: a running server and its gate, stopped after the test."""
    with_servers: list[Any] = []

    def _start(**limits: Any) -> tuple[str, Gate]:
        gate = Gate()
        context = running(ServeConfig(**limits), gate)
        with_servers.append(context)
        return context.__enter__(), gate

    yield _start
    for context in with_servers:
        context.__exit__(None, None, None)


def rpc(url: str, method: str, **params: Any) -> dict:
    return httpx.post(url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                      timeout=30).json()


def ws(url: str, session_id: str | None = None):
    query = f"?session_id={session_id}" if session_id else ""
    return connect(url.replace("http://", "ws://") + "/ws" + query, open_timeout=10)


def ask(socket: Any, message: dict) -> dict:
    socket.send(json.dumps(message))
    return json.loads(socket.recv(timeout=30))


def active(url: str) -> int:
    return httpx.get(url + "/web/info").json()["limits"]["active_sessions"]


def until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _call_over_http(url: str, session_id: str, socket: Any) -> dict:
    return rpc(url, "tools/call", session_id=session_id, name="search_kb", arguments={"query": "vpn"})["result"]


def _call_over_ws(url: str, session_id: str, socket: Any) -> dict:
    message = {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "search_kb", "arguments": {"query": "vpn"}}}}
    return ask(socket, message)["data"]["result"]


@pytest.mark.parametrize("call", [_call_over_http, _call_over_ws], ids=["post-mcp", "ws-mcp-message"])
def test_health_answers_within_100_ms_while_a_slow_mcp_call_runs(start, call) -> None:
    url, gate = start()
    session_id = rpc(url, "openenv/session/create")["result"]["session_id"]
    with ws(url, session_id) as socket, httpx.Client(base_url=url, timeout=5) as health:
        assert ask(socket, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        assert health.get("/health").status_code == 200  # the connection is open before the clock starts
        gate.armed = True
        result: dict = {}
        caller = threading.Thread(target=lambda: result.update(call(url, session_id, socket)))
        caller.start()
        try:
            assert gate.entered.wait(timeout=10), "the tool call never reached the step"
            times = []
            for _ in range(5):
                began = time.perf_counter()
                assert health.get("/health").json() == {"status": "healthy"}
                times.append(time.perf_counter() - began)
            assert caller.is_alive()  # the call was still held while /health answered
        finally:
            gate.release.set()
            caller.join(timeout=30)
        assert max(times) < 0.1, times
    assert result["data"]["observation"]["events"][0]["name"] == "searched"


def test_sessions_created_over_mcp_count_against_the_cap(start) -> None:
    url, _ = start(max_sessions=2)
    session_id = rpc(url, "openenv/session/create")["result"]["session_id"]
    with ws(url, session_id) as attached, ws(url) as own:
        assert ask(attached, {"type": "reset", "data": {}})["type"] == "observation"
        assert ask(own, {"type": "reset", "data": {}})["type"] == "observation"
        assert active(url) == 2
        refused = rpc(url, "openenv/session/create")["error"]
        assert refused["data"] == {"active_sessions": 2, "max_sessions": 2}
        with ws(url) as extra:
            assert json.loads(extra.recv(timeout=10))["data"]["code"] == "CAPACITY_REACHED"
    assert until(lambda: active(url) == 0, 5)  # both ended with their sockets
    assert "result" in rpc(url, "openenv/session/create")


def test_an_mcp_session_lives_as_long_as_its_websocket(start) -> None:
    url, _ = start()
    session_id = rpc(url, "openenv/session/create")["result"]["session_id"]
    with ws(url, session_id) as socket:
        assert ask(socket, {"type": "reset", "data": {}})["type"] == "observation"
        assert rpc(url, "tools/list", session_id=session_id)["result"]["tools"]
    assert until(lambda: "Unknown session_id" in json.dumps(rpc(url, "tools/list", session_id=session_id)), 5)
    assert active(url) == 0


def test_mcp_sessions_without_a_websocket_are_closed_and_cannot_fill_the_cap(start) -> None:
    url, _ = start(max_sessions=4, idle_timeout=1)  # a session may wait min(10 s, idle timeout) for its socket
    created = time.monotonic()
    waiting = [rpc(url, "openenv/session/create")["result"]["session_id"] for _ in range(2)]
    refused = rpc(url, "openenv/session/create")["error"]["message"]
    assert "2 sessions created over HTTP are waiting for their WebSocket (at most 2)" in refused
    with ws(url) as socket:  # the rest of the cap is for clients that hold a connection
        assert ask(socket, {"type": "reset", "data": {}})["type"] == "observation"
    # closed after 1 s, well before OpenEnv's idle reaper first looks (5 s after the server started)
    assert until(lambda: active(url) == 0, 5) and time.monotonic() - created < 3
    for session_id in waiting:
        assert "Unknown session_id" in rpc(url, "tools/list", session_id=session_id)["error"]["message"]
    assert "result" in rpc(url, "openenv/session/create")
