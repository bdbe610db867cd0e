"""LLMPolicy on a scripted chat model: prompts, history bounds, batching, parse failures, and spec errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest

from drill.core import Action, Observation, PolicyInfo, PolicyInput, Task, Tool, ToolSpec, Turn
from drill.models import AdapterLoadError, LLMPolicy, ModelLoadError, PolicyOptions, SamplingParams, build_llm_policy
from drill.models.policy import AGENT_INSTRUCTIONS, render_observation
from drill.models.vllm_backend import cuda_available
from drill.models.prompt import LLMOptions
from drill.models.testing import ScriptedChatModel
from drill.policies import resolve_policies


def restart(service: Literal["auth", "db"]) -> None:
    """Restart a service's pods.

    Args:
        service: The service to restart.
    """


def approve(reason: str) -> None:
    """Approve the pending action.

    Args:
        reason: Why it is safe.
    """


RESTART, APPROVE = Tool.from_function(restart).spec, Tool.from_function(approve).spec


def observe(role: str, content: str, step: int, tools: list[ToolSpec], error: str | None = None) -> Observation:
    return Observation(role=role, content=content, step=step, tools=tools, error=error,
                       instructions=f"You are the {role}.")


def policy_input(observation: Observation, history: Sequence[Turn] = (), seed: int = 0) -> PolicyInput:
    return PolicyInput(task=Task(id="t1"), seed=seed, observation=observation, history=tuple(history))


INFO = PolicyInfo(name="llm", kind="llm", model="scripted")
GOOD = '<tool_call>{"name": "restart", "arguments": {"service": "db"}}</tool_call>'


def test_without_native_tools_the_prompt_carries_the_json_protocol_and_schemas() -> None:
    model = ScriptedChatModel([GOOD])
    [action] = LLMPolicy(model, INFO).act([policy_input(observe("sre", "db down", 0, [RESTART]))])
    [(conversations, tools, params)] = model.calls
    system = conversations[0][0]["content"]
    assert system.startswith(AGENT_INSTRUCTIONS) and "You are the sre." in system
    assert '"name": "restart"' in system and '"enum": ["auth", "db"]' in system and "<tools>" in system
    assert "<tool_call>" in system and tools is None and params.stop == ("</tool_call>",)
    assert (action.tool, action.arguments, action.raw) == ("restart", {"service": "db"}, GOOD)
    assert action.generation is not None and action.generation.token_ids == [7, 8]


def test_with_native_tools_schemas_go_to_the_backend_and_batches_split_by_tool_set() -> None:
    model = ScriptedChatModel([GOOD, GOOD, '{"name": "approve", "arguments": {"reason": "ok"}}'], native_tools=True)
    inputs = [policy_input(observe("sre", "a", 0, [RESTART])), policy_input(observe("sre", "b", 0, [RESTART])),
              policy_input(observe("oversight", "c", 0, [APPROVE]))]
    actions = LLMPolicy(model, INFO).act(inputs)
    assert [a.tool for a in actions] == ["restart", "restart", "approve"]
    assert [(len(c), t) for c, t, _ in model.calls] == [(2, [RESTART]), (1, [APPROVE])]
    assert all("<tools>" not in c[0][0]["content"] for c, _, _ in model.calls)
    assert model.calls[0][2].stop == ()


def test_one_generate_call_serves_a_whole_batch_of_different_roles() -> None:
    model = ScriptedChatModel([GOOD, "I am not sure what to do.", GOOD])
    inputs = [policy_input(observe("sre", "a", 0, [RESTART])), policy_input(observe("oversight", "b", 0, [APPROVE])),
              policy_input(observe("sre", "c", 0, [RESTART]), seed=1)]
    actions = LLMPolicy(model, INFO).act(inputs)
    assert len(model.calls) == 1 and len(model.calls[0][0]) == 3
    assert actions[1].parse_error is not None and "no tool call found" in actions[1].parse_error
    assert actions[1].raw == "I am not sure what to do." and actions[1].generation is not None
    assert "approve" in model.calls[0][0][1][0]["content"] and "approve" not in model.calls[0][0][0][0]["content"]


def test_react_option_asks_for_thought_and_action() -> None:
    model = ScriptedChatModel(['Thought: db is down.\nAction: {"name": "restart", "arguments": {"service": "db"}}'])
    policy = LLMPolicy(model, INFO, PolicyOptions(react=True))
    [action] = policy.act([policy_input(observe("sre", "db down", 0, [RESTART]))])
    system = model.calls[0][0][0][0]["content"]
    assert "Thought: <your reasoning" in system and "Action: {" in system
    assert model.calls[0][2].stop == ("\nObservation:",)
    assert (action.tool, action.arguments) == ("restart", {"service": "db"})


def history() -> list[Turn]:
    """sre acts badly, oversight acts, sre acts well: the sre's next prompt is built from this."""
    sre0 = observe("sre", "sre view 0", 0, [RESTART])
    bad = Action.unparseable("restart the db please", "no tool call found in the reply")
    over = observe("oversight", "oversight view 1", 1, [APPROVE])
    sre2 = observe("sre", "sre view 2", 2, [RESTART], error="could not parse your tool call: no tool call found")
    good = Action(tool="restart", arguments={"service": "db"}, raw=GOOD)
    return [Turn(index=0, role="sre", observation=sre0, action=bad),
            Turn(index=1, role="oversight", observation=over, action=Action.call("approve", reason="fine")),
            Turn(index=2, role="sre", observation=sre2, action=good)]


def test_the_conversation_is_the_roles_own_turns_with_their_errors_then_the_current_view() -> None:
    current = observe("sre", "sre view 4", 4, [RESTART])
    messages = LLMPolicy(ScriptedChatModel([]), INFO).conversation(policy_input(current, history()))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in messages[1:]] == [
        "sre view 0", "restart the db please",
        "Error from the last action: could not parse your tool call: no tool call found\n\nsre view 2", GOOD,
        "sre view 4",
    ]
    assert all("oversight view" not in m["content"] for m in messages)


def test_history_is_cut_oldest_first_to_the_budget_keeping_system_and_current_view() -> None:
    current = observe("sre", "x" * 500, 4, [RESTART])
    policy = LLMPolicy(ScriptedChatModel([]), INFO)
    system_chars = len(policy.system_prompt(current))
    last_pair = len(render_observation(history()[2].observation)) + len(GOOD)
    tight = LLMPolicy(ScriptedChatModel([]), INFO, PolicyOptions(max_prompt_chars=system_chars + 500 + last_pair))
    messages = tight.conversation(policy_input(current, history()))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"].startswith("(1 earlier turn of yours not shown.)\n\nError from the last action")
    assert messages[-1]["content"] == "x" * 500

    nothing_fits = LLMPolicy(ScriptedChatModel([]), INFO, PolicyOptions(max_prompt_chars=10))
    messages = nothing_fits.conversation(policy_input(current, history()))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == "(2 earlier turns of yours not shown.)\n\n" + "x" * 500

    capped = LLMPolicy(ScriptedChatModel([]), INFO, PolicyOptions(max_history_turns=1))
    messages = capped.conversation(policy_input(current, history()))
    assert len(messages) == 4 and messages[1]["content"].startswith("(1 earlier turn of yours not shown.)")


def test_seeded_sampling_depends_only_on_the_inputs() -> None:
    def seed_for(step: int, episode_seed: int) -> int | None:
        model = ScriptedChatModel([GOOD])
        policy = LLMPolicy(model, INFO, PolicyOptions(sampling=SamplingParams(temperature=1.0, seed=3)))
        policy.act([policy_input(observe("sre", "a", step, [RESTART]), seed=episode_seed)])
        return model.calls[0][2].seed

    assert seed_for(0, 0) == seed_for(0, 0)
    assert len({seed_for(0, 0), seed_for(1, 0), seed_for(0, 1)}) == 3


# -- specs that cannot be built fail with the reason -----------------------------------------------

@pytest.mark.parametrize(("spec", "error", "message"), [
    ("lora:", AdapterLoadError, "lora:PATH needs the path"),
    ("lora:/no/such/adapter", AdapterLoadError, "no such adapter folder"),
    ("openai:", ModelLoadError, "needs a model name"),
])
def test_unbuildable_specs_raise_the_reason(spec: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        build_llm_policy(spec, LLMOptions())


def test_a_broken_adapter_stops_policy_resolution_instead_of_falling_back() -> None:
    baselines = {"heuristic": lambda: LLMPolicy(ScriptedChatModel([]), PolicyInfo(name="heuristic"))}
    with pytest.raises(ValueError, match="no such adapter folder"):
        resolve_policies("heuristic,oversight=lora:/no/such/adapter", ["sre", "oversight"], baselines, LLMOptions())


def test_openai_spec_needs_its_key_for_a_remote_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRILL_ABSENT_KEY", raising=False)
    options = LLMOptions(base_url="https://models.example.com/v1", api_key_env="DRILL_ABSENT_KEY")
    with pytest.raises(ModelLoadError, match="DRILL_ABSENT_KEY is not set"):
        build_llm_policy("openai:some-model", options)


@pytest.mark.skipif(cuda_available(), reason="checks the error raised where there is no GPU")
def test_vllm_without_a_gpu_says_so() -> None:
    with pytest.raises(ModelLoadError, match="needs a CUDA GPU"):
        build_llm_policy("vllm:Qwen/Qwen2.5-0.5B-Instruct", LLMOptions())
