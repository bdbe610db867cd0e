"""Rubrics: named, weighted reward components over an episode's event log.

A component is a plain function `(episode, task) -> float`. The rubric keeps every component's raw
value in the `Score`, next to its weight, so each can be logged, plotted and audited on its own.
A component that raises, or returns NaN or infinity, fails the scoring loudly: in RL a silent 0
costs days.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from drill.core.types import Episode, Score, Task

TaskT = TypeVar("TaskT", bound=Task)
ComponentFn = Callable[[Episode, TaskT], float]


class RubricError(RuntimeError):
    """A reward component failed. Never caught inside Drill."""


@dataclass(frozen=True)
class Component(Generic[TaskT]):
    name: str
    fn: Callable[[Episode, TaskT], float]
    weight: float = 1.0
    description: str = ""


class Rubric(Generic[TaskT]):
    """A weighted list of components, generic over the task type its components read."""

    def __init__(self, components: Sequence[Component[TaskT]]) -> None:
        names = [c.name for c in components]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate component names in rubric: {names}")
        self.components: tuple[Component[TaskT], ...] = tuple(components)

    @property
    def weights(self) -> dict[str, float]:
        return {c.name: c.weight for c in self.components}

    def reweighted(self, weights: Mapping[str, float]) -> Rubric[TaskT]:
        """A copy with some weights replaced; unknown names are an error."""
        unknown = set(weights) - set(self.weights)
        if unknown:
            raise ValueError(f"unknown rubric components {sorted(unknown)}; known: {sorted(self.weights)}")
        return Rubric([replace(c, weight=float(weights.get(c.name, c.weight))) for c in self.components])

    def score(self, episode: Episode, task: TaskT) -> Score:
        values: dict[str, float] = {}
        for component in self.components:
            try:
                value = float(component.fn(episode, task))
            except Exception as exc:
                raise RubricError(
                    f"reward component {component.name!r} failed on task {task.id!r} seed {episode.seed}: {exc!r}"
                ) from exc
            if not math.isfinite(value):
                raise RubricError(
                    f"reward component {component.name!r} returned {value} on task {task.id!r} seed {episode.seed}"
                )
            values[component.name] = value
        total = sum(values[c.name] * c.weight for c in self.components)
        return Score(total=total, components=values, weights=self.weights)
