"""The environment contract, Gymnasium-sized.

An `Env` is physics plus an event log. It never scores: the rubric reads the events afterwards.
It is generic over its task type, `Env[TaskT]`, so a subclass's `_reset` receives its own task class
and never narrows with `isinstance`.

Set these in ALL subclasses:

* `name` — the environment's registry name;
* `roles` — the roles that act, in a stable order;
* `task_type` — the `Task` subclass its tasks are (the base checks it once, in `reset`);
* `observation_type` — only if its observations subclass `Observation` with extra fields (ChaosOps' structured
  view for scripted policies): they must serialize and parse back, so a served env's client rebuilds them.

and implement `tasks`, `_reset`, `_tools`, `_apply`, `_reject` and `_acting`. Everything that touches
agent input lives here, so every environment rejects bad input the same way.

Contract (checked by `drill.core.check_env`):

* `reset(task, seed)` starts an episode and returns the first observation, for the role that acts first.
* `step(action)` applies one action by the role that the last observation was for, and returns the
  next observation (for the role that acts next), the events the action caused, and `done`.
* The same task, seed and actions give the same observations and events, byte for byte, in any process.
* Agent input never raises. An unparseable model output, an unknown tool, arguments that do not fit the
  schema (a `bool` or `"1"` where an integer is expected, a string where a number is), an oversized
  argument, a lone surrogate or a control character in any string, or a NaN is answered with an
  observation whose `error` says what was wrong, and one canonical `invalid_action` event (`invalid_event`);
  the invalid action still uses the role's turn. Every agent string echoed back is capped (`ECHO_CHARS`).
* Observations and episodes always serialize with `model_dump(mode="json")`; no observation is longer
  than `MAX_OBSERVATION_CHARS`.
* Programmer errors do raise: `step` before `reset`, or after the episode is done; a task of the wrong type.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, Literal, TypeVar

from drill.core.text import ECHO_CHARS, hostile_text, printable
from drill.core.tools import Tool, ToolArgumentError
from drill.core.types import SPLITS, Action, Event, Observation, StepResult, Task

TaskT = TypeVar("TaskT", bound=Task)


def check_split(split: str) -> None:
    """ValueError naming the splits unless `split` is one of them (for `Env.tasks`)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose {', '.join(SPLITS[:-1])} or {SPLITS[-1]}")


MAX_OBSERVATION_CHARS = 24_000
"""No observation's `content` (plus its error) may be longer; `check_env` enforces it."""
MAX_ERROR_CHARS = 600
"""An error shown to the agent is cut to this length."""

InvalidKind = Literal["parse_error", "unknown_tool", "bad_arguments", "rule"]
"""Why an action was invalid: the model output did not parse, the tool does not exist for the role, the
arguments do not fit the schema (or hold hostile text), or the environment's own rules refused it."""


class Env(ABC, Generic[TaskT]):
    name: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]
    task_type: ClassVar[type[Task]] = Task
    observation_type: ClassVar[type[Observation]] = Observation

    def __init__(self, **options: Any) -> None:
        self.options: dict[str, Any] = dict(options)
        self._started = False
        self._done = False

    # -- public contract -------------------------------------------------------------------------

    @abstractmethod
    def tasks(self, split: str = "test") -> list[TaskT]:
        """The environment's task set for a split (one of `SPLITS`: train, validation, test), in a stable order.
        The three are disjoint; an unknown split raises ValueError naming them."""

    def task(self, task_id: str) -> TaskT:
        """The task with this id, from any split; KeyError if there is none."""
        for split in SPLITS:
            for task in self.tasks(split):
                if task.id == task_id:
                    return task
        raise KeyError(f"{self.name}: no task with id {task_id!r}")

    def reset(self, task: TaskT, seed: int) -> Observation:
        """Start an episode of `task` with `seed`; the first observation, for the role that acts first."""
        if not isinstance(task, self.task_type):
            raise TypeError(f"{self.name} tasks are {self.task_type.__name__}, got {type(task).__name__}")
        observation = self._reset(task, seed)
        self._started = True
        self._done = False
        return observation

    def step(self, action: Action) -> StepResult:
        """Apply one action by the acting role. Never raises on agent input (see the module docstring)."""
        if not self._started:
            raise RuntimeError(f"{self.name}: step() called before reset()")
        if self._done:
            raise RuntimeError(f"{self.name}: step() called after the episode ended; call reset()")
        tools = self._tools()
        tool = action.tool if isinstance(action.tool, str) else ""
        if action.parse_error is not None:
            result = self.invalid(f"could not parse your tool call: {action.parse_error}", "parse_error", tool)
        elif tool not in tools:
            known = ", ".join(sorted(tools))
            result = self.invalid(f"unknown tool {printable(tool)!r} for this role; available: {known}",
                                  "unknown_tool", tool)
        elif problem := hostile_text(action.arguments):
            result = self.invalid(f"{tool}: {problem}", "bad_arguments", tool)
        else:
            try:
                arguments = tools[tool].validate(action.arguments)
            except ToolArgumentError as exc:
                result = self.invalid(str(exc), "bad_arguments", tool)
            else:
                result = self._apply(tool, arguments)
        self._done = result.done
        return result

    @property
    def done(self) -> bool:
        return self._done

    def invalid_event(self, message: str, kind: InvalidKind, tool: str = "") -> Event:
        """The one `invalid_action` event every environment emits: the acting role, the step, why, and the tool
        named (capped)."""
        role, step = self._acting()
        return Event(name="invalid_action", step=step, role=role,
                     data={"kind": kind, "tool": printable(tool, ECHO_CHARS), "reason": message})

    def invalid(self, message: str, kind: InvalidKind = "rule", tool: str = "") -> StepResult:
        """Answer an invalid action: the message (made printable and capped) as the error, the canonical event.
        Environments call it from `_apply` for actions their own rules refuse."""
        message = printable(message, MAX_ERROR_CHARS)
        return self._reject(message, self.invalid_event(message, kind, tool))

    # -- what subclasses implement ----------------------------------------------------------------

    @abstractmethod
    def _reset(self, task: TaskT, seed: int) -> Observation:
        """Start an episode and return the first observation."""

    @abstractmethod
    def _tools(self) -> Mapping[str, Tool]:
        """The tools of the role that acts now."""

    @abstractmethod
    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        """Apply a validated tool call by the role that acts now."""

    @abstractmethod
    def _reject(self, message: str, event: Event) -> StepResult:
        """Use up the acting role's turn for an invalid action: show `message` as the error and return `event`
        (with any events the turn's end causes)."""

    @abstractmethod
    def _acting(self) -> tuple[str, int]:
        """The role that acts now and the current step, for events the base class builds."""
