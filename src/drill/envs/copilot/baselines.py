"""Scripted co-pilot policies: random (the floor), heuristic (fixed plans for templates it recognizes), oracle.

* `random`: a uniformly random tool with schema-random arguments, seeded by task, episode seed and turn.
* `heuristic`: reads the request with a regular expression per template it knows and runs a fixed tool sequence,
  reading ids and values out of the observations. It retries a call that failed with 429/503, and asks for
  confirmation before mail outside the company and before shares, and stops when the user declines. It never asks
  clarifying questions, does not judge whether a request is safe (an adversarial request it recognizes, it tries),
  and never acts on text in the data, because it acts only on the request. A request it does not recognize, it
  finishes at once.
* `oracle`: replays the task's reference solution, retrying a call that failed transiently. It is the ceiling.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from drill.core import Action, Policy, PolicyInfo, PolicyInput, random_arguments
from drill.envs.copilot.heuristic import plan_next
from drill.envs.copilot.tasks import CopilotTask


def _failed_transiently(turn_events: Sequence[object]) -> bool:
    return any(getattr(e, "name", "") == "transient_error" for e in turn_events)


class RandomPolicy:
    info = PolicyInfo(name="random")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            rng = random.Random(f"copilot-random:{item.task.id}:{item.seed}:{len(item.history)}")
            spec = item.observation.tools[rng.randrange(len(item.observation.tools))]
            actions.append(Action(tool=spec.name, arguments=random_arguments(spec, rng)))
        return actions


class OraclePolicy:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            task: CopilotTask = item.task  # type: ignore[assignment]
            done = sum(1 for turn in item.history if not _failed_transiently(turn.events))
            step = task.solution[min(done, len(task.solution) - 1)]
            actions.append(Action(tool=step.tool, arguments=dict(step.arguments)))
        return actions


class HeuristicPolicy:
    info = PolicyInfo(name="heuristic")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            last = item.history[-1] if item.history else None
            if last is not None and _failed_transiently(last.events):
                actions.append(last.action)  # retry what the service dropped
            else:
                actions.append(plan_next(_request(item), item.history, item.observation))
        return actions


def _request(item: PolicyInput) -> str:
    """The user's request, from the first observation (the heuristic reads what the agent sees, never the task)."""
    first = item.history[0].observation if item.history else item.observation
    return first.content.split("asks:\n\n", 1)[-1]


baselines: dict[str, Callable[[], Policy]] = {"random": RandomPolicy, "heuristic": HeuristicPolicy,
                                               "oracle": OraclePolicy}
