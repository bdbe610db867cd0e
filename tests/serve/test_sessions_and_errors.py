"""Sessions are isolated, limited and expire; bad input gets a 4xx (or OpenEnv's typed error frame on /ws) with a
message, never a 500 and never a crash."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from drill import registry
from drill.core import run_episodes
from drill.serve import RemoteEnv, RemoteEnvError
from drill.serve.session import DrillAction, ServedEnv, ServeError, session_class

FLAGS = ("--mode", "agent", "--max-sessions", "3", "--idle-timeout", "1", "--max-body", "4096")


@pytest.fixture(scope="module")
def server(serve):
    return serve("triage", *FLAGS)


def ws(url: str, query: str = ""):
    return connect(url.replace("http://", "ws://") + "/ws" + query, open_timeout=10)


def ask(socket, message) -> dict:
    socket.send(message if isinstance(message, str | bytes) else json.dumps(message))
    return json.loads(socket.recv(timeout=30))


@pytest.mark.parametrize(("body", "status", "says"), [
    ('{"seed": ', 422, "JSON decode error"),
    ('{"seed": "zero"}', 422, "integer"),
    ('{"seed": -1}', 422, "greater than or equal"),
    ('{"task_id": "T-nope"}', 404, "no task 'T-nope'"),
    ('{"colour": "red"}', 422, "unknown reset field(s) colour"),
    ('{"seed": 0, "pad": "' + "x" * 5000 + '"}', 413, "4096-byte limit"),
])
def test_bad_reset_requests_get_a_4xx_with_a_message(server, body: str, status: int, says: str) -> None:
    response = httpx.post(server.url + "/reset", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert says in json.dumps(response.json())


def test_bad_step_requests_get_a_4xx(server) -> None:
    assert httpx.post(server.url + "/step", json={"actionz": {}}).status_code == 422
    assert httpx.post(server.url + "/step", json={"action": {"tool": 5}}).status_code == 422
    assert httpx.post(server.url + "/step", json={"action": {"tool": "x", "colour": 1}}).status_code == 422
    stateless = httpx.post(server.url + "/step", json={"action": {"tool": "search_kb"}})
    assert stateless.status_code == 409 and "reset first" in stateless.json()["detail"]
    chunked = httpx.post(server.url + "/reset", content=iter([b'{"seed": 0, "x": "', b"y" * 5000, b'"}']))
    assert chunked.status_code == 413


def test_websocket_errors_are_typed_frames_and_the_session_goes_on(server) -> None:
    with ws(server.url) as socket:
        assert ask(socket, "{nope")["data"]["code"] == "INVALID_JSON"
        assert ask(socket, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert ask(socket, {"type": "step", "data": {"tool": "x"}})["data"]["message"].startswith("no episode")
        assert ask(socket, {"type": "reset", "data": {"seed": True}})["data"]["message"].startswith("seed must")
        first = ask(socket, {"type": "reset", "data": {"seed": 0}})
        assert first["type"] == "observation" and first["data"]["reward"] is None
        frame = ask(socket, {"type": "step", "data": {"tool": 1}})
        assert frame["data"]["code"] == "VALIDATION_ERROR"
        frame = ask(socket, {"type": "step", "data": {"policy": "gpt-9"}})
        assert "no policy 'gpt-9'; it offers: random, heuristic, oracle" in frame["data"]["message"]
        # an agent's bad tool call is not a protocol error: an error observation and an invalid_action event
        frame = ask(socket, {"type": "step", "data": {"tool": "rm_rf", "arguments": {"path": "/"}}})
        assert frame["type"] == "observation" and "unknown tool 'rm_rf'" in frame["data"]["observation"]["error"]
        while not frame["data"]["done"]:
            frame = ask(socket, {"type": "step", "data": {"policy": "oracle"}})
        assert frame["data"]["reward"] == frame["data"]["observation"]["score"]["total"]
        after = ask(socket, {"type": "step", "data": {"policy": "oracle"}})
        assert after["type"] == "error" and "episode has ended" in after["data"]["message"]
        assert ask(socket, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"  # and it goes on


def test_too_many_sessions_are_refused_with_capacity_reached(server) -> None:
    with ExitStack() as stack:
        sockets = [stack.enter_context(ws(server.url)) for _ in range(3)]
        for socket in sockets:
            assert ask(socket, {"type": "reset", "data": {}})["type"] == "observation"
        with ws(server.url) as extra:
            refusal = json.loads(extra.recv(timeout=10))  # sent as the socket opens, then the server closes it
        assert refusal["data"]["code"] == "CAPACITY_REACHED"
        assert refusal["data"]["max_sessions"] == 3 and "3" in refusal["data"]["message"]
    time.sleep(0.5)
    with ws(server.url) as again:  # the slots are free once those sessions close
        assert ask(again, {"type": "reset", "data": {}})["type"] == "observation"


def _mcp(server, method: str, **params) -> dict:
    return httpx.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()


def test_unknown_and_idle_sessions_are_refused(server) -> None:
    with ws(server.url, "?session_id=not-a-session") as socket:
        assert "Unknown session_id" in json.loads(socket.recv(timeout=10))["data"]["message"]
    assert "Unknown session_id" in _mcp(server, "tools/list", session_id="not-a-session")["error"]["message"]
    session = _mcp(server, "openenv/session/create")["result"]["session_id"]
    assert _mcp(server, "tools/list", session_id=session)["result"] == {"tools": []}  # no episode yet
    with ws(server.url) as socket:
        assert ask(socket, {"type": "reset", "data": {}})["type"] == "observation"
        time.sleep(11)  # idle timeout 1 s; OpenEnv's reaper looks every max(timeout / 4, 5) s; every call is activity
        assert "Unknown session_id" in _mcp(server, "tools/list", session_id=session)["error"]["message"]
        expired = ask(socket, {"type": "step", "data": {"policy": "oracle"}})
        assert expired["type"] == "error" and "idle for longer than the server's --idle-timeout" in \
            expired["data"]["message"]


def test_sessions_never_see_each_other(server) -> None:
    """Two sessions, interleaved turn by turn on different tasks and seeds, each equal the episode played alone."""
    spec = registry.get("triage")
    options = {"mode": "agent"}
    tasks = spec.make(options)().tasks("test")
    jobs = [(tasks[0], 0), (tasks[1], 5)]
    policy = spec.baselines(options)["random"]()
    rubric = spec.rubric_for(options)
    remote = run_episodes(lambda: RemoteEnv(server.url, spec.make(options)()), jobs, policy, rubric)
    local = run_episodes(spec.make(options), jobs, policy, rubric)
    assert [e.model_dump_json() for e in remote] == [e.model_dump_json() for e in local]


def test_the_client_says_why_the_server_refused(server) -> None:
    spec = registry.get("triage")
    env = RemoteEnv(server.url, spec.make({"mode": "agent"})())
    with pytest.raises(RemoteEnvError, match="no task"):
        env.reset(spec.make({})().tasks("test")[0].model_copy(update={"id": "T-missing"}), 0)
    with pytest.raises(RemoteEnvError, match="cannot reach"):
        RemoteEnv("http://127.0.0.1:9", spec.make({"mode": "agent"})()).reset(env.tasks()[0], 0)
    with pytest.raises(RemoteEnvError, match="refused the WebSocket: .*HTTP 403"):  # no /ws under this prefix
        RemoteEnv(server.url + "/elsewhere", spec.make({"mode": "agent"})()).reset(env.tasks()[0], 0)


def test_an_oversized_websocket_message_closes_that_socket_only(server) -> None:
    with ws(server.url) as socket:
        socket.send(json.dumps({"type": "step", "data": {"tool": "search_kb", "arguments": {"query": "x" * 5000}}}))
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert httpx.get(server.url + "/health").json() == {"status": "healthy"}


NASTY = ['', 'null', '[]', '"text"', '1e999', '{"a": NaN}', '\xff\xfe', '{"seed": 1e30}', '{"seed": 9223372036854775808}',
         '{"episode_id": "' + 'e' * 300 + '"}', '{"task_id": {"$ne": 1}}', '{"running_score": "yes"}',
         '{"action": null}', '{"action": {"tool": NaN}}', '{"action": {"tool": "\\ud800x", "colour": Infinity}}', '{"action": []}', '{"action": {"arguments": "\\ud800"}}', '{"action": {"policy": 5}}',
         '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x", "arguments": 5}, "id": 1}',
         '{"jsonrpc": "2.0", "method": "tools/list", "params": [], "id": 1}']


@pytest.mark.parametrize("route", ["/reset", "/step", "/mcp"])
def test_no_body_makes_the_server_answer_500(server, route: str) -> None:
    for body in NASTY:
        response = httpx.post(server.url + route, content=body.encode("utf-8", "surrogatepass"),
                              headers={"content-type": "application/json"})
        assert response.status_code < 500, (body, response.status_code, response.text)
    for path in ("/state", "/schema", "/metadata", "/web/info", "/web", "/nope"):
        assert httpx.get(server.url + path).status_code < 500


WS_NASTY = ['{"type": "step", "data": {"tool": "\\ud800", "colour": NaN}}', '{"type": "reset", "data": []}',
            '{"type": "reset", "data": {"seed": 1e999}}', '{"type": "reset", "data": {"episode_id": 5}}',
            '{"type": "step", "data": {"tool": "search_kb", "arguments": {"query": "\\ud800\\u0000"}}}',
            '{"type": "step", "data": {"policy": ["oracle"]}}', '{"type": ["reset"]}', '[]', '7', 'null',
            ('{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "search_kb", '
             '"arguments": {"query": 5}}, "id": 1}}')]


def test_nasty_websocket_messages_get_error_frames_and_the_session_goes_on(server) -> None:
    with ws(server.url) as socket:
        assert ask(socket, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        for message in WS_NASTY:
            reply = ask(socket, message)
            assert reply["type"] in ("error", "observation", "mcp"), (message, reply)
        assert ask(socket, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


def test_a_session_keeps_one_built_policy_set_per_assignment_however_it_is_spelled() -> None:
    """Policy steps cached by their text let one session grow without end (200 spellings of 'heuristic', 0.9 MB
    of spaces each, took the server from 385 to 559 MB); cached by what they assign, it stays one entry."""
    spec = registry.get("chaosops")
    served = ServedEnv(spec, {}, spec.make({}), spec.rubric_for({}), dict(spec.baselines({})))
    session = session_class(served)()
    session.reset(seed=0)
    named = ",".join(f"{role}=heuristic" for role in served.roles)
    for text in ("heuristic", " heuristic", "heuristic,", ",, heuristic ,", " " * 1000 + "heuristic", named):
        if session.env.done:
            session.reset(seed=0)
        assert session.step(DrillAction(policy=text)).policy["name"] == "heuristic"
    assert len(session.policy_cache) == 1
    with pytest.raises(ServeError, match="no policy 'nope'"):
        session.step(DrillAction(policy="nope"))


def test_a_binary_frame_gets_an_error_frame_and_the_session_goes_on(server) -> None:
    """OpenEnv's handler reads text frames only: a binary one ended the session with the message "'text'"."""
    with ws(server.url) as socket:
        assert ask(socket, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        reply = ask(socket, b'{"type": "step", "data": {"policy": "random"}}')
        assert reply["data"]["code"] == "VALIDATION_ERROR" and "binary frame of 46 bytes" in reply["data"]["message"]
        assert ask(socket, {"type": "step", "data": {"policy": "random"}})["type"] == "observation"


def test_a_withheld_policy_is_not_offered_and_cannot_play_a_turn() -> None:
    """Any client may ask for an offered policy's turn, and the oracle's action is the gold (its answer, fix or
    rogue): `--withhold-policy oracle` serves an environment without it."""
    from starlette.testclient import TestClient

    from drill.serve.app import build_app
    from drill.serve.config import ServeConfig

    spec = registry.get("chaosops")
    served = ServedEnv(spec, {}, spec.make({}), spec.rubric_for({}), dict(spec.baselines({})))
    with TestClient(build_app(served, ServeConfig(withhold_policy=("oracle",)))) as client:
        assert "oracle" not in client.get("/web/info").json()["policies"]
        with client.websocket_connect("/ws") as socket:
            socket.send_json({"type": "reset", "data": {"seed": 0}})
            assert socket.receive_json()["type"] == "observation"
            for policy in ("oracle", "heuristic,sre=oracle"):
                socket.send_json({"type": "step", "data": {"policy": policy}})
                reply = socket.receive_json()
                assert reply["type"] == "error" and "no policy 'oracle'" in reply["data"]["message"], reply
            socket.send_json({"type": "step", "data": {"policy": "heuristic"}})
            assert socket.receive_json()["type"] == "observation"
    with pytest.raises(ValueError, match="no policy 'orakel' to withhold"):
        build_app(served, ServeConfig(withhold_policy=("orakel",)))
