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

Each worker asks Ray for one CPU and runs one math-library thread (`WORKER_OPTIONS`): Ray keeps an
`OMP_NUM_THREADS` the driver's environment already has, and N workers of two threads each on N cores spin
against each other (a decode step several times slower on a 2-core machine).

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

__all__ = ["RayPool", "RayUnavailable", "RolloutWorker", "WORKER_OPTIONS", "ray_player"]

WORKER_OPTIONS: dict[str, Any] = {"num_cpus": 1, "runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1",
                                                                              "MKL_NUM_THREADS": "1"}}}
"""Ray options of a rollout worker: one CPU, one thread, whatever OMP_NUM_THREADS the driver was started with."""


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached (the message says which and what to do)."""


class RolloutWorker:
    """One rollout worker: plays chunks of jobs for a policy key (run as a Ray actor by `RayPool`). It builds the
    policies of a key once (`build_policies`, shipped to it by Ray's serializer) and keeps the latest few."""

    def __init__(self, make_env: Callable[[], Env], build_policies: Callable[[str], Mapping[str, Policy]],
                 max_turns: int) -> None:
        self.make_env = make_env
        self.build_policies = build_policies
        self.max_turns = max_turns
        self.policies: dict[str, Mapping[str, Policy]] = {}

    def play(self, key: str, jobs: Sequence[tuple[Task, int]], rubric: Rubric) -> list[Episode]:
        if key not in self.policies:
            if len(self.policies) >= 8:  # a training run asks for a new key every step
                self.policies.pop(next(iter(self.policies)))
            self.policies[key] = self.build_policies(key)
        return run_episodes(self.make_env, jobs, self.policies[key], rubric, self.max_turns)


class RayPool:
    """N `RolloutWorker` actors for the length of a `with` block: a local Ray started with N CPUs (or the cluster
    at `address`), shut down at the end if this pool started it."""

    def __init__(self, make_env: Callable[[], Env], build_policies: Callable[[str], Mapping[str, Policy]],
                 workers: int, address: str | None = None, max_turns: int = 1000) -> None:
        if workers < 1:
            raise ValueError(f"Ray rollouts need at least 1 worker, got {workers}")
        self.make_env, self.build_policies, self.workers = make_env, build_policies, workers
        self.address, self.max_turns = address, max_turns
        self.actors: list[Any] = []
        self.started = False

    def __enter__(self) -> RayPool:
        ray = require_ray()
        self.started = start(self.workers, self.address)
        actor = ray.remote(**WORKER_OPTIONS)(RolloutWorker)
        self.actors = [actor.remote(self.make_env, self.build_policies, self.max_turns) for _ in range(self.workers)]
        return self

    def __exit__(self, *exc: object) -> None:
        ray = require_ray()
        for worker in self.actors:
            ray.kill(worker)
        self.actors = []
        if self.started:
            ray.shutdown()

    def play(self, key: str, jobs: Sequence[tuple[Task, int]], rubric: Rubric, batch: int,
             on_episode_done: Callable[[Episode], None] | None = None) -> list[Episode]:
        """Every job for the policies of `key`, in chunks of `batch` handed to the workers in turn; the episodes
        in job order. A worker's exception is raised here, with its traceback."""
        ray = require_ray()
        chunks = [list(jobs[i:i + batch]) for i in range(0, len(jobs), batch)]
        pending = {self.actors[n % self.workers].play.remote(key, chunk, rubric): n for n, chunk in enumerate(chunks)}
        results: dict[int, list[Episode]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            results[index] = ray.get(done[0])
            for episode in results[index]:
                if on_episode_done is not None:
                    on_episode_done(episode)
        return [e for n in range(len(chunks)) for e in results[n]]


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
        played: dict[str, list[Episode]] = {}
        with RayPool(make_env, build_policies, workers, address, max_turns) as pool:
            for name in policies:
                if on_policy is not None:
                    on_policy(name)
                played[name] = pool.play(name, jobs, rubric, batch, on_episode_done)
        return played

    return play
