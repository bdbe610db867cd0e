"""`drill serve` talks to its own page, to `--allow-origin` pages and to clients that send no Origin; any other
browser page gets 403 on the WebSocket handshake and on /mcp, and a Host outsiders can name (DNS rebinding) gets
403 everywhere. The page's Content-Security-Policy lets only its own inline script and style run."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
from urllib.parse import urlsplit

import httpx
import pytest
from typer.testing import CliRunner
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from drill.cli import app
from drill.serve.origins import parse_origin

ALLOWED = "http://app.example:3000"


@pytest.fixture(scope="module")
def server(serve):
    return serve("triage", "--mode", "agent", "--allow-origin", ALLOWED)


def ws(server, origin: str | None = None, host: str | None = None):
    """A handshake to /ws from a page at `origin`; with `host`, to that name, resolved (as a rebinding attacker's
    DNS would) to this server's loopback address."""
    url = f"ws://{host or urlsplit(server.url).netloc}/ws"
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return connect(url, sock=sock, origin=origin, open_timeout=10)  # type: ignore[arg-type]


def refused_handshake(server, origin: str | None, host: str | None = None) -> str:
    with pytest.raises(InvalidStatus) as refused:
        ws(server, origin, host).close()
    assert refused.value.response.status_code == 403
    return json.loads(refused.value.response.body)["detail"]


def plays(socket_) -> bool:
    socket_.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
    return json.loads(socket_.recv(timeout=30))["type"] == "observation"


@pytest.mark.parametrize("origin", [
    "http://evil.example", "https://evil.example", "null", "http://127.0.0.1.evil.example:{port}",
    "http://127.0.0.1:{other}", "https://127.0.0.1:{port}", "http://localhost:{port}@evil.example",
    "http://app.example:3001", "https://app.example:3000", "http://app.example", "http://app.example:3000/",
    "http://app.example.evil:3000", "file://", "", "http://127.0.0.1:{port}, http://evil.example",
])
def test_a_cross_origin_websocket_handshake_is_refused_with_403(server, origin: str) -> None:
    origin = origin.format(port=server.port, other=server.port + 1)
    assert "cross-origin request refused" in refused_handshake(server, origin)


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1:{port}", ALLOWED, "HTTP://APP.Example:3000"])
def test_its_own_page_an_allowed_origin_and_clients_without_origin_open_sessions(server, origin: str | None) -> None:
    with ws(server, origin and origin.format(port=server.port)) as socket_:
        assert plays(socket_)


def test_its_own_page_by_name_and_by_ipv4_or_allowed_host(server) -> None:
    with ws(server, f"http://localhost:{server.port}", host=f"localhost:{server.port}") as socket_:
        assert plays(socket_)
    with ws(server, ALLOWED, host="app.example:3000") as socket_:  # behind a proxy that keeps the Host
        assert plays(socket_)


def test_dns_rebinding_is_refused_on_every_route(server) -> None:
    """A page on evil.example re-pointed at 127.0.0.1 is same-origin to the browser: Host and Origin agree."""
    host = f"evil.example:{server.port}"
    assert "DNS rebinding" in refused_handshake(server, f"http://{host}", host=host)
    same_origin_get = {"Host": host, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}  # no Origin on a GET
    for method, path, headers in [("GET", "/web/info", same_origin_get), ("GET", "/web", same_origin_get),
                                  ("POST", "/reset", {"Host": host, "Origin": f"http://{host}"}),
                                  ("POST", "/mcp", {"Host": host, "Origin": f"http://{host}"})]:
        response = httpx.request(method, server.url + path, json={}, headers=headers)
        assert response.status_code == 403 and "DNS rebinding" in response.json()["detail"], (method, path)
    for trick in ("127.0.0.1.evil.example", "localhost.", "0x7f000001", "127.1", "[::1", "localhost:99999"):
        assert httpx.get(server.url + "/health", headers={"Host": trick, "Sec-Fetch-Mode": "cors"}).status_code == 403


def test_a_tool_reaching_the_server_by_host_name_is_served(server) -> None:
    """No Origin, no Sec-Fetch-*: not a browser, so no rebinding victim (`drill eval --env-url http://gpu-box:8000`)."""
    assert httpx.get(server.url + "/health", headers={"Host": f"gpu-box:{server.port}"}).status_code == 200
    with ws(server, host=f"gpu-box:{server.port}") as socket_:
        assert plays(socket_)


def _create(server, **headers: str) -> httpx.Response:
    return httpx.post(server.url + "/mcp", content=json.dumps({"jsonrpc": "2.0", "id": 1,
                                                               "method": "openenv/session/create", "params": {}}),
                      headers={"content-type": "text/plain", **headers})  # a "simple" request: no CORS preflight


def test_mcp_from_another_origin_is_refused_and_opens_no_session(server) -> None:
    before = httpx.get(server.url + "/web/info").json()["limits"]["active_sessions"]
    for origin in ("http://evil.example", "null", f"http://localhost:{server.port + 1}"):
        refused = _create(server, origin=origin)
        assert refused.status_code == 403 and "cross-origin request refused" in refused.json()["detail"]
    assert httpx.get(server.url + "/web/info").json()["limits"]["active_sessions"] == before
    for headers in ({}, {"origin": ALLOWED}, {"origin": f"http://127.0.0.1:{server.port}"}):
        created = _create(server, **headers).json()["result"]["session_id"]
        closed = httpx.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "openenv/session/close",
                                                       "params": {"session_id": created}})
        assert closed.json()["result"]["closed"] is True


def test_two_origin_or_host_headers_are_refused(server) -> None:
    twice = [("origin", ALLOWED), ("origin", "http://evil.example")]
    assert httpx.get(server.url + "/health", headers=twice).status_code == 403


def test_the_page_has_a_content_security_policy_that_allows_only_its_own_script_and_style(server) -> None:
    page = httpx.get(server.url + "/web")
    policy = dict(part.strip().split(" ", 1) for part in page.headers["content-security-policy"].split(";"))
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    assert policy["connect-src"] == "'self'" and policy["base-uri"] == "'none'"
    for tag in ("script", "style"):
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page.text, flags=re.DOTALL)
        digests = {f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks}
        assert blocks and set(policy[f"{tag}-src"].split()) == digests
    assert page.headers["x-content-type-options"] == "nosniff"
    # the only HTML it serves: FastAPI's /docs and /redoc would run a CDN's scripts on this origin, which may open
    # sessions (the origin guard lets its own pages through); the schema openenv validate reads stays
    paths = ("/docs", "/redoc", "/openapi.json")
    assert [httpx.get(server.url + path).status_code for path in paths] == [404, 404, 200]


@pytest.mark.parametrize("value", ["null", "*", "evil.example", "http://evil.example/", "ftp://evil.example",
                                   "http://evil.example:0", "http://user@evil.example"])
def test_a_bad_allow_origin_stops_the_command_in_one_line(value: str) -> None:
    result = CliRunner().invoke(app, ["serve", "triage", "--allow-origin", value])
    assert result.exit_code == 2
    assert "--allow-origin" in result.output and "is not an origin" in result.output
    assert len(result.output.strip().splitlines()) <= 2  # one message (rich may wrap it once)


def test_origins_compare_as_browsers_serialize_them() -> None:
    assert parse_origin("HTTP://LocalHost") == parse_origin("http://localhost:80")
    assert parse_origin("https://[::1]:8443").host == "[::1]"
    with pytest.raises(ValueError):
        parse_origin("http://[::g]:80")
