"""Training-only shaping rewards: a dense signal for getting the tool-call format right.

A small model often starts where no episode earns any reward (it never writes a parseable tool
call), so every GRPO group has zero variance and nothing is learned. A shaping component pays for
progress toward a well-formed call and is added to the environment's rubric during training only
(`RunConfig.shaping`); anneal it away with a weight schedule, e.g. `tool_call_format=0.5->0.0`.
The held-out evaluation never includes it. Like every component it is logged on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from drill.core.rubric import Component, ComponentFn, Rubric
from drill.core.types import Episode, Task, Turn

TOOL_CALL_OPEN = "<tool_call>"


def tool_call_format(episode: Episode, task: Task) -> float:
    """Mean over the model's turns (turns with a Generation) of a four-rung ladder, 0.25 each:
    the reply opens a call (`<tool_call>` or a leading `{`); it parses as a tool call; the tool is one the
    observation offered; the environment accepted the action (no `invalid_action` event)."""
    turns = [t for t in episode.turns if t.action.generation is not None]
    if not turns:
        return 0.0
    return sum(_rungs(t) for t in turns) / (4 * len(turns))


def _rungs(turn: Turn) -> int:
    generation = turn.action.generation
    text = (turn.action.raw if turn.action.raw is not None else generation.text if generation else "").lstrip()
    opens = TOOL_CALL_OPEN in text or text.startswith("{")
    parsed = turn.action.parse_error is None
    known = parsed and turn.action.tool in {tool.name for tool in turn.observation.tools}
    accepted = known and not any(e.name == "invalid_action" for e in turn.events)
    return int(opens) + int(parsed) + int(known) + int(accepted)


SHAPING: dict[str, ComponentFn] = {"tool_call_format": tool_call_format}
"""Shaping components by name."""


def with_shaping(rubric: Rubric, names: Sequence[str], weights: dict[str, float]) -> Rubric:
    """`rubric` plus the named shaping components, each weighted by its schedule's value (1.0 without one)."""
    unknown = [n for n in names if n not in SHAPING]
    if unknown:
        raise ValueError(f"unknown shaping reward(s) {', '.join(unknown)}; choose from {', '.join(SHAPING)}")
    clashing = [n for n in names if n in rubric.weights]
    if clashing:
        raise ValueError(f"shaping reward(s) {', '.join(clashing)} clash with the environment's rubric components")
    extra = [Component(n, SHAPING[n], weights.get(n, 1.0), "training-only shaping") for n in names]
    return Rubric([*rubric.components, *extra])
