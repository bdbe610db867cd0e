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

from drill.core.types import Episode, Score, Task

ComponentFn = Callable[[Episode, Task], float]


class RubricError(RuntimeError):
    """A reward component failed. Never caught inside Drill."""


@dataclass(frozen=True)
class Component:
    name: str
    fn: ComponentFn
    weight: float = 1.0
    description: str = ""


class Rubric:
    def __init__(self, components: Sequence[Component]) -> None:
        names = [c.name for c in components]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate component names in rubric: {names}")
        self.components: tuple[Component, ...] = tuple(components)

    @property
    def weights(self) -> dict[str, float]:
        return {c.name: c.weight for c in self.components}

    def reweighted(self, weights: Mapping[str, float]) -> Rubric:
        """A copy with some weights replaced; unknown names are an error."""
        unknown = set(weights) - set(self.weights)
        if unknown:
            raise ValueError(f"unknown rubric components {sorted(unknown)}; known: {sorted(self.weights)}")
        return Rubric([replace(c, weight=float(weights.get(c.name, c.weight))) for c in self.components])

    def score(self, episode: Episode, task: Task) -> Score:
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
