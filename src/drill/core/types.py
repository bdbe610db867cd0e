"""The records that flow through Drill: tools, actions, observations, turns, episodes, scores.

They are pydantic models because every one of them crosses a process boundary at some point
(results.json, checkpoints, HTTP serving, the cross-process determinism check).
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from drill.core.text import json_safe

EventValue = str | int | float | bool | None | list[str]
"""An event payload value. Lists of ids are lists, never JSON or space-joined text inside a string."""


_NAME = attrgetter("name")
_new = object.__new__
_set = object.__setattr__


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def trusted(cls, **fields: Any) -> Self:
        """A record built from values the code itself made, without validation: `model_construct` with every field
        given, minus its per-field pass over defaults (about twice as fast). For hot paths only (an environment's
        observation and events, the rollout's turns); every field must be given, and agent input never comes this
        way. A test holds it equal to `model_construct` in value, dump and copy."""
        if len(fields) != len(cls.__pydantic_fields__):
            missing = sorted(set(cls.__pydantic_fields__) - set(fields))
            raise TypeError(f"{cls.__name__}.trusted needs every field; missing {missing}, "
                            f"unknown {sorted(set(fields) - set(cls.__pydantic_fields__))}")
        record = _new(cls)
        _set(record, "__dict__", fields)
        _set(record, "__pydantic_fields_set__", set(fields))
        _set(record, "__pydantic_extra__", None)
        _set(record, "__pydantic_private__", None)
        return record


class ToolSpec(Record):
    """A tool as the model sees it: a name, a description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai_format(self) -> dict[str, Any]:
        """The `{"type": "function", "function": {...}}` shape used by chat templates and the OpenAI API."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class Generation(Record):
    """What a language model produced for one turn, with the exact token ids it sampled.

    `prompt_token_ids` are the ids the model was conditioned on; training rebuilds the sequence
    as prompt_token_ids + token_ids and never re-tokenizes text.
    """

    text: str
    prompt_token_ids: list[int] = Field(default_factory=list, exclude=True, repr=False)
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    model: str = ""
    finish_reason: str = ""


class Action(Record):
    """One tool call by the acting role.

    `arguments` is untrusted agent input: any JSON value may arrive here and the environment
    validates it. An action whose model output could not be parsed carries `parse_error`;
    the environment answers it with an error observation and an `invalid_action` event.
    """

    tool: str
    arguments: Any = Field(default_factory=dict)
    parse_error: str | None = None
    raw: str | None = None
    generation: Generation | None = None

    @field_serializer("tool", "arguments", "raw", "parse_error", when_used="json")
    def _json_safe(self, value: Any) -> Any:
        """Agent text may hold lone surrogates (`"\\ud800"` in a tool call's JSON); JSON output escapes them
        so an episode always serializes. The action itself keeps what the model sent."""
        return json_safe(value)

    @classmethod
    def call(cls, tool: str, **arguments: Any) -> Action:
        return cls(tool=tool, arguments=arguments)

    @classmethod
    def unparseable(cls, raw: str, error: str, generation: Generation | None = None) -> Action:
        return cls(tool="", arguments={}, parse_error=error, raw=raw, generation=generation)


class Event(Record):
    """Something that happened in the world, for the rubric to score (`resolved`, `wrong_fix`, ...)."""

    name: str
    step: int
    role: str | None = None
    data: dict[str, EventValue] = Field(default_factory=dict)


class Observation(Record):
    """What the role that acts next sees: its rendered view, its tools, and the error of the last action."""

    role: str
    content: str
    step: int
    tools: list[ToolSpec] = Field(default_factory=list, repr=False)
    """The tools this role may call now. Serialized with the observation (HTTP, check_env); reports may leave
    them out (`drill.evaluate.report.write_results`), since they repeat every turn."""
    instructions: str = Field(default="", repr=False)
    """The role's standing brief (who it is, what it is for); an LLM policy puts it in the system prompt."""
    error: str | None = None


class StepResult(Record):
    observation: Observation
    events: list[Event] = Field(default_factory=list)
    done: bool = False


Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")
"""Every environment's three disjoint task sets. `train` is what training plays; `validation` (carved out of the
train pool, drawn like test) is where recipes, hyperparameters and checkpoints are chosen; `test` is played once,
for the final table, so published test numbers stay comparable."""


class Task(Record):
    """A unit of work for an environment. Environments subclass it with their own fields.

    Ground truth lives on the task. Only the environment, the rubric and the oracle read it;
    an observation never contains it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    split: Split = "test"


class PolicyInfo(Record):
    """Which policy produced a turn. Evaluation tables show it, so a fallback can never hide."""

    name: str
    kind: Literal["scripted", "llm", "lora", "remote"] = "scripted"
    model: str | None = None
    adapter_path: str | None = None
    adapter_sha256: str | None = None
    load_status: str = "ok"


class Turn(Record):
    index: int
    role: str
    observation: Observation
    action: Action
    events: list[Event] = Field(default_factory=list)
    policy: str = ""


class Score(Record):
    """A rubric's verdict: each component's raw value, its weight, and the weighted total."""

    total: float
    components: dict[str, float]
    weights: dict[str, float]

    def contribution(self, name: str) -> float:
        return self.components[name] * self.weights[name]


class Episode(Record):
    env: str
    task_id: str
    seed: int
    turns: list[Turn] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    policies: dict[str, PolicyInfo] = Field(default_factory=dict)
    done: bool = False
    score: Score | None = None

    def events_named(self, name: str) -> list[Event]:
        return [e for e in self.events if e.name == name]

    def count(self, name: str) -> int:
        """How many events are called `name`. Rubrics and summaries ask for several names per episode, so the
        names are counted once and kept with the episode (for this `events` list: a copy with other events
        counts again). The count is not a field: dumps, copies' fields and equality do not see it."""
        cached = self.__dict__.get("_event_counts")
        if cached is None or cached[0] is not self.events:
            cached = (self.events, Counter(map(_NAME, self.events)))
            self.__dict__["_event_counts"] = cached
        return cached[1][name]
