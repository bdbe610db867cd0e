"""The OpenAI-compatible backend against a real HTTP server on loopback, started by the test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest

from drill.core import Observation, PolicyInfo, PolicyInput, Task, Tool
from drill.models import LLMPolicy, ModelCallError, ModelLoadError, SamplingParams
from drill.models.openai_backend import OpenAIChatModel, is_loopback
from drill.models.testing import StubOpenAIServer, chat_completion


def restart(service: Literal["auth", "db"]) -> None:
    """Restart a service's pods.

    Args:
        service: The service to restart.
    """


RESTART = Tool.from_function(restart).spec


def completion(message: dict[str, Any], finish: str, logprobs: list[float] | None) -> dict[str, Any]:
    return chat_completion(message, finish, logprobs=logprobs)


def tool_call_reply(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "restart", "arguments": '{"service": "db"}'}}
    return 200, completion({"content": None, "tool_calls": [call]}, "tool_calls", [-0.25, -0.5, -0.125])


StubServer = StubOpenAIServer


@pytest.fixture
def stub() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer(tool_call_reply) as server:
        yield server


def policy_input(step: int = 0) -> PolicyInput:
    observation = Observation(role="sre", content="db-0 is crash-looping", step=step, tools=[RESTART],
                              instructions="You are the on-call SRE.")
    return PolicyInput(task=Task(id="t1"), seed=4, observation=observation, history=())


def test_policy_sends_tools_natively_and_reads_the_structured_tool_call(stub: StubServer,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRILL_TEST_KEY", raising=False)
    model = OpenAIChatModel("stub-model", base_url=stub.base_url, api_key_env="DRILL_TEST_KEY")
    policy = LLMPolicy(model, PolicyInfo(name="openai:stub-model", kind="remote", model="stub-model"))
    [action] = policy.act([policy_input()])

    assert (action.tool, action.arguments, action.parse_error) == ("restart", {"service": "db"}, None)
    assert action.raw == '<tool_call>{"name": "restart", "arguments": {"service": "db"}}</tool_call>'
    assert action.generation is not None and action.generation.logprobs == [-0.25, -0.5, -0.125]
    assert action.generation.finish_reason == "tool_calls" and action.generation.model == "stub-model"

    [request] = stub.requests
    assert request["model"] == "stub-model" and request["logprobs"] is True
    assert request["tools"] == [RESTART.openai_format()]
    system, user = request["messages"]
    assert system["role"] == "system" and "You are the on-call SRE." in system["content"]
    assert "<tools>" not in system["content"], "native tools must not be listed again in the prompt"
    assert user == {"role": "user", "content": "db-0 is crash-looping"}
    assert stub.headers[0]["authorization"] == "Bearer EMPTY"  # loopback server, no key set


def test_batch_is_sent_as_one_request_per_row_with_distinct_seeds(stub: StubServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRILL_TEST_KEY", "sk-test-123")
    model = OpenAIChatModel("stub-model", base_url=stub.base_url, api_key_env="DRILL_TEST_KEY")
    conversation = [{"role": "user", "content": "go"}]
    params = SamplingParams(max_new_tokens=33, temperature=0.5, top_p=0.9, seed=10)
    generations = model.generate([conversation] * 3, None, params)

    assert len(generations) == 3 and len(stub.requests) == 3
    assert sorted(r["seed"] for r in stub.requests) == [10, 11, 12]
    assert all(r["max_tokens"] == 33 and r["temperature"] == 0.5 and r["top_p"] == 0.9 for r in stub.requests)
    assert all("tools" not in r for r in stub.requests)
    assert {h["authorization"] for h in stub.headers} == {"Bearer sk-test-123"}


def test_text_content_and_two_structured_calls_reach_the_parser(stub: StubServer) -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "restart", "arguments": '{"service": "db"}'}}
             for i in range(2)]
    stub.reply = lambda request: (200, completion({"content": "Restarting twice.", "tool_calls": calls},
                                                  "tool_calls", None))
    model = OpenAIChatModel("stub-model", base_url=stub.base_url, api_key_env="DRILL_TEST_UNSET_KEY")
    [action] = LLMPolicy(model, PolicyInfo(name="openai:stub-model", kind="remote")).act([policy_input()])
    assert action.raw is not None and action.raw.startswith("Restarting twice.\n<tool_call>")
    assert action.parse_error is not None and "found 2 <tool_call> blocks" in action.parse_error
    assert action.generation is not None and action.generation.logprobs == []


def test_a_server_that_rejects_logprobs_is_asked_again_without_them(stub: StubServer) -> None:
    def reply(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "logprobs" in request:
            return 400, {"error": {"message": "logprobs is not supported", "type": "invalid_request_error"}}
        return 200, completion({"content": '{"name": "restart", "arguments": {"service": "auth"}}'}, "stop", None)

    stub.reply = reply
    model = OpenAIChatModel("stub-model", base_url=stub.base_url)
    with pytest.warns(UserWarning, match="rejects logprobs"):
        [generation] = model.generate([[{"role": "user", "content": "go"}]], [RESTART], SamplingParams())
    assert generation.text == '{"name": "restart", "arguments": {"service": "auth"}}'
    assert [("logprobs" in r) for r in stub.requests] == [True, False]
    model.generate([[{"role": "user", "content": "again"}]], None, SamplingParams())
    assert "logprobs" not in stub.requests[-1]


def test_other_server_errors_raise_with_the_server_message(stub: StubServer) -> None:
    stub.reply = lambda request: (400, {"error": {"message": "model 'nope' does not exist", "type": "invalid"}})
    model = OpenAIChatModel("nope", base_url=stub.base_url)
    with pytest.raises(ModelCallError, match="does not exist"):
        model.generate([[{"role": "user", "content": "go"}]], None, SamplingParams())


@pytest.mark.parametrize(("url", "expected"), [
    ("http://localhost:8000/v1", True), ("http://127.0.0.1:1234/v1", True), ("http://[::1]:8000/v1", True),
    ("https://api.openai.com/v1", False), ("http://10.0.0.5:8000/v1", False), (None, False),
])
def test_only_loopback_servers_get_a_placeholder_key(url: str | None, expected: bool) -> None:
    assert is_loopback(url) is expected


def test_a_remote_server_without_the_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRILL_TEST_KEY", raising=False)
    with pytest.raises(ModelLoadError, match="DRILL_TEST_KEY is not set; https://example.com/v1 needs an API key"):
        OpenAIChatModel("gpt-x", base_url="https://example.com/v1", api_key_env="DRILL_TEST_KEY")
    with pytest.raises(ModelLoadError, match="needs a model name"):
        OpenAIChatModel("", base_url="http://localhost:1/v1")
