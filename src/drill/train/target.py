"""What the trainer trains on: a registered environment's spec with its options, rubric and baselines.

`load_target("triage", {"mode": "reader"})` reads `drill.registry.get("triage")`; the rollouts, the reward,
the scripted roles and the held-out evaluation all come from that one spec with the same options, so the
rubric always matches the environment (an inbox run with `max_turns=4` scores efficiency against 4 turns)
and every baseline sees the same data (a triage heuristic with `data_dir=X` searches X). Reward-weight
schedules reach the rubric in one of two ways: a name that is one of the spec's rubric parameters
(ChaosOps' `rogue_multiplier`) is passed to its rubric; a name that is a component (triage's `format`) sets
that component's weight.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rubric import Rubric
from drill.core.spec import EnvSpec
from drill.core.types import Task
from drill.train.shaping import with_shaping


@dataclass(frozen=True)
class TrainTarget:
    spec: EnvSpec
    options: Mapping[str, Any]
    """The parsed environment options (defaults filled in)."""
    make_env: Callable[[], Env] = field(repr=False)
    baselines: Mapping[str, Callable[[], Policy]] = field(repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self.make_env().roles)

    def tasks(self, split: str) -> list[Task]:
        return list(self.make_env().tasks(split))

    def rubric_keywords(self) -> set[str]:
        return set(self.spec.param_defaults)

    def rubric_factory(self, **params: float) -> Rubric:
        """The environment's rubric for these options, with rubric parameters (defaults for the rest)."""
        return self.spec.rubric_for(self.options, params)

    def check_weight_names(self, names: list[str], shaping: Sequence[str] = ()) -> None:
        """Every scheduled name must be a rubric parameter, a component or a shaping reward; else say which exist."""
        keywords = self.rubric_keywords()
        components = set(self.rubric_factory().weights) | set(shaping)
        unknown = [n for n in names if n not in keywords and n not in components]
        if unknown:
            raise ValueError(f"weight schedule names {unknown} are neither components of the {self.name} rubric "
                             f"({', '.join(sorted(components))}) nor its rubric parameters "
                             f"({', '.join(sorted(keywords)) or 'none'})")

    def rubric(self, values: Mapping[str, float], shaping: Sequence[str] = ()) -> Rubric:
        """The rubric with scheduled values applied, plus the training-only shaping components named."""
        rubric = self.spec.rubric_for(self.options, {k: v for k, v in values.items() if k not in shaping})
        return with_shaping(rubric, shaping, dict(values)) if shaping else rubric


def load_target(env: str, env_options: Mapping[str, Any], env_url: str | None = None) -> TrainTarget:
    """The registered environment `env` as a training target. Unknown names and bad options raise ValueError.
    With `env_url`, every episode is played on that served environment (`drill serve`); the tasks, the rubric and
    the baselines stay local, and the server must serve `env` with the same options (ValueError if not, OSError
    if nothing answers)."""
    from drill import registry

    spec = registry.get(env)
    if env_url:
        from drill.serve.client import remote_spec

        spec = remote_spec(spec, env_url)
    options = spec.parse_options(env_options)
    make_env = spec.make(options)  # fails now, with the environment's own message, on a bad option
    return TrainTarget(spec=spec, options=options, make_env=make_env, baselines=spec.baselines(options))

