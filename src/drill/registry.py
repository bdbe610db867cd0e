"""The environment registry: every `EnvSpec` Drill can find, by name.

Bundled environments are the packages under `drill.envs` that define `SPEC`. Anyone else's environment
registers through the `drill.envs` entry-point group; in its own `pyproject.toml`:

    [project.entry-points."drill.envs"]
    warehouse = "warehouse_env:SPEC"

and after `pip install -e .` it gets `drill eval warehouse`, `drill watch warehouse` and
`drill train warehouse` like a bundled one.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from importlib.metadata import entry_points

from drill.core.spec import EnvSpec

ENTRY_POINT_GROUP = "drill.envs"

__all__ = ["ENTRY_POINT_GROUP", "RegistryError", "bundled", "env_names", "get", "specs"]


class RegistryError(ValueError):
    """An environment is unknown, or a registration is broken (the message says which and why)."""


def _bundled() -> list[EnvSpec]:
    import drill.envs

    found = []
    for module in pkgutil.iter_modules(drill.envs.__path__):
        if module.ispkg:
            package = importlib.import_module(f"drill.envs.{module.name}")
            spec = getattr(package, "SPEC", None)
            if isinstance(spec, EnvSpec):
                found.append(spec)
    return found


def _plugins() -> list[EnvSpec]:
    found = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = point.load()
        except Exception as exc:  # a broken plugin is reported by name, with its own error
            raise RegistryError(f"the environment {point.name!r} registered as {point.value!r} failed to load: "
                                f"{exc!r}") from exc
        if not isinstance(spec, EnvSpec):
            raise RegistryError(f"the entry point {point.name!r} ({point.value}) is a {type(spec).__name__}, "
                                "not a drill.core.EnvSpec")
        if spec.name != point.name:
            raise RegistryError(f"the entry point {point.name!r} names a spec called {spec.name!r}; use one name")
        found.append(spec)
    return found


@functools.cache
def specs() -> dict[str, EnvSpec]:
    """Every environment, bundled ones first, by name. A name registered twice is an error."""
    registered: dict[str, EnvSpec] = {}
    for spec in [*_bundled(), *_plugins()]:
        other = registered.get(spec.name)
        if other is not None and other is not spec:
            raise RegistryError(f"two environments are registered as {spec.name!r}")
        registered[spec.name] = spec
    return registered


def env_names() -> list[str]:
    return list(specs())


def get(name: str) -> EnvSpec:
    """The spec called `name`; RegistryError listing the known names if there is none."""
    try:
        return specs()[name]
    except KeyError:
        raise RegistryError(f"unknown environment {name!r}; installed: {', '.join(specs())}") from None


def bundled(name: str) -> EnvSpec | None:
    """The bundled environment called `name`, importing only it, when that is the whole answer: the package
    `drill.envs.NAME` has a SPEC called NAME and no plugin uses the name. None otherwise (a plugin, an unknown
    name, a name registered twice): then `get` and `specs`, which import them all, give the answer or the error.
    `drill eval chaosops` uses it: importing every environment was a third of its start-up."""
    import importlib.util

    if not name.isidentifier() or entry_points(group=ENTRY_POINT_GROUP, name=name):
        return None
    if importlib.util.find_spec(f"drill.envs.{name}") is None:
        return None
    spec = getattr(importlib.import_module(f"drill.envs.{name}"), "SPEC", None)
    return spec if isinstance(spec, EnvSpec) and spec.name == name else None
