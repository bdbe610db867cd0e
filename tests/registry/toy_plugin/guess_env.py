"""A third-party environment in one file, registered from outside Drill through the `drill.envs` entry point:
guess a secret number from 1 to 20 with "higher"/"lower" hints. Its distribution declares

    [project.entry-points."drill.envs"]
    guess = "guess_env:SPEC"

and gets `drill eval guess`, `drill watch guess` and `drill train guess` without a line of Drill changed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from drill.core import Action, Component, Env, Episode, Event, Observation, PolicyInfo, PolicyInput, Rubric
from drill.core import StepResult, Task, Tool, check_split
from drill.core.spec import Column, EnvOption, EnvSpec, percent


class GuessTask(Task):
    secret: int


def guess(number: Annotated[int, Field(ge=1, le=20)]) -> None:
    """Guess the secret number.

    Args:
        number: Your guess, 1 to 20.
    """


TOOLS = {"guess": Tool.from_function(guess)}


class GuessEnv(Env[GuessTask]):
    name = "guess"
    roles = ("player",)
    task_type = GuessTask

    def __init__(self, max_turns: int = 6) -> None:
        super().__init__(max_turns=max_turns)
        self.max_turns = max_turns

    def tasks(self, split: str = "test") -> list[GuessTask]:
        check_split(split)
        offset = {"test": 0, "train": 1, "validation": 2}[split]
        return [GuessTask(id=f"{split}-{i}", split=split, secret=(7 * i + offset) % 20 + 1) for i in range(8)]

    def _reset(self, task: GuessTask, seed: int) -> Observation:
        self.task, self.turn = task, 0
        return self._obs("Guess the secret number from 1 to 20.")

    def _obs(self, content: str, error: str | None = None) -> Observation:
        return Observation(role="player", content=content, step=self.turn, error=error,
                           tools=[t.spec for t in TOOLS.values()], instructions="Find the number in few guesses.")

    def _tools(self) -> Mapping[str, Tool]:
        return TOOLS

    def _acting(self) -> tuple[str, int]:
        return "player", self.turn

    def _end_turn(self, content: str, events: list[Event], error: str | None = None, won: bool = False) -> StepResult:
        self.turn += 1
        return StepResult(observation=self._obs(content, error), events=events,
                          done=won or self.turn >= self.max_turns)

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        number, secret = arguments["number"], self.task.secret
        if number == secret:
            return self._end_turn("Correct!", [Event(name="solved", step=self.turn)], won=True)
        hint = "higher" if secret > number else "lower"
        return self._end_turn(f"{number}: go {hint}.", [Event(name="guessed", step=self.turn,
                                                                data={"number": number, "hint": hint})])

    def _reject(self, message: str, event: Event) -> StepResult:
        return self._end_turn("Invalid guess.", [event], message)


def solved(episode: Episode, task: GuessTask) -> float:
    return float(episode.count("solved") > 0)


def guesses(episode: Episode, task: GuessTask) -> float:
    return float(len(episode.turns))


def rubric(penalty: float = 0.1) -> Rubric[GuessTask]:
    return Rubric([Component("solved", solved, 1.0), Component("guesses", guesses, -penalty),
                   Component("invalid", lambda e, t: float(e.count("invalid_action")), -0.2)])


class Bisect:
    """The heuristic: binary search on the hints so far."""

    info = PolicyInfo(name="heuristic")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            low, high = 1, 20
            for turn in item.history:
                for event in turn.events:
                    if event.name == "guessed":
                        n = int(event.data["number"])  # type: ignore[arg-type]
                        low, high = (n + 1, high) if event.data["hint"] == "higher" else (low, n - 1)
            actions.append(Action.call("guess", number=(low + high) // 2))
        return actions


class Oracle:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action.call("guess", number=item.task.secret) for item in inputs]  # type: ignore[attr-defined]


class Random:
    info = PolicyInfo(name="random")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action.call("guess", number=random.Random(f"{i.task.id}:{i.seed}:{len(i.history)}").randint(1, 20))
                for i in inputs]


def summarize(episodes: Sequence[Episode], tasks: Mapping[str, GuessTask]) -> dict[str, Any]:
    return {"reward": statistics.fmean(e.score.total for e in episodes if e.score),
            "solved": statistics.fmean(e.count("solved") > 0 for e in episodes),
            "guesses": statistics.fmean(len(e.turns) for e in episodes)}


SPEC: EnvSpec[GuessTask] = EnvSpec(
    name="guess",
    summary="guess a number from higher/lower hints",
    load=GuessEnv,
    rubric=lambda options, params: rubric(params["penalty"]),
    baselines=lambda options: {"random": Random, "heuristic": Bisect, "oracle": Oracle},
    summarize=summarize,
    success=lambda episode, task: episode.count("solved") > 0,
    columns=(Column("reward"), Column("solved", percent), Column("guesses", "{:.1f}".format)),
    describe=lambda task: f"{task.id}: the secret is {task.secret}",
    options=(EnvOption("max_turns", int, 6, "Guesses allowed.", flag="--max-turns"),),
    rubric_params=(EnvOption("penalty", float, 0.1, "Cost of each guess.", flag="--penalty"),),
)
