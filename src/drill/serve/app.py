"""The ASGI app of `drill serve`: OpenEnv's routes for one environment, Drill's limits, and the web page.

OpenEnv's `HTTPEnvServer` registers the protocol's routes exactly as the `openenv` package defines them:
`/health`, `/metadata`, `/schema`, `/reset`, `/step`, `/state`, `/mcp` (JSON-RPC: `tools/list`, `tools/call`,
`openenv/session/create|close`) and the `/ws` session (reset / step / state / close / mcp messages; the
`{"type": "observation", "data": {"observation", "reward", "done"}}` envelope; typed error frames such as
`CAPACITY_REACHED`). Each WebSocket (or MCP) session gets its own `EpisodeSession`; the server refuses sessions
past `max_sessions` and drops sessions idle for `idle_timeout` seconds. As in OpenEnv, HTTP `/reset` and
`/step` are stateless (a fresh environment per request); an episode is played over `/ws`.

Drill adds: the origin guard (`drill.serve.origins`: 403 for a cross-origin WebSocket handshake or request, and
for a browser at a Host outsiders can name), MCP sessions bound to a WebSocket and MCP tool calls off the event
loop (`drill.serve.server`), a request-body cap (413 past `max_body`; WebSocket messages past it close the socket
with 1009), 4xx answers with a message for every `ServeError`, validation answers that stay JSON whatever the bad
input held (NaN, lone surrogates), a VALIDATION_ERROR frame for a WebSocket message that is not a JSON object
(or is a binary frame), no FastAPI `/docs` or `/redoc` (CDN scripts on this origin), `/web` (the page, one static
file, served with a Content-Security-Policy that lets only its own inline script and style run and only its own
server be reached) and `/web/info` (the tasks by id and group, the roles, the policies
offered with their model and load status; never ground truth), and `withhold_policy` (a baseline, such as the
oracle whose actions are the gold, that no client may ask for).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
import re
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from openenv.core.env_server.types import ConcurrencyConfig

from drill.serve.config import ServeConfig
from drill.serve.origins import OriginGuard
from drill.serve.server import DrillEnvServer
from drill.serve.session import DrillAction, DrillObservation, DrillState, ServedEnv, ServeError, session_class

__all__ = ["ServeConfig", "build_app"]


class BodyLimit:
    """ASGI middleware: a request body over `max_body` bytes gets 413 before the app sees it."""

    def __init__(self, app: Any, max_body: int) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return await self._refuse(send)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body:
                return await self._refuse(send)
            more = message.get("more_body", False)
        body, sent = b"".join(chunks), False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Any) -> None:
        response = JSONResponse({"detail": f"request body over the {self.max_body}-byte limit"}, status_code=413)
        await response({"type": "http"}, None, send)  # type: ignore[arg-type]


class NonObjectFrames:
    """ASGI middleware: a WebSocket message that is JSON but not an object (`[]`, `7`, `null`), or a binary frame,
    gets OpenEnv's VALIDATION_ERROR frame and the session goes on (OpenEnv's handler would end the session on it)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)

        async def checked() -> dict:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                text = message.get("text")
                if text is None:  # a binary frame: OpenEnv's handler would end the session with "'text'"
                    problem = (f"a message must be a text frame holding a JSON object, got a binary frame of "
                               f"{len(message.get('bytes') or b'')} bytes")
                elif text.lstrip()[:1] == "{":
                    return message
                else:
                    try:
                        value = json.loads(text)
                    except (ValueError, RecursionError):
                        return message  # OpenEnv answers INVALID_JSON itself
                    if isinstance(value, dict):
                        return message
                    problem = f"a message must be a JSON object, got {type(value).__name__}"
                frame = {"type": "error", "data": {"message": problem, "code": "VALIDATION_ERROR"}}
                await send({"type": "websocket.send", "text": json.dumps(frame)})

        await self.app(scope, checked, send)


def _json_safe(value: Any) -> Any:
    """Validation details as JSON: the echoed input may hold NaN, infinities, bytes or lone surrogates."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")[:600]
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)[:600]


def build_app(served: ServedEnv, config: ServeConfig = ServeConfig()) -> FastAPI:
    """The app serving `served` with `config`'s limits. See the module docstring. ValueError for a
    `withhold_policy` that `served` does not offer."""
    if config.withhold_policy:
        unknown = sorted(set(config.withhold_policy) - set(served.policies))
        if unknown:
            raise ValueError(f"no policy {', '.join(map(repr, unknown))} to withhold; the policies are "
                             f"{', '.join(served.policies)}")
        served = dataclasses.replace(served, policies={name: factory for name, factory in served.policies.items()
                                                       if name not in config.withhold_policy})
    spec = served.spec
    # no /docs or /redoc: FastAPI's pages run scripts from a CDN (swagger-ui-dist@5, unpinned) on this origin, which
    # the origin guard lets open sessions; /openapi.json (what openenv validate reads) stays
    app = FastAPI(title=f"drill serve {spec.name}", description=spec.summary, docs_url=None, redoc_url=None)
    server = DrillEnvServer(session_class(served), DrillAction, DrillObservation, env_name=spec.name,
                           state_cls=DrillState,
                           concurrency_config=ConcurrencyConfig(max_concurrent_envs=config.max_sessions,
                                                                session_timeout=config.idle_timeout))

    @app.exception_handler(ServeError)
    async def _serve_error(_: Request, exc: ServeError) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _json_safe(exc.errors())}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(_: Request, exc: HTTPException) -> JSONResponse:  # OpenEnv's 422 carries the bad input
        return JSONResponse({"detail": _json_safe(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    server.register_routes(app)

    @app.get("/web/info", tags=["Drill"])
    def info() -> dict[str, Any]:
        """The page's menus: tasks (id, split, group), roles, env options and the policies this server offers."""
        policies = {}
        for name, factory in served.policies.items():
            policies[name] = factory().info.model_dump(mode="json")
        return {
            "env": spec.name, "summary": spec.summary, "options": dict(served.options), "roles": list(served.roles),
            "group_name": spec.group_name,
            "tasks": [{"id": t.id, "split": t.split, "group": spec.group(t) if spec.group else None}
                      for t in served.tasks.values()],
            "policies": policies, "weights": served.rubric.weights,
            "limits": {"max_sessions": config.max_sessions, "idle_timeout": config.idle_timeout,
                       "max_body": config.max_body, "active_sessions": server.active_sessions},
        }

    html = resources.files("drill.serve").joinpath("web/index.html").read_text(encoding="utf-8")
    headers = {"Content-Security-Policy": page_policy(html), "X-Content-Type-Options": "nosniff",
               "Referrer-Policy": "no-referrer"}

    @app.get("/web", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(html, headers=headers)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/web")

    app.state.openenv = server
    app.add_middleware(BodyLimit, max_body=config.max_body)
    app.add_middleware(NonObjectFrames)
    app.add_middleware(OriginGuard, allowed=config.origins())
    return app


def page_policy(html: str) -> str:
    """The page's Content-Security-Policy: nothing loads or runs but its own inline `<script>` and `<style>` (allowed
    by hash, so an injected script or style would not run), it talks only to its own server (`connect-src 'self'`
    covers its WebSocket), and no other site may frame it."""
    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
        if not blocks:
            raise ValueError(f"the page has no inline <{tag}> to allow")
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks)

    return (f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; connect-src 'self'; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
