"""`drill serve` speaks OpenEnv: the real `openenv` client (from PyPI) drives every registered environment
through reset -> steps -> done with no adapter code, its MCP tool client calls Drill's tools, and
`openenv validate --url` passes against the running server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from openenv import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from drill import registry
from drill.core import PolicyInput, run_episodes
from drill.core.spec import EnvSpec
from drill.core.types import Episode, Event, Observation, Turn

SPECS = list(registry.specs().values())
BUNDLED = [s for s in SPECS if s.load.__module__.startswith("drill.envs.")]  # every environment Drill ships


def play_with_openenv_client(url: str, spec: EnvSpec, task_id: str, seed: int) -> tuple[Episode, dict]:
    """An episode played over /ws by OpenEnv's GenericEnvClient, its actions chosen client-side by the oracle from
    the observations that came over the wire (the client holds the task, as a trainer does)."""
    env = spec.make({})()
    task = env.task(task_id)
    oracle = {role: spec.baselines({})["oracle"]() for role in env.roles}
    turns: list[Turn] = []
    with GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(task_id=task_id, seed=seed)
        assert result.reward is None and not result.done
        while not result.done:
            fields = result.observation
            observation = Observation.model_validate({k: fields[k] for k in
                                                      ("role", "content", "step", "tools", "instructions", "error")})
            action = oracle[observation.role].act([PolicyInput(task, seed, observation, tuple(turns))])[0]
            result = client.step({"tool": action.tool, "arguments": action.arguments})
            assert result.observation["acted"] == observation.role
            events = [Event.model_validate(e) for e in result.observation["events"]]
            turns.append(Turn(index=len(turns), role=observation.role, observation=observation, action=action,
                              events=events, policy=oracle[observation.role].info.name))
            assert (result.reward is None) == (not result.done)  # the reward is the rubric total, at the end only
        final = result.observation
        state = client.state()
    assert state["done"] and state["step_count"] == len(turns) and state["task_id"] == task_id
    episode = Episode(env=spec.name, task_id=task_id, seed=seed, turns=turns, events=[e for t in turns for e in t.events],
                      policies={r: oracle[r].info for r in env.roles}, done=True)
    return episode.model_copy(update={"score": spec.rubric_for({}).score(episode, task)}), final


@pytest.mark.parametrize("spec", BUNDLED, ids=[s.name for s in BUNDLED])
def test_the_openenv_client_plays_every_environment_to_the_end(serve, spec: EnvSpec) -> None:
    server = serve(spec.name)
    env = spec.make({})()
    task = env.tasks("test")[-1]
    remote, final = play_with_openenv_client(server.url, spec, task.id, seed=3)
    local = run_episodes(spec.make({}), [(task, 3)], spec.baselines({})["oracle"](), spec.rubric_for({}))[0]
    assert remote.model_dump_json() == local.model_dump_json()
    assert final["score"]["total"] == pytest.approx(local.score.total)
    assert set(final["score"]["components"]) == set(local.score.components)
    # ground truth stays on the server: no field of the task but its id is named in what came back
    secret = set(type(task).model_fields) - {"id", "split"}
    assert not secret & set(final) and not secret & set(final["score"])


def test_multi_role_env_says_whose_turn_it_is_and_server_policies_play_it(serve) -> None:
    server = serve("chaosops")
    roles = registry.get("chaosops").make({})().roles
    seen = []
    with GenericEnvClient(base_url=server.url).sync() as client:
        result = client.reset(seed=1)
        while not result.done:
            seen.append(result.observation["role"])
            result = client.step({"policy": "oracle"})
            assert result.observation["policy"]["name"] == "oracle"
    assert set(seen) == set(roles) and len(seen) > len(roles)
    assert result.reward == result.observation["score"]["total"] > 0


def test_the_mcp_tool_client_lists_and_calls_the_acting_roles_tools(serve) -> None:
    server = serve("triage", "--mode", "agent")
    with MCPToolClient(base_url=server.url).sync() as client:
        client.reset(seed=0)
        tools = client.list_tools()
        assert {t.name for t in tools} >= {"search_kb", "get_article", "submit_resolution"}
        assert tools[0].input_schema["type"] == "object"
        out = client.call_tool("search_kb", query="certificate expired")
        assert out["done"] is False and out["observation"]["events"][0]["name"] == "searched"
        bad = client.call_tool("get_article", article_id=7)  # wrong type: an error observation, never a crash
        assert "article_id" in bad["observation"]["error"]
        assert bad["observation"]["events"][0]["name"] == "invalid_action"


def test_openenv_validate_passes_against_the_running_server(serve) -> None:
    server = serve("triage")
    openenv = Path(sys.executable).parent / "openenv"
    done = subprocess.run([str(openenv), "validate", "--url", server.url, "--json"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "simulation"
    assert all(c["passed"] for c in report["criteria"]), report["criteria"]
    assert {c["id"] for c in report["criteria"]} >= {"health_endpoint", "metadata_endpoint", "schema_endpoint",
                                                      "mcp_endpoint", "mode_endpoint_consistency"}


def test_a_model_policy_the_server_started_with_plays_turns_and_shows_its_model(serve) -> None:
    """`drill serve --policy openai:MODEL` (here a loopback stub of an OpenAI-compatible server): offered on /web/info
    with its model and load status, and every turn it plays says so."""
    import httpx

    from drill.models.testing import StubOpenAIServer, text_reply

    reply = '<tool_call>{"name": "search_kb", "arguments": {"query": "certificate expired"}}</tool_call>'
    with StubOpenAIServer(text_reply(lambda request: reply)) as stub:
        server = serve("triage", "--mode", "agent", "--policy", "openai:stub-model", "--base-url", stub.base_url)
        offered = httpx.get(server.url + "/web/info").json()["policies"]
        assert set(offered) == {"random", "heuristic", "oracle", "openai:stub-model"}
        assert offered["openai:stub-model"]["model"] == "stub-model"
        with GenericEnvClient(base_url=server.url).sync() as client:
            client.reset(seed=0)
            result = client.step({"policy": "openai:stub-model"})
        assert result.observation["policy"]["name"] == "openai:stub-model"
        assert result.observation["action"]["tool"] == "search_kb"
        assert result.observation["events"][0]["name"] == "searched"
