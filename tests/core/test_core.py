"""The core contract on a tiny environment written for the test: tools, validation, rubric, rollout, check_env."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pytest

from drill.core import (
    Action, Component, Env, EnvCheckError, Episode, Event, Observation, PolicyInfo, PolicyInput, Rubric,
    RubricError, StepResult, Task, Tool, check_env, parse_role_assignment, run_episodes,
)


def press(button: Literal["red", "green"], times: int = 1) -> None:
    """Press a button.

    Args:
        button: Which button to press.
        times: How many times to press it.
    """


class ButtonEnv(Env):
    """Press green three times within six turns; two roles alternate."""

    name = "buttons"
    roles = ("left", "right")
    _TOOLS = {"press": Tool.from_function(press)}

    def tasks(self, split: str = "test") -> list[Task]:
        return [Task(id=f"b{i}", split="test" if split == "test" else "train") for i in range(3)]

    def _obs(self, error: str | None = None) -> Observation:
        role = self.roles[self.turn % 2]
        return Observation(role=role, content=f"green presses: {self.green}", step=self.turn, error=error,
                           tools=[t.spec for t in self._TOOLS.values()])

    def _reset(self, task: Task, seed: int) -> Observation:
        self.turn, self.green = 0, 0
        return self._obs()

    def _tools(self) -> Mapping[str, Tool]:
        return self._TOOLS

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        role = self.roles[self.turn % 2]
        events = [Event(name="pressed", step=self.turn, role=role, data={"button": arguments["button"]})]
        if arguments["button"] == "green":
            self.green += arguments["times"]
        self.turn += 1
        done = self.green >= 3 or self.turn >= 6
        if self.green >= 3:
            events.append(Event(name="solved", step=self.turn))
        return StepResult(observation=self._obs(), events=events, done=done)

    def _acting(self) -> tuple[str, int]:
        return self.roles[self.turn % 2], self.turn

    def _reject(self, message: str, event: Event) -> StepResult:
        self.turn += 1
        return StepResult(observation=self._obs(error=message), events=[event], done=self.turn >= 6)


class Greedy:
    info = PolicyInfo(name="greedy")

    def __init__(self) -> None:
        self.calls: list[int] = []

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        self.calls.append(len(inputs))
        return [Action.call("press", button="green") for _ in inputs]


def test_tool_schema_comes_from_hints_and_docstring() -> None:
    spec = Tool.from_function(press).spec
    assert spec.name == "press" and spec.description == "Press a button."
    props = spec.parameters["properties"]
    assert props["button"]["enum"] == ["red", "green"]
    assert props["button"]["description"] == "Which button to press."
    assert props["times"]["type"] == "integer" and props["times"]["default"] == 1
    assert spec.parameters["required"] == ["button"]


def test_tool_without_docs_is_a_programmer_error() -> None:
    def bad(x: int) -> None:
        """No args section."""

    with pytest.raises(TypeError, match="not described"):
        Tool.from_function(bad)


@pytest.mark.parametrize(
    ("action", "needle"),
    [
        (Action(tool="explode"), "unknown tool 'explode'"),
        (Action(tool="press", arguments={}), "missing required argument 'button'"),
        (Action(tool="press", arguments={"button": "blue"}), "argument 'button'"),
        (Action(tool="press", arguments={"button": "red", "times": "many"}), "argument 'times'"),
        (Action(tool="press", arguments={"button": "red", "colour": 1}), "unknown argument 'colour'"),
        (Action(tool="press", arguments="red"), "must be a JSON object"),
        (Action(tool="press", arguments={"button": "x" * 5000}), "the limit is 4000"),
        (Action(tool="press", arguments={"button": "\u00e9" * 700}), "the limit is 4000"),
        (Action(tool="press", arguments={"button": "red", "times": 10**5000}), "not JSON-serializable"),
        (Action.unparseable("{oops", "truncated JSON"), "truncated JSON"),
    ],
)
def test_bad_input_gets_an_error_observation(action: Action, needle: str) -> None:
    env = ButtonEnv()
    env.reset(env.tasks()[0], 0)
    result = env.step(action)
    assert needle in (result.observation.error or "")
    assert [e.name for e in result.events] == ["invalid_action"]


def test_rollout_batches_calls_and_scores() -> None:
    rubric = Rubric([Component("solved", lambda ep, t: ep.count("solved"), 10.0),
                     Component("length", lambda ep, t: len(ep.turns), -1.0)])
    policy = Greedy()
    env = ButtonEnv()
    episodes = run_episodes(ButtonEnv, [(t, 0) for t in env.tasks()], policy, rubric)
    assert len(episodes) == 3
    assert policy.calls == [3, 3, 3]  # one batched call per turn for all three episodes
    score = episodes[0].score
    assert score is not None and score.components == {"solved": 1.0, "length": 3.0}
    assert score.total == pytest.approx(10 - 3)
    assert episodes[0].policies["left"].name == "greedy"


def test_failing_component_raises_instead_of_scoring_zero() -> None:
    rubric = Rubric([Component("broken", lambda ep, t: 1 / 0)])
    with pytest.raises(RubricError, match="broken"):
        rubric.score(Episode(env="x", task_id="t", seed=0), Task(id="t"))
    with pytest.raises(RubricError, match="nan"):
        Rubric([Component("nan", lambda ep, t: float("nan"))]).score(Episode(env="x", task_id="t", seed=0), Task(id="t"))


def test_check_env_passes_a_conforming_env() -> None:
    check_env(ButtonEnv())


def test_check_env_catches_nondeterminism_and_raising() -> None:
    class Leaky(ButtonEnv):
        def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
            if arguments["times"] > 5:
                raise ValueError("boom")
            return super()._apply(tool, arguments)

        def _obs(self, error: str | None = None) -> Observation:
            obs = super()._obs(error)
            return obs.model_copy(update={"content": obs.content + f" id={id(self)}"})

    with pytest.raises(EnvCheckError) as info:
        check_env(Leaky(), cross_process=False)
    assert "differ" in str(info.value)


def test_role_assignment() -> None:
    roles = ("sre", "oversight", "dev", "manager")
    assert parse_role_assignment("oracle", roles) == dict.fromkeys(roles, "oracle")
    mixed = parse_role_assignment("heuristic,oversight=openai:gpt-4o", roles)
    assert mixed["oversight"] == "openai:gpt-4o" and mixed["sre"] == "heuristic"
    with pytest.raises(ValueError, match="unknown role"):
        parse_role_assignment("boss=oracle", roles)
    with pytest.raises(ValueError, match="no policy"):
        parse_role_assignment("sre=oracle", roles)


def test_trusted_records_equal_constructed_ones_in_value_dump_and_copy() -> None:
    fields = {"role": "sre", "content": "text", "step": 3, "tools": [], "instructions": "brief", "error": None}
    trusted, built = Observation.trusted(**fields), Observation.model_construct(**fields)
    assert trusted == built == Observation(**fields)
    assert trusted.model_dump_json() == built.model_dump_json()
    assert trusted.model_fields_set == built.model_fields_set
    copy = trusted.model_copy(update={"step": 4})
    assert copy.step == 4 and trusted.step == 3
    with pytest.raises(TypeError, match=r"needs every field; missing \['data'\]"):
        Event.trusted(name="resolved", step=1, role=None)


def test_a_policy_that_returns_something_else_than_an_action_is_named() -> None:
    class Sloppy:
        info = PolicyInfo(name="sloppy")

        def act(self, inputs):  # type: ignore[no-untyped-def]
            return [{"tool": "press", "arguments": {"button": "green"}} for _ in inputs]

    with pytest.raises(TypeError, match="policy sloppy returned a dict, not an Action"):
        run_episodes(ButtonEnv, [(ButtonEnv().tasks()[0], 0)], Sloppy())  # type: ignore[arg-type]


def test_episode_counts_follow_its_events_and_stay_out_of_dumps() -> None:
    episode = Episode(env="x", task_id="t", seed=0, events=[Event(name="solved", step=0), Event(name="solved", step=1)])
    assert episode.count("solved") == 2 and episode.count("nothing") == 0
    assert "_event_counts" not in episode.model_dump() and episode == Episode(**episode.model_dump())
    other = episode.model_copy(update={"events": [Event(name="solved", step=0)]})  # copies the kept counts too
    assert other.count("solved") == 1 and episode.count("solved") == 2
