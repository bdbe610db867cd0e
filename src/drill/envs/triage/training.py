"""The reader mode as a single-turn training target, for GRPO and other one-shot trainers.

A trainer needs prompts, and a reward for what the model wrote. `ReaderTarget.prompt` gives the
observation (system instructions, ticket and articles, the submit_resolution schema);
`ReaderTarget.score` takes the `Action` an LLM policy parsed from the model output (a valid call, or
`Action.unparseable` with the parser's error) and plays it through `Env.step`, the same path
`run_episodes` uses, then scores it. So a trained model is rewarded exactly as it is evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drill.core.rubric import Rubric
from drill.core.types import Action, Episode, Observation, PolicyInfo, Turn
from drill.envs.triage.corpus import TriageTask
from drill.envs.triage.env import TriageEnv
from drill.envs.triage.rubric import rubric as triage_rubric


@dataclass(frozen=True)
class ReaderTarget:
    """The reader env's options and the rubric; every method builds a fresh env (the corpus is cached)."""

    env_options: dict[str, Any]
    """JSON-serializable options of the reader env (mode, k, turn_budget, data_dir)."""
    rubric: Rubric

    def make_env(self) -> TriageEnv:
        """A fresh reader env, e.g. for `run_episodes(target.make_env, jobs, policy, target.rubric)`."""
        return TriageEnv(**self.env_options)

    def tasks(self, split: str = "train") -> list[TriageTask]:
        """Train tickets for training, test tickets for held-out evaluation; the two never overlap."""
        return self.make_env().tasks(split)

    def prompt(self, task: TriageTask, seed: int) -> Observation:
        """What the model sees for this task and seed (the article order depends on the seed)."""
        return self.make_env().reset(task, seed)

    def score(self, task: TriageTask, seed: int, action: Action, policy: PolicyInfo | None = None) -> Episode:
        """Play `action` as the single reader turn and return the scored episode."""
        env = self.make_env()
        observation = env.reset(task, seed)
        result = env.step(action)
        info = policy or PolicyInfo(name="trainer", kind="llm")
        turn = Turn(index=0, role="agent", observation=observation, action=action, events=result.events,
                    policy=info.name)
        episode = Episode(env=env.name, task_id=task.id, seed=seed, turns=[turn], events=result.events,
                          policies={"agent": info}, done=result.done)
        return episode.model_copy(update={"score": self.rubric.score(episode, task)})


def reader_target(k: int = 3, data_dir: str | Path | None = None,
                  weights: Mapping[str, float] | None = None) -> ReaderTarget:
    """The reader-mode triage env and its rubric, ready for a single-turn trainer."""
    env = TriageEnv(mode="reader", k=k, data_dir=None if data_dir is None else str(data_dir))
    return ReaderTarget(env_options=dict(env.options), rubric=triage_rubric(weights))

