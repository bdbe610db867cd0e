"""Rollouts on Ray: the evaluation matrix's jobs spread over N rollout workers (Ray actors). Optional extra:
`pip install 'drill[ray]'`.

    drill eval chaosops --ray-workers 4                                    # a local single-node Ray
    drill eval triage --policy openai:MODEL --base-url http://gpu-node:8000/v1 \\
        --ray-address ray://head-node:10001 --ray-workers 16              # a cluster

`ray_player(build_policies, workers, address)` is a `drill.evaluate.matrix.play`: for every policy spec it cuts
the (task, seed) jobs into chunks of the environment's batch size and hands them to the workers in turn. Each
worker is an actor that owns its environment factory, rubric and policies; it builds the policies of a spec
once, from the spec text (`build_policies`: a scripted baseline, or a model client such as `openai:MODEL`, which
each worker opens for itself), and plays its chunks with the same `run_episodes` as the in-process player. An
episode depends only on its task, seed and policy, never on which worker or batch played it, so the same seeds
give byte-identical episodes and rewards with and without Ray (`tests/evaluate/test_ray_rollouts.py`).

The environment factory, the rubric and `build_policies` travel to the workers by Ray's serializer
(cloudpickle); Drill must be installed on every node of a cluster. In-process play (`play`) stays the default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.rubric import Rubric
from drill.core.types import Episode, Task

__all__ = ["RayUnavailable", "RolloutWorker", "ray_player"]


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached (the message says which and what to do)."""


class RolloutWorker:
    """One rollout worker: plays chunks of jobs for any policy spec (run as a Ray actor by `ray_player`)."""

    def __init__(self, make_env: Callable[[], Env], rubric: Rubric,
                 build_policies: Callable[[str], Mapping[str, Policy]], max_turns: int) -> None:
        self.make_env = make_env
        self.rubric = rubric
        self.build_policies = build_policies
        self.max_turns = max_turns
        self.policies: dict[str, Mapping[str, Policy]] = {}

    def play(self, spec: str, jobs: Sequence[tuple[Task, int]]) -> list[Episode]:
        if spec not in self.policies:
            self.policies[spec] = self.build_policies(spec)
        return run_episodes(self.make_env, jobs, self.policies[spec], self.rubric, self.max_turns)


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable("rollouts on Ray need Ray: pip install 'drill[ray]'") from None
    return ray


def start(workers: int, address: str | None) -> bool:
    """Connect to the cluster at `address`, or start a local Ray with `workers` CPUs; True if this call started it
    (so the caller shuts it down). An address that cannot be reached is a RayUnavailable with Ray's reason."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    try:
        if address:
            ray.init(address=address, logging_level="ERROR", log_to_driver=True)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level="ERROR", log_to_driver=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"cannot start Ray{f' at {address}' if address else ''}: {exc}") from exc
    return True


def ray_player(build_policies: Callable[[str], Mapping[str, Policy]], workers: int,
               address: str | None = None) -> Callable[..., dict[str, list[Episode]]]:
    """A `play` that runs the jobs on `workers` Ray actors (see the module docstring). The policies it is given
    name the specs to play; the workers build their own from those names with `build_policies`."""
    if workers < 1:
        raise ValueError(f"Ray rollouts need at least 1 worker, got {workers}")

    def play(make_env: Callable[[], Env], policies: Mapping[str, Mapping[str, Policy]],
             jobs: Sequence[tuple[Task, int]], rubric: Rubric, batch: int, max_turns: int = 1000,
             on_policy: Callable[[str], None] | None = None,
             on_episode_done: Callable[[Episode], None] | None = None) -> dict[str, list[Episode]]:
        ray = require_ray()
        started = start(workers, address)
        try:
            actor = ray.remote(num_cpus=1)(RolloutWorker)
            pool = [actor.remote(make_env, rubric, build_policies, max_turns) for _ in range(workers)]
            played: dict[str, list[Episode]] = {}
            for name in policies:
                if on_policy is not None:
                    on_policy(name)
                chunks = [list(jobs[i:i + batch]) for i in range(0, len(jobs), batch)]
                pending = {pool[n % workers].play.remote(name, chunk): n for n, chunk in enumerate(chunks)}
                results: dict[int, list[Episode]] = {}
                while pending:
                    done, _ = ray.wait(list(pending), num_returns=1)
                    index = pending.pop(done[0])
                    results[index] = ray.get(done[0])  # a worker's exception is raised here, with its traceback
                    for episode in results[index]:
                        if on_episode_done is not None:
                            on_episode_done(episode)
                played[name] = [e for n in range(len(chunks)) for e in results[n]]
            for worker in pool:
                ray.kill(worker)
            return played
        finally:
            if started:
                ray.shutdown()

    return play
