"""Which browser pages may talk to `drill serve`, and which names it answers to.

`drill serve` has no authentication: anything that reaches the port can play. Non-browser clients (OpenEnv's
`GenericEnvClient` and `MCPToolClient`, `openenv validate`, `drill eval --env-url`, curl) send no `Origin` header
and pass. What this module stops is a web page the user merely opens in a browser:

* a page on another origin opening `/ws` (browsers let any page open a WebSocket anywhere and label it only with
  `Origin`) or posting to `/mcp` (a "simple" text/plain POST needs no CORS preflight): a request whose `Origin` is
  neither this server's own page nor one given with `--allow-origin` gets 403; so does `Origin: null` (sandboxed
  frames, `file:` and `data:` pages, which any site can produce);
* DNS rebinding: a page on `evil.example` whose name is re-pointed at 127.0.0.1 is, to the browser, same-origin
  with the server, and sends `Host: evil.example:8000` and `Origin: http://evil.example:8000`. So the server's own
  origin is taken from `Host` only once `Host` is a name no outsider controls: `localhost`, an IP address (an
  address cannot be rebound), or the host of an `--allow-origin`. A browser (a request with `Origin` or the
  `Sec-Fetch-*` headers every current browser sends) at any other name gets 403 on every route, so a rebound page
  cannot even read `/web/info`; a tool reaching the server by a host name (`drill eval --env-url
  http://gpu-box:8000`) sends neither and passes.

Origins compare exactly, as browsers serialize them: scheme, host and port, case-folded and with the default port
made explicit, so `http://127.0.0.1.evil.example`, `http://localhost:8001` (another port) and
`https://localhost:8000` (another scheme) are all other origins.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = ["Origin", "OriginGuard", "parse_origin"]

_HOST = r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)"
_ORIGIN = re.compile(rf"(https?)://{_HOST}(?::([0-9]{{1,5}}))?", re.IGNORECASE)
_HOST_HEADER = re.compile(rf"{_HOST}(?::([0-9]{{1,5}}))?")
_DEFAULT_PORT = {"http": 80, "https": 443}


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


def _host(text: str) -> str:
    """A host as compared: lower case; an IPv6 literal in brackets, checked."""
    host = text.lower()
    if host.startswith("["):
        ipaddress.IPv6Address(host[1:-1])  # ValueError for a malformed literal
    return host


def _port(text: str | None, default: int) -> int:
    port = default if text is None else int(text)
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is out of range")
    return port


def parse_origin(text: str) -> Origin:
    """`scheme://host[:port]` (http or https, nothing after the port) as an `Origin`; ValueError otherwise.

    `null` and `*` are refused on purpose: `null` is what any sandboxed frame sends, and `*` would undo the guard."""
    match = _ORIGIN.fullmatch(text.strip())
    try:
        if match is None:
            raise ValueError
        scheme = match.group(1).lower()
        return Origin(scheme, _host(match.group(2)), _port(match.group(3), _DEFAULT_PORT[scheme]))
    except ValueError:
        raise ValueError(f"{text[:100]!r} is not an origin: write scheme://host[:port], e.g. http://localhost:3000 "
                         "(http or https, a port from 1 to 65535, no path or trailing slash; 'null' and '*' are "
                         "never allowed)") from None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class OriginGuard:
    """ASGI middleware: 403 for a browser at a `Host` outsiders can name (every route) and for a request or WebSocket
    handshake whose `Origin` is not allowed. See the module docstring."""

    def __init__(self, app: Any, allowed: Iterable[Origin] = ()) -> None:
        self.app = app
        self.allowed = frozenset(allowed)
        self.hosts = frozenset({"localhost"} | {o.host for o in self.allowed})

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refusal = self.refusal([(k.lower(), v) for k, v in scope.get("headers") or []])
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "http":
            return await _send_403(send, "http.response", refusal)
        if "websocket.http.response" in scope.get("extensions", {}):
            return await _send_403(send, "websocket.http.response", refusal)
        await send({"type": "websocket.close", "code": 1008})  # before accept: the server answers 403

    def refusal(self, headers: list[tuple[bytes, bytes]]) -> str | None:
        """Why a request with these headers is refused, or None to let it through."""
        hosts = [v for k, v in headers if k == b"host"]
        origins = [v for k, v in headers if k == b"origin"]
        if len(hosts) > 1 or len(origins) > 1:
            return "more than one Host or Origin header"
        host = self._host(hosts[0].decode("latin-1")) if hosts else None
        browser = bool(origins) or any(k.startswith(b"sec-fetch-") for k, _ in headers)
        if hosts and host is None and browser:
            return (f"Host {hosts[0].decode('latin-1')[:100]!r} is not a name this server answers browsers at: open "
                    "it as localhost or by IP address, or add the page's origin with --allow-origin (this guards "
                    "against DNS rebinding)")
        if not origins:
            return None  # not a browser: OpenEnv's clients, openenv validate, drill eval --env-url, curl
        text = origins[0].decode("latin-1")
        try:
            origin = parse_origin(text)
        except ValueError:
            origin = None
        if origin is not None and (origin in self.allowed or (origin.scheme == "http" and origin[1:] == host)):
            return None
        return (f"cross-origin request refused: a page at {text[:100]!r} may not use this server (allowed: its own "
                "page, and origins given with --allow-origin)")

    def _host(self, text: str) -> tuple[str, int] | None:
        """The Host header as (host, port) if this server answers to that name, else None."""
        match = _HOST_HEADER.fullmatch(text)
        if match is None:
            return None
        try:
            host, port = _host(match.group(1)), _port(match.group(2), 80)
        except ValueError:
            return None
        return (host, port) if host in self.hosts or _is_address(host) else None


async def _send_403(send: Any, kind: str, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": f"{kind}.start", "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": f"{kind}.body", "body": body})
