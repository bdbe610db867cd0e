"""The environment contract, Gymnasium-sized.

An `Env` is physics plus an event log. It never scores: the rubric reads the events afterwards.

Contract (checked by `drill.core.check_env`):

* `reset(task, seed)` starts an episode and returns the first observation, for the role that acts first.
* `step(action)` applies one action by the role that the last observation was for, and returns the
  next observation (for the role that acts next), the events the action caused, and `done`.
* The same task, seed and actions give the same observations and events, byte for byte, in any process.
* Agent input never raises. An unknown tool, arguments that do not fit the schema, an oversized
  argument or an unparseable model output is answered with an observation whose `error` says what was
  wrong, plus an `invalid_action` event; the invalid action still uses the role's turn.
* Programmer errors do raise: `step` before `reset`, or after the episode is done.

Subclasses implement `tasks`, `_reset`, `_tools`, `_apply` and `_reject`; the base class does the
validation, so every environment rejects bad input the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from drill.core.tools import Tool, ToolArgumentError
from drill.core.types import Action, Observation, StepResult, Task


class Env(ABC):
    name: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]

    def __init__(self, **options: Any) -> None:
        self.options: dict[str, Any] = dict(options)
        self._started = False
        self._done = False

    # -- public contract -------------------------------------------------------------------------

    @abstractmethod
    def tasks(self, split: str = "test") -> list[Task]:
        """The environment's task set for a split ("train" or "test"), in a stable order."""

    def task(self, task_id: str) -> Task:
        for split in ("train", "test"):
            for task in self.tasks(split):
                if task.id == task_id:
                    return task
        raise KeyError(f"{self.name}: no task with id {task_id!r}")

    def reset(self, task: Task, seed: int) -> Observation:
        observation = self._reset(task, seed)
        self._started = True
        self._done = False
        return observation

    def step(self, action: Action) -> StepResult:
        if not self._started:
            raise RuntimeError(f"{self.name}: step() called before reset()")
        if self._done:
            raise RuntimeError(f"{self.name}: step() called after the episode ended; call reset()")
        tools = self._tools()
        if action.parse_error is not None:
            result = self._reject(action, f"could not parse your tool call: {action.parse_error}")
        elif action.tool not in tools:
            known = ", ".join(sorted(tools))
            result = self._reject(action, f"unknown tool {action.tool!r} for this role; available: {known}")
        else:
            try:
                arguments = tools[action.tool].validate(action.arguments)
            except ToolArgumentError as exc:
                result = self._reject(action, str(exc))
            else:
                result = self._apply(action.tool, arguments)
        self._done = result.done
        return result

    @property
    def done(self) -> bool:
        return self._done

    # -- what subclasses implement ----------------------------------------------------------------

    @abstractmethod
    def _reset(self, task: Task, seed: int) -> Observation:
        """Start an episode and return the first observation."""

    @abstractmethod
    def _tools(self) -> Mapping[str, Tool]:
        """The tools of the role that acts now."""

    @abstractmethod
    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        """Apply a validated tool call by the role that acts now."""

    @abstractmethod
    def _reject(self, action: Action, message: str) -> StepResult:
        """Answer an invalid action: use up the role's turn, emit `invalid_action`, show `message`."""
