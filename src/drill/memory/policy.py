"""`MemoryPolicy`: an LLM policy whose prompt also holds what it remembers.

Two sources, either or both:

* **retrieved past successes** (`--memory PATH --memory-k K`): for each task, the k most similar successful
  training episodes in a `TrajectoryStore` (BM25 on the task text, which is the first observation), shown as
  worked examples in the same format as `--demos` (`Demonstration`: an observation as a user message and the
  call as an assistant message), every valid turn of the acting role, at most `max_turns_per_episode` per
  episode. The first example of each episode says it is a past task solved well.
* **reflections** (`--attempts N --reflect`): notes the model wrote on its own failed attempts at this task
  and seed, the last `REFLECTION_WINDOW` of them, appended to the system prompt.

The prompt is otherwise exactly `LLMPolicy`'s, and calls stay batched: one `generate` per `act`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from drill.core.policy import PolicyInput
from drill.memory.store import TrajectoryStore
from drill.models.base import Message
from drill.models.policy import LLMPolicy, render_call, render_observation
from drill.models.prompt import Demonstration

__all__ = ["REFLECTION_WINDOW", "Memory", "MemoryPolicy", "with_memory"]

REFLECTION_WINDOW = 3
"""At most this many reflections are kept and shown (Reflexion's m ≤ 3)."""
EXAMPLE_NOTE = "(Worked example: a past task that was solved well. Your own task follows after the examples.)\n\n"


class Memory:
    """Retrieval of past successes for one environment and its options (see `TrajectoryStore.similar`)."""

    def __init__(self, store: TrajectoryStore, env: str, options: Mapping[str, Any], k: int,
                 max_turns_per_episode: int = 6) -> None:
        if k < 0:
            raise ValueError(f"--memory-k must be 0 or more, got {k}")
        self.store, self.env, self.options, self.k = store, env, dict(options), k
        self.max_turns_per_episode = max_turns_per_episode
        self._cache: dict[tuple[str, str, str], tuple[Demonstration, ...]] = {}

    def recall(self, role: str, query: str, task_id: str) -> tuple[Demonstration, ...]:
        """The worked examples for `role` from the episodes most similar to `query` (never `task_id`'s own)."""
        key = (role, query, task_id)
        if key not in self._cache:
            shown: list[Demonstration] = []
            for hit in self.store.similar(self.env, self.options, query, self.k, exclude_task=task_id):
                turns = [t for t in hit.episode().turns if t.role == role and t.action.parse_error is None
                         and not any(e.name == "invalid_action" for e in t.events)]
                for i, turn in enumerate(turns[:self.max_turns_per_episode]):
                    observation = render_observation(turn.observation)
                    shown.append(Demonstration(role=role, observation=(EXAMPLE_NOTE if i == 0 else "") + observation,
                                               reply=render_call(turn.action.tool, turn.action.arguments)))
            self._cache[key] = tuple(shown)
        return self._cache[key]


class MemoryPolicy(LLMPolicy):
    """An `LLMPolicy` plus retrieved examples and reflections (see the module docstring). Same model, same info."""

    def __init__(self, policy: LLMPolicy, memory: Memory | None = None,
                 reflections: Mapping[tuple[str, int], Sequence[str]] | None = None) -> None:
        super().__init__(policy.model, policy.info, policy.options)
        self.memory = memory
        self.reflections: dict[tuple[str, int], list[str]] = {k: list(v) for k, v in (reflections or {}).items()}

    def reflect_on(self, task_id: str, seed: int, reflection: str) -> None:
        """Keep a reflection for this task and seed; only the last `REFLECTION_WINDOW` are kept."""
        kept = self.reflections.setdefault((task_id, seed), [])
        kept.append(reflection)
        del kept[:-REFLECTION_WINDOW]

    def conversation(self, item: PolicyInput) -> list[Message]:
        demos = self.options.demonstrations
        if self.memory is not None:
            first = item.history[0].observation if item.history else item.observation
            demos = demos + self.memory.recall(item.observation.role, first.content, item.task.id)
        messages = LLMPolicy(self.model, self.info, replace(self.options, demonstrations=demos)).conversation(item)
        notes = self.reflections.get((item.task.id, item.seed), [])
        if notes:
            lines = "\n".join(f"{i}. {note}" for i, note in enumerate(notes, 1))
            messages[0] = {"role": "system", "content": messages[0]["content"] + "\n\n# Reflections on your earlier "
                           f"attempts at this task (they failed)\n\n{lines}\n\nUse them: do not repeat what failed."}
        return messages


def with_memory(policies: Mapping[str, Any], memory: Memory | None) -> dict[str, Any]:
    """The same role assignment with every LLM policy wrapped in a `MemoryPolicy` (one wrapper per shared policy,
    so roles that shared a model still share its batched calls); scripted policies unchanged."""
    wrapped: dict[int, Any] = {}
    out = {}
    for role, policy in policies.items():
        if isinstance(policy, LLMPolicy) and not isinstance(policy, MemoryPolicy):
            out[role] = wrapped.setdefault(id(policy), MemoryPolicy(policy, memory))
        else:
            out[role] = policy
    return out

