"""Prompting options of LLMPolicy: compact tool listing, assistant prefill, demonstrations; their CLI forms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest

from drill.cli_options import unescape
from drill.core import Action, Generation, Observation, PolicyInfo, PolicyInput, Task, Tool, ToolSpec
from drill.envs.triage import OraclePolicy
from drill.envs.triage.env import AGENT_TOOLS, SUBMIT, TriageEnv
from drill.models import LLMPolicy, ModelLoadError, PolicyOptions, build_llm_policy
from drill.models.base import ModelCallError, SamplingParams
from drill.models.local import TransformersChatModel
from drill.models.openai_backend import OpenAIChatModel
from drill.models.parsing import parse_tool_call
from drill.models.policy import compact_signature, demonstrations, tool_protocol
from drill.models.prompt import Demonstration, LLMOptions
from drill.models.testing import ScriptedChatModel


def restart(service: Literal["auth", "db"]) -> None:
    """Restart a service's pods.

    Args:
        service: The service to restart.
    """


RESTART = Tool.from_function(restart).spec
INFO = PolicyInfo(name="llm", kind="llm", model="scripted")


def observe(role: str, content: str, step: int, tools: list[ToolSpec]) -> Observation:
    return Observation(role=role, content=content, step=step, tools=tools, instructions=f"You are the {role}.")


def policy_input(observation: Observation) -> PolicyInput:
    return PolicyInput(task=Task(id="t1"), seed=0, observation=observation, history=())

PREFILL = '<tool_call>\n{"name": "restart", "arguments": {"service": "'


def test_compact_listing_is_one_signature_line_per_tool_read_from_the_schema() -> None:
    assert compact_signature(SUBMIT.spec) == (
        "submit_resolution(resolution: string, citations: list of string, confidence: number 0-1, "
        "escalate: boolean): Answer the ticket; ends the episode.")
    assert compact_signature(AGENT_TOOLS["search_kb"].spec) == (
        "search_kb(query: string, max_results: integer 1-10 = 5): Search the knowledge base articles (runbooks) "
        "by keywords; returns ids, BM25 scores and titles.")
    assert compact_signature(RESTART) == 'restart(service: "auth" | "db"): Restart a service\'s pods.'
    compact, schema = tool_protocol([SUBMIT.spec], react=False, listing="compact"), tool_protocol([SUBMIT.spec], False)
    assert "JSON Schema" not in compact and '"properties"' in schema and len(compact) < len(schema) / 2


def test_unknown_tool_listing_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tool listing 'yaml'; choose from schema, compact"):
        PolicyOptions(tool_listing="yaml")  # type: ignore[arg-type]


def test_prefill_ends_the_conversation_and_is_parsed_with_the_reply_but_not_part_of_the_generation() -> None:
    model = ScriptedChatModel(['db"}}\n</tool_call>'])
    policy = LLMPolicy(model, INFO, PolicyOptions(prefill=PREFILL))
    [action] = policy.act([policy_input(observe("sre", "db down", 0, [RESTART]))])
    [(conversations, _, _)] = model.calls
    assert conversations[0][-1] == {"role": "assistant", "content": PREFILL}
    assert conversations[0][-2]["role"] == "user"
    assert (action.tool, action.arguments) == ("restart", {"service": "db"})
    assert action.raw == PREFILL + 'db"}}\n</tool_call>'
    assert action.generation is not None and action.generation.text == 'db"}}\n</tool_call>'


def test_a_broken_continuation_of_the_prefill_is_a_parse_error_shown_to_the_model() -> None:
    model = ScriptedChatModel(["db"])  # never closes the string or the object
    [action] = LLMPolicy(model, INFO, PolicyOptions(prefill=PREFILL)).act(
        [policy_input(observe("sre", "db down", 0, [RESTART]))])
    assert action.parse_error is not None and "cut off" in action.parse_error and action.raw == PREFILL + "db"


def test_demonstrations_are_shown_to_their_role_only_before_the_history() -> None:
    shown = (Demonstration("sre", "example: auth down", '<tool_call>\n{"name": "restart"}\n</tool_call>'),
             Demonstration("dev", "example for dev", "dev reply"))
    model = ScriptedChatModel(['<tool_call>{"name": "restart", "arguments": {"service": "db"}}</tool_call>'])
    LLMPolicy(model, INFO, PolicyOptions(demonstrations=shown)).act([policy_input(observe("sre", "db down", 0, [RESTART]))])
    [(conversations, _, _)] = model.calls
    assert [m["role"] for m in conversations[0]] == ["system", "user", "assistant", "user"]
    assert conversations[0][1]["content"] == "example: auth down" and conversations[0][3]["content"] == "db down"
    assert all("example for dev" not in m["content"] for m in conversations[0])


def test_oracle_demonstrations_come_from_training_tasks_as_valid_calls() -> None:
    env = TriageEnv(mode="reader", k=1)
    train = env.tasks("train")
    shown = demonstrations(lambda: TriageEnv(mode="reader", k=1), train, OraclePolicy(), 2)
    assert [d.role for d in shown] == ["agent", "agent"]
    test_ids = {t.id for t in env.tasks("test")}
    for demo, task in zip(shown, train[:2]):
        assert task.id not in test_ids and task.ticket.strip() in demo.observation
        tool, arguments = parse_tool_call(demo.reply)
        assert tool == "submit_resolution" and arguments["citations"] == list(task.gold_article_ids)
        assert demo.reply.startswith('<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "')
    with pytest.raises(ValueError, match="3 demonstrations asked for but only 2 tasks"):
        demonstrations(lambda: TriageEnv(mode="reader", k=1), train[:2], OraclePolicy(), 3)


class EmptySubmitPolicy:
    """Submits with no arguments, which the reader's schema rejects."""

    info = PolicyInfo(name="empty-submit", kind="scripted")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action(tool="submit_resolution", arguments={}) for _ in inputs]


def test_a_policy_whose_demonstration_turn_is_rejected_cannot_be_a_teacher() -> None:
    tasks = TriageEnv(mode="reader", k=1).tasks("train")
    with pytest.raises(ValueError, match="'empty-submit' policy's agent turn was rejected"):
        demonstrations(lambda: TriageEnv(mode="reader", k=1), tasks, EmptySubmitPolicy(), 1)


def test_openai_backend_refuses_a_prefill_instead_of_sending_a_dangling_assistant_message() -> None:
    with pytest.raises(ModelLoadError, match="--prefill needs a backend that renders the prompt itself"):
        build_llm_policy("openai:gpt-x", LLMOptions(base_url="http://127.0.0.1:9/v1",
                                                    prompt=PolicyOptions(prefill="<tool_call>")))
    model = OpenAIChatModel("gpt-x", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelCallError, match="assistant prefill"):
        model.generate([[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<tool"}]], None,
                       SamplingParams(max_new_tokens=4))


def test_command_line_escapes() -> None:
    assert unescape(r'<tool_call>\n{"a": "\\n"}\t') == '<tool_call>\n{"a": "\\n"}\t'
    assert unescape("plain") == "plain"


@pytest.mark.slow
def test_embedded_model_continues_from_the_prefill_whose_tokens_are_prompt(
        embedded_model: TransformersChatModel) -> None:
    conversation = [{"role": "system", "content": "Answer with one tool call."},
                    {"role": "user", "content": "Restart the db."}]
    plain = embedded_model.template.render(conversation, None)
    prefilled = embedded_model.template.render([*conversation, {"role": "assistant", "content": PREFILL}], None)
    assert prefilled == plain + PREFILL
    policy = LLMPolicy(embedded_model, PolicyInfo(name="llm", kind="llm"),
                       PolicyOptions(sampling=SamplingParams(max_new_tokens=6, temperature=0.0), prefill=PREFILL))
    [action] = policy.act([policy_input(observe("sre", "db down", 0, [RESTART]))])
    generation = action.generation
    assert isinstance(generation, Generation) and action.raw == PREFILL + generation.text
    prompt_text = embedded_model.tokenizer.decode(generation.prompt_token_ids)
    assert prompt_text.endswith(PREFILL) and PREFILL not in generation.text
    assert embedded_model.tokenizer.decode(generation.token_ids).startswith(generation.text)
