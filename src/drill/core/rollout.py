"""The rollout runner: play many episodes in lockstep, batching each policy's calls.

At every round, the episodes that are still running are grouped by the policy of the role that acts
next, and each policy gets one `act` call with all its inputs. For a language-model policy that is
one batched `generate` call per turn for a whole GRPO group.

While episodes run, the garbage collector's first generation is collected every 50,000 allocations instead of
every 700 (`fewer_collections`): the episodes' records are many small objects that all stay alive, and tracing them
again and again was 40% of a scripted ChaosOps evaluation. Cyclic garbage is still collected, only less often.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from drill.core.env import Env
from drill.core.policy import Policy, PolicyInput
from drill.core.rubric import Rubric
from drill.core.types import Episode, Event, Observation, Task, Turn


@dataclass
class _Running:
    env: Env
    task: Task
    seed: int
    observation: Observation
    turns: list[Turn] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    done: bool = False


_GC_LOCK = threading.Lock()
_gc_users = 0
_gc_saved: tuple[int, ...] = ()
GC_THRESHOLD = 50_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the garbage collector's first-generation threshold to `GC_THRESHOLD` while the block runs (nested and
    concurrent blocks share one setting; the last to leave restores the previous thresholds)."""
    global _gc_users, _gc_saved
    with _GC_LOCK:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(GC_THRESHOLD, _gc_saved[0]), *_gc_saved[1:])
        _gc_users += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_users -= 1
            if _gc_users == 0:
                gc.set_threshold(*_gc_saved)


def run_episodes(
    make_env: Callable[[], Env],
    jobs: Sequence[tuple[Task, int]],
    policies: Policy | Mapping[str, Policy],
    rubric: Rubric | None = None,
    max_turns: int = 1000,
    on_episode_done: Callable[[Episode], None] | None = None,
) -> list[Episode]:
    """Play one episode per (task, seed) job and return them, scored when a rubric is given.

    `policies` is one policy for every role, or a mapping from role to policy.
    `max_turns` is a safety net against an environment that never ends; hitting it raises.
    """
    with fewer_collections():
        return _run_episodes(make_env, jobs, policies, rubric, max_turns, on_episode_done)


def _run_episodes(
    make_env: Callable[[], Env],
    jobs: Sequence[tuple[Task, int]],
    policies: Policy | Mapping[str, Policy],
    rubric: Rubric | None,
    max_turns: int,
    on_episode_done: Callable[[Episode], None] | None,
) -> list[Episode]:
    running: list[_Running] = []
    for task, seed in jobs:
        env = make_env()
        running.append(_Running(env=env, task=task, seed=seed, observation=env.reset(task, seed)))
    roles = running[0].env.roles if running else ()
    by_role = {role: policies for role in roles} if not isinstance(policies, Mapping) else dict(policies)
    missing = [r for r in roles if r not in by_role]
    if missing:
        raise ValueError(f"no policy assigned to roles {missing}")

    episodes: list[Episode | None] = [None] * len(running)
    turn_index = 0
    while any(not r.done for r in running):
        if turn_index >= max_turns:
            raise RuntimeError(f"episodes still running after {max_turns} turns; the environment never ended them")
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(running):
            if not r.done:
                groups.setdefault(id(by_role[r.observation.role]), []).append(i)
        for indices in groups.values():
            policy = by_role[running[indices[0]].observation.role]
            inputs = [
                PolicyInput(task=running[i].task, seed=running[i].seed, observation=running[i].observation,
                            history=tuple(running[i].turns))
                for i in indices
            ]
            actions = policy.act(inputs)
            if len(actions) != len(inputs):
                raise RuntimeError(f"policy {policy.info.name} returned {len(actions)} actions for {len(inputs)} inputs")
            for i, action in zip(indices, actions):
                r = running[i]
                result = r.env.step(action)
                r.turns.append(Turn(index=len(r.turns), role=r.observation.role, observation=r.observation,
                                    action=action, events=result.events, policy=policy.info.name))
                r.events.extend(result.events)
                r.observation = result.observation
                if result.done:
                    r.done = True
                    episode = Episode(
                        env=r.env.name, task_id=r.task.id, seed=r.seed, turns=r.turns, events=r.events,
                        policies={role: by_role[role].info for role in roles}, done=True,
                    )
                    if rubric is not None:
                        episode = episode.model_copy(update={"score": rubric.score(episode, r.task)})
                    episodes[i] = episode
                    if on_episode_done is not None:
                        on_episode_done(episode)
        turn_index += 1
    return [e for e in episodes if e is not None]
