"""The tool-call parser over a gallery of well-formed and malformed model outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pytest

from drill.core import Env, Event, Generation, Observation, StepResult, Task, Tool
from drill.models.parsing import parse_action, parse_tool_call

CALL = '{"name": "restart", "arguments": {"service": "db"}}'


@pytest.mark.parametrize("text", [
    f"<tool_call>{CALL}</tool_call>",
    f"<tool_call>\n{CALL}\n</tool_call>",
    f"I'll restart the database.\n<tool_call>\n{CALL}\n</tool_call>\nThat should fix it.",
    f"<tool_call>{CALL}",  # closing tag stripped as a stop string by a server
    f"<tool_call>\n```json\n{CALL}\n```\n</tool_call>",
    f"<tool_call>[{CALL}]</tool_call>",
    CALL,
    f"  {CALL}  ",
    f"The database is down, so: {CALL} and then we wait.",
    f"```json\n{CALL}\n```",
    f"Here is my call:\n```\n{CALL}\n```\nDone.",
    f"Thought: the db pods crash-loop, a restart should clear them.\nAction: {CALL}",
    'Thought: restart it\nAction: restart\nAction Input: {"service": "db"}',
    '{"tool": "restart", "arguments": {"service": "db"}}',
    '{"name": "restart", "parameters": {"service": "db"}}',
    '{"type": "function", "function": {"name": "restart", "arguments": "{\\"service\\": \\"db\\"}"}}',
    '{"name": "restart", "arguments": "{\\"service\\": \\"db\\"}"}',
])
def test_accepted_forms_all_give_the_same_call(text: str) -> None:
    assert parse_tool_call(text) == ("restart", {"service": "db"})


def test_missing_arguments_mean_an_empty_object_and_nested_names_do_not_count_as_calls() -> None:
    assert parse_tool_call('<tool_call>{"name": "status"}</tool_call>') == ("status", {})
    assert parse_tool_call('{"name": "page", "arguments": {"name": "alice"}}') == ("page", {"name": "alice"})


@pytest.mark.parametrize(("text", "message"), [
    ("", "the reply is empty"),
    ("   \n\t ", "the reply is empty"),
    ("I think we should restart the database service.", "no tool call found"),
    ("Restart {service} now", "no tool call found"),
    ('{"service": "db"}', 'no "name" field'),
    ('<tool_call>{"name": "restart", "arguments": {"service": "db"', "cut off"),
    ('Sure! {"name": "restart", "arguments": {"service": "d', "cut off"),
    ('```json\n{"name": "restart", "arguments": {\n```', "cut off"),
    ('```json\n{"name": "restart" "arguments": {}}\n```', "invalid JSON in the tool call: Expecting ',' delimiter"),
    ("<tool_call>{'name': 'restart', 'arguments': {}}</tool_call>", "invalid JSON"),
    ('{"name": "restart", "arguments": {"service": "db",}}', "invalid JSON"),
    (f"<tool_call>{CALL}</tool_call><tool_call>{CALL}</tool_call>", "found 2 <tool_call> blocks"),
    (f"<tool_call>{CALL}</tool_call>\n<tool_call>{CALL}", "found 2 <tool_call> blocks"),
    (f"{CALL}\n{CALL}", "found 2 tool calls"),
    (f"```json\n{CALL}\n```\nor\n```json\n{CALL}\n```", "found 2 tool calls"),
    ('Action: restart\nAction Input: {"service": "db"}\nAction: page\nAction Input: {}', "found 2 'Action:' lines"),
    ("<tool_call></tool_call>", "the <tool_call> block is empty"),
    (f"<tool_call>[{CALL}, {CALL}]</tool_call>", "holds a list of 2 calls"),
    ("<tool_call>[]</tool_call>", "holds a list of 0 calls"),
    (f"[{CALL}, {CALL}]", "found 2 tool calls"),
    ("<tool_call>restart(service='db')</tool_call>", "must hold a JSON object"),
    (f"<tool_call>{CALL}}}</tool_call>", "unexpected text after the JSON object"),
    ('{"name": "restart", "arguments": ["db"]}', '"arguments" of \'restart\' must be a JSON object, got an array'),
    ('{"name": "restart", "arguments": 3}', "must be a JSON object, got a number"),
    ('{"name": "restart", "arguments": "service=db"}', "is a string that is not JSON"),
    ('{"name": 7, "arguments": {}}', '"name" must be a non-empty string, got 7'),
    ('{"name": "", "arguments": {}}', '"name" must be a non-empty string'),
    ("Action: restart\nAction Input: service=db", "'Action Input:' must be followed by a JSON object"),
    # a model can write thousands of brackets, or a 5,000-digit number: a parse error, never an exception
    ('{"name": "flag_rogue", "arguments": {"agent": ' + "[" * 40 + '"a"' + "]" * 40 + "}}", "more than 32 deep"),
    ('{"name": "flag_rogue", "arguments": {"agent": ' + "[" * 5000 + '"a"' + "]" * 5000 + "}}", "too deep"),
    ('{"name": "flag_rogue", "arguments": "' + "[" * 5000 + '1' + "]" * 5000 + '"}', "is a string that is not JSON"),
    ('{"name": "scale", "arguments": {"replicas": ' + "9" * 5000 + "}}", "invalid number in the tool call"),
    ('{"name": ' + "[" * 40 + '"a"' + "]" * 40 + ', "arguments": {}}', "more than 32 deep"),
])
def test_malformed_outputs_are_unparseable_with_a_specific_message(text: str, message: str) -> None:
    generation = Generation(text=text, token_ids=[5, 6], logprobs=[-0.1, -0.2], model="m")
    action = parse_action(text, generation)
    assert action.parse_error is not None and message in action.parse_error, action.parse_error
    assert action.tool == "" and action.raw == text and action.generation == generation


def test_two_calls_execute_neither_and_say_so() -> None:
    action = parse_action('{"name": "restart", "arguments": {}} {"name": "page", "arguments": {}}')
    assert action.parse_error is not None
    assert "none of them was executed" in action.parse_error and action.tool == ""


def test_a_valid_action_keeps_the_raw_text_and_generation() -> None:
    text = f"Thought: restart.\nAction: {CALL}"
    generation = Generation(text=text, token_ids=[1], logprobs=[-0.5], model="m", finish_reason="stop")
    action = parse_action(text, generation)
    assert (action.tool, action.arguments, action.parse_error) == ("restart", {"service": "db"}, None)
    assert action.raw == text and action.generation is generation


# -- what is left to the environment: unknown tools and wrongly typed arguments ----------------------

def restart(service: Literal["auth", "db"]) -> None:
    """Restart a service.

    Args:
        service: The service to restart.
    """


class RestartEnv(Env):
    """One role, one tool; every action ends the episode. Just enough Env to see its rejections."""

    name = "restart"
    roles = ("sre",)
    TOOLS = {"restart": Tool.from_function(restart)}

    def tasks(self, split: str = "test") -> list[Task]:
        return [Task(id="t0")]

    def _reset(self, task: Task, seed: int) -> Observation:
        return Observation(role="sre", content="db is down", step=0, tools=[t.spec for t in self.TOOLS.values()])

    def _tools(self) -> Mapping[str, Tool]:
        return self.TOOLS

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        return StepResult(observation=Observation(role="sre", content="restarted", step=1), done=True)

    def _acting(self) -> tuple[str, int]:
        return "sre", 0

    def _reject(self, message: str, event: Event) -> StepResult:
        return StepResult(observation=Observation(role="sre", content="db is down", step=1, error=message),
                          events=[event])


@pytest.mark.parametrize(("text", "message"), [
    ('<tool_call>{"name": "reboot", "arguments": {"service": "db"}}</tool_call>', "unknown tool 'reboot'"),
    ('<tool_call>{"name": "restart", "arguments": {"service": 5}}</tool_call>', "argument 'service'"),
    ('<tool_call>{"name": "restart", "arguments": {}}</tool_call>', "missing required argument 'service'"),
    ('{"name": "restart", "arguments": {"service": "db"',
     "could not parse your tool call: the tool call's JSON is cut off"),
])
def test_the_environment_answers_what_the_parser_passes_or_rejects(text: str, message: str) -> None:
    env = RestartEnv()
    env.reset(env.tasks()[0], seed=0)
    result = env.step(parse_action(text))
    assert result.observation.error is not None and message in result.observation.error
    assert [e.name for e in result.events] == ["invalid_action"]
