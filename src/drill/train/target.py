"""What the trainer trains on: an environment package resolved by name, with its rubric and baselines.

`load_target("triage", {"mode": "reader"})` imports `drill.envs.triage` and uses its `load(**options)`,
`rubric(...)` and `baselines`. Reward-weight schedules reach the rubric in one of two ways: a name that
is a keyword of the package's `rubric()` (ChaosOps' `rogue_multiplier`) is passed to it; a name that is
a rubric component (triage's `format`) sets that component's weight.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rubric import Rubric
from drill.core.types import Task
from drill.train.shaping import with_shaping


@dataclass(frozen=True)
class TrainTarget:
    name: str
    make_env: Callable[[], Env]
    rubric_factory: Callable[..., Rubric]
    """The package's `rubric(...)`; called with the scheduled keyword values."""
    baselines: Mapping[str, Callable[[], Policy]]

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(self.make_env().roles)

    def tasks(self, split: str) -> list[Task]:
        return list(self.make_env().tasks(split))

    def rubric_keywords(self) -> set[str]:
        return {name for name, p in inspect.signature(self.rubric_factory).parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    def check_weight_names(self, names: list[str], shaping: Sequence[str] = ()) -> None:
        """Every scheduled name must be a rubric() keyword, a component or a shaping reward; else say which exist."""
        keywords = self.rubric_keywords()
        components = set(self.rubric_factory().weights) | set(shaping)
        unknown = [n for n in names if n not in keywords and n not in components]
        if unknown:
            raise ValueError(f"weight schedule names {unknown} are neither components of the {self.name} rubric "
                             f"({', '.join(sorted(components))}) nor keywords of its rubric() "
                             f"({', '.join(sorted(keywords)) or 'none'})")

    def rubric(self, values: Mapping[str, float], shaping: Sequence[str] = ()) -> Rubric:
        """The rubric with scheduled values applied, plus the training-only shaping components named."""
        keywords = self.rubric_keywords()
        rubric = self.rubric_factory(**{k: v for k, v in values.items() if k in keywords})
        rubric = rubric.reweighted({k: v for k, v in values.items() if k not in keywords and k not in shaping})
        return with_shaping(rubric, shaping, dict(values)) if shaping else rubric


def load_target(env: str, env_options: Mapping[str, Any]) -> TrainTarget:
    """The environment package `drill.envs.<env>` as a training target. Unknown names raise ValueError."""
    if not env.isidentifier():
        raise ValueError(f"unknown environment {env!r}")
    try:
        module = importlib.import_module(f"drill.envs.{env}")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"drill.envs.{env}",):
            raise
        raise ValueError(f"unknown environment {env!r}; installed: {', '.join(installed_envs())}") from exc
    missing = [name for name in ("load", "rubric", "baselines") if not hasattr(module, name)]
    if missing:
        raise ValueError(f"drill.envs.{env} cannot be trained on: it lacks {', '.join(missing)}")
    options = dict(env_options)
    module.load(**options)  # fail now, with the environment's own message, on a bad option
    return TrainTarget(name=env, make_env=lambda: module.load(**options), rubric_factory=module.rubric,
                       baselines=module.baselines)


def installed_envs() -> list[str]:
    import pkgutil

    import drill.envs

    return sorted(m.name for m in pkgutil.iter_modules(drill.envs.__path__) if m.ispkg)
