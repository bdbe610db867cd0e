"""A toy environment for the inference-time methods: open a coloured lock with a 3-button code and no hints.

Each colour's lock has one code (three presses of buttons 1-3), the same in the train and test splits, so
exactly one of the 27 press sequences is rewarded: only search, memory of a solved lock of that colour, or
the oracle finds it. When the episode ends the world logs a `lock_checked` event holding the expected code,
as a world's log may: the rubric reads it, and a reflection must never see it.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from drill.core import Action, Component, Env, Episode, Event, Observation, PolicyInfo, PolicyInput, Rubric
from drill.core import StepResult, Task, Tool
from drill.core.spec import Column, EnvSpec, percent

COLOURS = ("red", "blue", "green", "amber", "violet", "teal")
PLACES = {"train": "the shed", "test": "the vault"}


class LockTask(Task):
    colour: str
    code: tuple[int, int, int]


def code_of(colour: str) -> tuple[int, int, int]:
    digest = hashlib.sha256(colour.encode()).digest()
    return (digest[0] % 3 + 1, digest[1] % 3 + 1, digest[2] % 3 + 1)


def press(button: Annotated[int, Field(ge=1, le=3)]) -> None:
    """Press one button of the lock.

    Args:
        button: 1, 2 or 3.
    """


TOOLS = {"press": Tool.from_function(press)}


class LockEnv(Env[LockTask]):
    name = "lock"
    roles = ("player",)
    task_type = LockTask

    def tasks(self, split: str = "test") -> list[LockTask]:
        return [LockTask(id=f"{split}-{c}", split="train" if split == "train" else "test", colour=c, code=code_of(c))
                for c in COLOURS]

    def _reset(self, task: LockTask, seed: int) -> Observation:
        self.task, self.pressed = task, []  # type: ignore[var-annotated]
        return self._obs(f"The {task.colour} lock in {PLACES[task.split]} has buttons 1, 2 and 3. "
                         "Press three buttons in the right order to open it.")

    def _obs(self, content: str, error: str | None = None) -> Observation:
        return Observation(role="player", content=content, step=len(self.pressed), error=error,
                           tools=[t.spec for t in TOOLS.values()], instructions="Open the lock.")

    def _tools(self) -> Mapping[str, Tool]:
        return TOOLS

    def _acting(self) -> tuple[str, int]:
        return "player", len(self.pressed)

    def _finish(self, events: list[Event], error: str | None = None) -> StepResult:
        done = len(self.pressed) >= 3
        if not done:
            return StepResult(observation=self._obs(f"Pressed. {3 - len(self.pressed)} presses left.", error),
                              events=events)
        opened = tuple(self.pressed) == self.task.code
        events = [*events, Event(name="lock_checked", step=len(self.pressed),
                                 data={"opened": opened, "expected": "-".join(map(str, self.task.code))})]
        return StepResult(observation=self._obs("The lock opens!" if opened else "The lock stays shut.", error),
                          events=events, done=True)

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        self.pressed.append(arguments["button"])
        return self._finish([Event(name="pressed", step=len(self.pressed) - 1, data={"button": arguments["button"]})])

    def _reject(self, message: str, event: Event) -> StepResult:
        self.pressed.append(0)
        return self._finish([event], message)


def opened(episode: Episode, task: LockTask) -> float:
    return float(any(e.name == "lock_checked" and e.data["opened"] for e in episode.events))


def rubric() -> Rubric[LockTask]:
    return Rubric([Component("opened", opened, 1.0),
                   Component("invalid", lambda e, t: float(e.count("invalid_action")), -0.2)])


class Oracle:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action.call("press", button=i.task.code[len(i.history)]) for i in inputs]  # type: ignore[attr-defined]


class PressOne:
    info = PolicyInfo(name="heuristic")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action.call("press", button=1) for _ in inputs]


def summarize(episodes: Sequence[Episode], tasks: Mapping[str, LockTask]) -> dict[str, Any]:
    return {"reward": statistics.fmean(e.score.total for e in episodes if e.score),
            "opened": statistics.fmean(opened(e, tasks[e.task_id]) for e in episodes)}


SPEC: EnvSpec[LockTask] = EnvSpec(
    name="lock",
    summary="open a coloured lock with a three-button code",
    load=LockEnv,
    rubric=lambda options, params: rubric(),
    baselines=lambda options: {"heuristic": PressOne, "oracle": Oracle},
    summarize=summarize,
    columns=(Column("reward"), Column("opened", percent)),
    describe=lambda task: f"{task.id}: code {task.code}",
)
