"""`DrillEnvServer`: OpenEnv's `HTTPEnvServer`, with MCP sessions that cannot outlive their client.

OpenEnv's `POST /mcp` `openenv/session/create` makes a session that counts against `--max-sessions` like any other,
but nothing holds it: a client could post `max_sessions` creates, walk away, and keep every other client out
until the idle reaper runs (`--idle-timeout`, 600 s by default), then do it again. Here a session created over
HTTP is bound to a WebSocket, as OpenEnv's own `MCPToolClient` uses it (create, then attach `/ws?session_id=`
for reset and step, and call tools over `/mcp`):

* it lives as long as the WebSocket attached to it, and ends when that socket closes;
* one that gets no WebSocket within `min(ATTACH_WITHIN, idle_timeout)` seconds is closed;
* at most half the cap (rounded up) may be waiting for their WebSocket at once, so the rest of the cap can only
  be taken by clients that hold a connection.

A Drill session without a WebSocket could not play anyway: reset exists only on `/ws` (HTTP `/reset` is
stateless), and before a reset the session has no tools. Sessions opened by a WebSocket (`/ws`, `/mcp`) were
already bound to it.

It also hands each session its own executor (the single thread OpenEnv runs that session's reset and step on), so
MCP tool calls run there, off the event loop, as `/ws` steps do (`EpisodeSession.executor`).
"""

from __future__ import annotations

import asyncio
import math
from contextvars import ContextVar
from typing import Any

from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer

from drill.serve.session import EpisodeSession

__all__ = ["ATTACH_WITHIN", "DrillEnvServer"]

ATTACH_WITHIN = 10.0
"""Seconds a session created over HTTP may wait for its WebSocket (OpenEnv's client attaches at once)."""

_OVER_HTTP: ContextVar[bool] = ContextVar("drill_serve_over_http", default=False)
"""True while an HTTP request (not a WebSocket) is handled: the only place OpenEnv creates a session from is
`POST /mcp`'s `openenv/session/create`."""


class _MarkHttp:
    """ASGI middleware: sets `_OVER_HTTP` for HTTP requests."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        token = _OVER_HTTP.set(scope["type"] == "http")
        try:
            await self.app(scope, receive, send)
        finally:
            _OVER_HTTP.reset(token)


class DrillEnvServer(HTTPEnvServer):
    """See the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting: set[str] = set()
        """Sessions created over HTTP still within their time to attach a WebSocket."""
        self._timers: set[asyncio.Task] = set()

    @property
    def attach_within(self) -> float:
        timeout = self._session_idle_timeout_s
        return ATTACH_WITHIN if timeout is None else min(ATTACH_WITHIN, timeout)

    @property
    def max_waiting(self) -> int:
        return math.ceil(self._max_concurrent_envs / 2)

    def register_routes(self, app: Any, *args: Any, **kwargs: Any) -> None:
        super().register_routes(app, *args, **kwargs)
        app.add_middleware(_MarkHttp)

    async def _create_session(self) -> tuple[str, Any]:
        over_http = _OVER_HTTP.get()
        if over_http:
            waiting = self.unattached()
            if waiting >= self.max_waiting:
                raise SessionCapacityError(len(self._sessions), self._max_concurrent_envs, message=(
                    f"{waiting} sessions created over HTTP are waiting for their WebSocket (at most "
                    f"{self.max_waiting}): attach /ws?session_id=ID to a session within {self.attach_within:g} s "
                    "of creating it, or close it"))
        session_id, env = await super()._create_session()
        assert isinstance(env, EpisodeSession)
        env.executor = self._session_executors[session_id]
        if over_http:
            self._session_pending_closes.add(session_id)  # OpenEnv ends it when its attached WebSocket closes
            self._waiting.add(session_id)
            timer = asyncio.create_task(self._close_if_unattached(session_id))
            self._timers.add(timer)
            timer.add_done_callback(self._timers.discard)
        return session_id, env

    def unattached(self) -> int:
        """Sessions created over HTTP, alive, with no WebSocket attached yet."""
        return sum(1 for s in self._waiting if s in self._sessions and s not in self._session_websocket_attachments)

    async def _close_if_unattached(self, session_id: str) -> None:
        await asyncio.sleep(self.attach_within)
        self._waiting.discard(session_id)
        async with self._session_lock:  # checked and taken in one step, so a WebSocket cannot attach in between
            if session_id not in self._sessions or session_id in self._session_websocket_attachments:
                return
            env = self._sessions.pop(session_id)
            executor = self._session_executors.pop(session_id, None)
            stack = self._session_stacks.pop(session_id, None)
            self._session_info.pop(session_id, None)
            self._session_pending_closes.discard(session_id)
        await self._cleanup_session_resources(env, executor, stack)
