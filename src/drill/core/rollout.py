"""The rollout runner: play many episodes in lockstep, batching each policy's calls.

At every round, the episodes that are still running are grouped by the policy of the role that acts
next, and each policy gets one `act` call with all its inputs. For a language-model policy that is
one batched `generate` call per turn for a whole GRPO group.

While episodes run, the garbage collector's first generation is collected every 50,000 allocations instead of
every 700 (`fewer_collections`): the episodes' records are many small objects that all stay alive, and tracing them
again and again was 40% of a scripted ChaosOps evaluation. Cyclic garbage is still collected, only less often.
When only scripted policies play, the collector is off for the run and the objects it made are then moved to the
oldest generation untraced (`fewer_collections(scripted=True)`): scripted play makes no cyclic garbage (a test
checks ChaosOps' matrix), and tracing its records once more was still 12% of that matrix. A later full
collection still traces them, so nothing cyclic is kept for good.
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
from drill.core.types import Action, Episode, Event, Observation, Task, Turn


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
_gc_off_users = 0
_gc_was_enabled = True
GC_THRESHOLD = 50_000


@contextmanager
def fewer_collections(scripted: bool = False) -> Iterator[None]:
    """Raise the garbage collector's first-generation threshold to `GC_THRESHOLD` while the block runs (nested and
    concurrent blocks share one setting; the last to leave restores the previous thresholds).

    `scripted=True` (only scripted policies run in the block, so it makes no cyclic garbage): the collector is off
    while any such block runs; when the last one leaves, every tracked object is moved to the oldest generation
    without being traced (`gc.freeze()` then `gc.unfreeze()`) and the collector is turned back on if it was on."""
    global _gc_users, _gc_saved, _gc_off_users, _gc_was_enabled
    with _GC_LOCK:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(GC_THRESHOLD, _gc_saved[0]), *_gc_saved[1:])
        _gc_users += 1
        if scripted:
            if _gc_off_users == 0:
                _gc_was_enabled = gc.isenabled()
                gc.disable()
            _gc_off_users += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_users -= 1
            if _gc_users == 0:
                gc.set_threshold(*_gc_saved)
            if scripted:
                _gc_off_users -= 1
                if _gc_off_users == 0:
                    gc.freeze()  # into the permanent generation, untraced...
                    gc.unfreeze()  # ...and back into the oldest one, which a full collection still traces
                    if _gc_was_enabled:
                        gc.enable()


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
    chosen = policies.values() if isinstance(policies, Mapping) else [policies]
    with fewer_collections(scripted=all(p.info.kind == "scripted" for p in chosen)):
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
                if not isinstance(action, Action):
                    raise TypeError(f"policy {policy.info.name} returned a {type(action).__name__}, not an Action")
                r = running[i]
                result = r.env.step(action)
                r.turns.append(Turn.trusted(index=len(r.turns), role=r.observation.role,
                                            observation=r.observation, action=action, events=result.events,
                                            policy=policy.info.name))
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
