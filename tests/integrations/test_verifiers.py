"""Drill environments inside verifiers (the real `verifiers` package, the `verifiers` extra): a verifiers rollout
whose model is a scripted OpenAI-compatible server gives the same episode and score as `drill eval` for the same
actions, hostile replies are the environment's invalid actions, and the rubric's components are logged."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
import verifiers as vf
from openai import AsyncOpenAI

from drill import registry
from drill.core.rubric import Rubric, RubricError
from drill.core.types import Episode
from drill.evaluate.matrix import play
from drill.integrations.verifiers import NOT_EXECUTED, TOTAL, DrillVerifiersEnv, load_environment
from drill.models.testing import StubOpenAIServer, chat_completion, text_reply

CASES = [("triage", {"mode": "agent"}, None), ("inbox", {}, None), ("chaosops", {}, "oversight"),
         ("coderepair", {}, None), ("copilot", {}, None)]


def _scripted(messages: Sequence[dict[str, Any]]) -> StubOpenAIServer:
    """A loopback OpenAI-compatible server answering the i-th request with the i-th scripted message."""
    script = list(messages)

    def reply(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not script:
            return 500, {"error": {"message": "the script has no replies left"}}
        message = script.pop(0)
        return 200, chat_completion(message, finish_reason="tool_calls" if "tool_calls" in message else "stop")

    return StubOpenAIServer(reply)


def _call(index: int, tool: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{index}", "type": "function", "function": {"name": tool, "arguments": raw}}


def _rollout(env: Any, server: StubOpenAIServer, row: dict[str, Any]) -> Any:
    client = vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0))
    return asyncio.run(env.run_rollout(row, client, "scripted", {}, state_columns=["drill_episode"]))


def _row(env: Any, task_id: str, seed: int) -> dict[str, Any]:
    rows = env.get_eval_dataset()
    for row in rows:
        if row["info"]["task_id"] == task_id and row["info"]["seed"] == seed:
            return dict(row)
    raise AssertionError(f"no eval row for {task_id} seed {seed}")


def _oracle_episode(name: str, options: dict[str, Any], task_index: int, seed: int) -> Episode:
    spec = registry.get(name)
    parsed = spec.parse_options(options)
    make_env = spec.make(parsed)
    env = make_env()
    task = env.tasks("test")[task_index]
    oracle = spec.baselines(parsed)["oracle"]
    played = play(make_env, {"oracle": {r: oracle() for r in env.roles}}, [(task, seed)], spec.rubric_for(parsed), 1)
    return played["oracle"][0]


@pytest.mark.parametrize(("name", "options", "role"), CASES, ids=[c[0] for c in CASES])
def test_a_scripted_rollout_of_the_oracles_calls_gives_drill_evals_episode_and_score(
        name: str, options: dict, role: str | None) -> None:
    expected = _oracle_episode(name, options, 3, 1)
    env = load_environment(name, role=role, seeds=2, **options)
    trained = role or next(iter(expected.policies))
    calls = [t.action for t in expected.turns if t.role == trained]
    replies = [{"content": None, "tool_calls": [_call(i, a.tool, a.arguments)]} for i, a in enumerate(calls)]
    with _scripted(replies) as server:
        output = _rollout(env, server, _row(env, expected.task_id, 1))
        requests = server.requests

    got = Episode.model_validate(output["drill_episode"])
    assert got.done and expected.done
    assert [(t.role, t.action.tool, t.action.arguments, t.observation.content, t.events) for t in got.turns] == \
        [(t.role, t.action.tool, t.action.arguments, t.observation.content, t.events) for t in expected.turns]
    assert got.score == expected.score and got.policies[trained].name == "verifiers"
    assert output["reward"] == pytest.approx(expected.score.total)
    assert {k: output["metrics"][k] for k in expected.score.components} == expected.score.components
    assert output["metrics"][TOTAL] == expected.score.total
    assert len(requests) == len(calls)  # the rollout stopped when the episode ended, not on the script's end
    offered = sorted(t["function"]["name"] for t in requests[0]["tools"])
    assert offered == sorted(t.name for t in expected.turns[[t.role for t in expected.turns].index(trained)]
                             .observation.tools)
    assert requests[1]["messages"][-1]["role"] == "tool" and requests[1]["messages"][-1]["tool_call_id"] == "call_0"
    last = output["completion"][-1]
    assert last["role"] == "tool" and last["content"].endswith("[the episode has ended]")


def test_hostile_replies_are_invalid_actions_and_the_rollout_goes_on() -> None:
    env = load_environment("inbox")
    env.max_turns = 6  # verifiers' cap on replies: the rollout stops after the six, before inbox's own end
    row = dict(env.get_eval_dataset()[0])
    hostile = [
        {"content": "I think the answer is in the second email."},                        # no call at all
        {"content": None, "tool_calls": [_call(0, "read_email", "{not json")]},            # JSON that does not parse
        {"content": None, "tool_calls": [_call(1, "read_email", "[1, 2]")]},              # arguments not an object
        {"content": None, "tool_calls": [_call(2, "rm -rf /", {"x": "\ud800"})]},         # unknown tool
        {"content": None, "tool_calls": [_call(3, "search_inbox", {"keywords": ["a"]}),
                                         _call(4, "read_email", {"message_id": "1"})]},   # two calls in one reply
        {"content": None, "tool_calls": [_call(5, "read_email", {"message_id": 12345, "evil": "x"})]},  # bad schema
    ]
    with _scripted(hostile) as server:
        output = _rollout(env, server, row)
        requests = server.requests
    episode = Episode.model_validate(output["drill_episode"])
    trained = [t for t in episode.turns if t.policy == "verifiers"]
    assert len(trained) >= len(hostile)
    assert [any(e.name == "invalid_action" for e in t.events) for t in trained[:len(hostile)]] == [True] * len(hostile)
    assert [t.action.parse_error is not None for t in trained[:len(hostile)]] == \
        [True, True, True, False, True, False]
    assert "none of them was executed" in (trained[4].action.parse_error or "")
    assert requests[1]["messages"][-1]["role"] == "user"  # a reply without a call is answered as the user
    both = requests[5]["messages"][-2:]  # every call of the two-call reply is answered, the first with the view
    assert [(m["role"], m["tool_call_id"]) for m in both] == [("tool", "call_3"), ("tool", "call_4")]
    assert both[0]["content"].startswith("error: could not parse your tool call") and both[1]["content"] == NOT_EXECUTED
    assert output["stop_condition"] == "max_turns_reached" and output["completion"][-1]["role"] == "assistant"
    assert episode.done and episode.score is not None  # stopped by max_turns: finished and scored, not raised
    assert output["reward"] == episode.score.total
    assert output["metrics"]["correct"] == 0.0


def test_the_datasets_hold_each_tasks_prompt_and_info() -> None:
    env = load_environment("triage", mode="agent", seeds=2)
    spec = registry.get("triage")
    made = spec.make(spec.parse_options({"mode": "agent"}))()
    train, test = env.get_dataset(), env.get_eval_dataset()
    assert len(train) == 2 * len(made.tasks("train")) and len(test) == 2 * len(made.tasks("test"))
    assert [train[0]["info"], train[1]["info"]] == [{"task_id": made.tasks("train")[0].id, "seed": s} for s in (0, 1)]
    system, user = train[0]["prompt"]
    first = made.reset(made.tasks("train")[0], 0)
    assert system == {"role": "system", "content": first.instructions}
    assert user["role"] == "user" and user["content"] == first.content


def test_choices_are_checked_with_clear_errors() -> None:
    with pytest.raises(ValueError, match="several roles .* name the one to train"):
        load_environment("chaosops")
    with pytest.raises(ValueError, match="no baseline 'genius'"):
        load_environment("chaosops", role="oversight", others="genius")
    with pytest.raises(ValueError, match="seeds must be at least 1"):
        load_environment("inbox", seeds=0)


def test_verifiers_evaluate_scores_every_rollout_with_drills_rubric(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's lines: `evaluate_sync` against an OpenAI-compatible server, groups of rollouts, the reward and
    every component of each one the Drill score of its episode; `max_turns=` is inbox's own option."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    env = load_environment("inbox", max_turns=3)
    components = registry.get("inbox").rubric_for(registry.get("inbox").parse_options({})).weights
    with StubOpenAIServer(text_reply(lambda request: "Let me think about which email it is.")) as server:
        results = env.evaluate_sync(client=vf.ClientConfig(api_base_url=server.base_url, api_key_var="OPENAI_API_KEY"),
                                    model="scripted", num_examples=2, rollouts_per_example=2,
                                    state_columns=["drill_episode"])
        requests = len(server.requests)
    outputs = results["outputs"]
    assert len(outputs) == 4
    played = 0
    for output in outputs:
        episode = Episode.model_validate(output["drill_episode"])
        assert episode.done and episode.score is not None and output["error"] is None
        assert output["reward"] == episode.score.total
        assert {k: output["metrics"][k] for k in components} == episode.score.components
        mine = [t for t in episode.turns if t.policy == "verifiers"]
        assert len(mine) == 3 and all("no tool call found" in (t.action.parse_error or "") for t in mine)
        played += len(mine)
    assert played == requests == 12  # every reply was one turn of an episode that inbox ended after its 3 turns


def _with_rubric(components: Callable[[list[Any]], list[Any]]) -> type:
    """The inbox session class with its rubric's components rewritten by `components`."""
    session = load_environment("inbox").factory
    return type("Rewritten", (session,), {"_rubric": Rubric(components(list(session._rubric.components)))})


def test_a_failing_component_raises_out_of_the_rollout_never_a_zero_reward() -> None:
    def broken(episode: Any, task: Any) -> float:
        raise ZeroDivisionError("the component's own bug")

    env = DrillVerifiersEnv(_with_rubric(lambda cs: [replace(cs[0], fn=broken), *cs[1:]]), seeds=1)
    env.max_turns = 1
    with StubOpenAIServer(text_reply(lambda request: "no call")) as server:
        with pytest.raises(RubricError, match="the component's own bug"):
            _rollout(env, server, dict(env.get_eval_dataset()[0]))


def test_a_component_named_like_another_metric_is_refused() -> None:
    for name in (TOTAL, "num_turns"):
        with pytest.raises(ValueError, match=f"clash with other verifiers metrics: {name}"):
            DrillVerifiersEnv(_with_rubric(lambda cs: [replace(cs[0], name=name), *cs[1:]]))
