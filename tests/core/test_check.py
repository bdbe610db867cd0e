"""`check_env` has teeth: each deliberately broken environment below is caught, the way a new user's model would
find the bug. The first one is the inbox's old bug: a lone surrogate reaching SQLite raised out of `step`."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import pytest

from drill.core import (Action, Env, EnvCheckError, Event, Observation, StepResult, Task, Tool, ToolArgumentError,
                        check_env)
from drill.core.env import MAX_OBSERVATION_CHARS
from drill.core.text import hostile_text


def lookup(key: str, limit: int = 3) -> None:
    """Look a key up.

    Args:
        key: The key.
        limit: How many rows.
    """


def note(text: str) -> None:
    """Write a note.

    Args:
        text: The note.
    """


class SqliteEnv(Env[Task]):
    """Looks keys up in a real SQLite table with an FTS5 index; three turns, then done."""

    name = "sqlite-toy"
    roles = ("agent",)
    task_type = Task
    TOOLS = {t.name: t for t in (Tool.from_function(lookup), Tool.from_function(note))}

    def __init__(self) -> None:
        super().__init__()
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
        self.db.execute("INSERT INTO docs VALUES ('the quick brown fox')")

    def tasks(self, split: str = "test") -> list[Task]:
        return [Task(id="t0", split="test" if split == "test" else "train")]

    def _reset(self, task: Task, seed: int) -> Observation:
        self.turn = 0
        return self._obs("ready")

    def _obs(self, content: str, error: str | None = None) -> Observation:
        return Observation(role="agent", content=content, step=self.turn, error=error,
                           tools=[t.spec for t in self._tools().values()])

    def _tools(self) -> Mapping[str, Tool]:
        return self.TOOLS

    def _acting(self) -> tuple[str, int]:
        return "agent", self.turn

    def _next(self, content: str, events: list[Event], error: str | None = None) -> StepResult:
        self.turn += 1
        return StepResult(observation=self._obs(content, error), events=events, done=self.turn >= 3)

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        if tool == "note":
            return self._next("noted", [])
        rows = self.db.execute("SELECT body FROM docs WHERE body LIKE ? LIMIT ?",
                               (f"%{arguments['key']}%", arguments["limit"])).fetchall()
        return self._next(f"{len(rows)} rows", [Event(name="looked_up", step=self.turn)])

    def _reject(self, message: str, event: Event) -> StepResult:
        return self._next("rejected", [event], message)


class LegacyInputEnv(SqliteEnv):
    """The base class as it was: no check for lone surrogates or control characters before the env's own code."""

    def step(self, action: Action) -> StepResult:
        if not self._started or self._done:
            raise RuntimeError("step() outside an episode")
        tools = self._tools()
        if action.parse_error is not None or action.tool not in tools:
            result = self.invalid("bad call", "unknown_tool", "")
        else:
            try:
                arguments = tools[action.tool].validate(action.arguments)
            except ToolArgumentError as exc:
                result = self.invalid(str(exc), "bad_arguments", action.tool)
            else:
                result = self._apply(action.tool, arguments)
        self._done = result.done
        return result


class RawFtsEnv(SqliteEnv):
    """Passes agent text to FTS5 MATCH as query syntax."""

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        if tool == "lookup":
            self.db.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (arguments["key"],)).fetchall()
        return self._next("ok", [])


class EchoEnv(SqliteEnv):
    """Repeats the agent's note back at it, uncapped."""

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        return self._next(arguments.get("key", arguments.get("text", "")) * 50, [])


class OwnRejectEnv(SqliteEnv):
    """Builds its own invalid_action event instead of the canonical one."""

    def _reject(self, message: str, event: Event) -> StepResult:
        return self._next("rejected", [Event(name="invalid_action", step=self.turn, data={"why": message})], message)


def test_a_sound_env_passes() -> None:
    check_env(SqliteEnv(), cross_process=False)


def test_a_lone_surrogate_reaching_sqlite_is_caught() -> None:
    with pytest.raises(EnvCheckError, match=r"lone surrogate action .* raised UnicodeEncodeError"):
        check_env(LegacyInputEnv(), seeds=tuple(range(6)), cross_process=False)


def test_fts_syntax_in_free_text_is_caught() -> None:
    with pytest.raises(EnvCheckError, match=r"hostile text action 'lookup' raised OperationalError"):
        check_env(RawFtsEnv(), seeds=tuple(range(6)), cross_process=False)


def test_an_oversized_observation_is_caught() -> None:
    with pytest.raises(EnvCheckError, match=rf"observation; the cap is {MAX_OBSERVATION_CHARS}"):
        check_env(EchoEnv(), seeds=tuple(range(6)), cross_process=False)


def test_a_home_made_invalid_action_event_is_caught() -> None:
    with pytest.raises(EnvCheckError, match="not the canonical one"):
        check_env(OwnRejectEnv(), cross_process=False)


def test_the_base_class_rejects_hostile_input_before_the_env_sees_it() -> None:
    env = SqliteEnv()
    env.reset(env.tasks()[0], 0)
    cases = {"\ud800": "lone surrogate", "a\x00b": "control character", "\x1b[0m": "control character"}
    for value, why in cases.items():
        result = env.step(Action.call("lookup", key=value))
        assert why in (result.observation.error or "")
        assert result.events[0].data["kind"] == "bad_arguments"
        env.reset(env.tasks()[0], 0)
    for arguments in ({"key": "x", "limit": True}, {"key": "x", "limit": "1"}, {"key": "x", "limit": float("nan")}):
        result = env.step(Action(tool="lookup", arguments=arguments))
        assert result.events[0].name == "invalid_action", arguments
        env.reset(env.tasks()[0], 0)
    huge = env.step(Action(tool="x" * 1_000_000, arguments={}))
    assert len(huge.observation.error or "") < 1000 and len(str(huge.events[0].data)) < 1000
    assert hostile_text({"ok": ["fine", "\u202eright-to-left is text"]}) is None


def test_arguments_nested_past_the_recursion_limit_are_refused_and_still_serialize() -> None:
    """A direct Action (a served client, an in-process agent) can nest thousands of levels, or hold itself: the env
    refuses it as bad arguments instead of raising RecursionError, and the episode's JSON says what was not kept."""
    env = SqliteEnv()
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    looped: dict[str, Any] = {}
    looped["key"] = looped
    for arguments in ({"key": deep}, looped):
        env.reset(env.tasks()[0], 0)
        result = env.step(Action(tool="lookup", arguments=arguments))
        assert result.events[0].data["kind"] == "bad_arguments"
        assert "nest objects and arrays more than 32 deep" in (result.observation.error or "")
        dumped = Action(tool="lookup", arguments=arguments).model_dump(mode="json")
        assert dumped["arguments"] == "<not kept: objects and arrays nested more than 32 deep>"
    shallow: Any = "x"
    for _ in range(31):  # the arguments object and 31 arrays: 32 levels, accepted as text (the tool then decides)
        shallow = [shallow]
    assert hostile_text({"key": shallow}) is None and hostile_text({"key": [shallow]}) is not None


def test_an_episode_with_surrogates_in_the_action_serializes() -> None:
    action = Action(tool="lookup\ud800", arguments={"\udc00key": "\ud800"}, raw="\ud800")
    dumped = action.model_dump(mode="json")
    assert dumped["tool"] == "lookup\\ud800" and dumped["arguments"] == {"\\udc00key": "\\ud800"}
    assert action.arguments == {"\udc00key": "\ud800"}  # the record keeps what the model sent


TOOL_NAMES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


class SetOrderedToolsEnv(SqliteEnv):
    """Lists its tools in `set` order, which changes with the interpreter's hash seed."""

    TOOLS = {name: Tool.from_function(note, name=name) for name in TOOL_NAMES}

    def _tools(self) -> Mapping[str, Tool]:
        return {name: self.TOOLS[name] for name in set(TOOL_NAMES)}

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        return self._next("ok", [])


def test_a_tool_list_that_differs_across_processes_is_caught() -> None:
    with pytest.raises(EnvCheckError, match="differs in another process"):
        check_env(SetOrderedToolsEnv())
