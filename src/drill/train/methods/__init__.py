"""The training methods: each module is an `Options` dataclass (what the method adds to `RunConfig`) and a
`train(run, options)` that holds only its loop between `Run.open` and `Run.finish`. `METHODS` names them for
`drill train --method`, the stages and the CLI; adding a method is one module and one line here (or
`METHODS[name] = module` from outside, as the tests do).

    from drill.train import RunConfig, train
    result = train(RunConfig(env="triage"), "sft", METHODS["sft"].Options(epochs=2))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from types import ModuleType
from typing import Any

from drill.train.config import RunConfig, checked
from drill.train.methods import dpo, grpo, rft, sft
from drill.train.run import BaseModel, Run, TrainResult
from drill.train.target import TrainTarget

METHODS: dict[str, ModuleType] = {"sft": sft, "rft": rft, "dpo": dpo, "grpo": grpo}
"""Method name -> its module (`Options`, `train(run, options)`)."""


def method(name: str) -> ModuleType:
    """The method called `name`; raises ValueError naming the known ones."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return METHODS[name]


def train(config: RunConfig, name: str = "grpo", options: Any = None, target: TrainTarget | None = None,
          base: BaseModel | None = None, init_adapter: Path | None = None) -> TrainResult:
    """Open a run on `config` and train it with method `name` (`options` default: the method's defaults); returns
    where everything was written. `init_adapter`: start from that saved adapter (a previous stage's) instead of a
    fresh one."""
    module = method(name)
    options = module.Options() if options is None else options
    run = Run.open(config, name, options, target, base, init_adapter)
    try:
        return module.train(run, options)
    except KeyboardInterrupt:  # Ctrl-C: never leave a folder that neither a fresh run nor --resume accepts
        run.interrupted()
        raise
    finally:
        run.heartbeat.stop()


def configure(name: str, **settings: Any) -> tuple[RunConfig, Any]:
    """The run config and method `name`'s options from flat settings, run-config and option fields mixed as a
    config file holds them; raises ValueError on a key neither takes."""
    run_settings, option_settings = split_settings(settings, name, staged=False)
    return checked(RunConfig, run_settings, "settings"), checked(method(name).Options, option_settings, name)


def split_settings(settings: Mapping[str, Any], method_name: str, staged: bool) -> tuple[dict[str, Any],
                                                                                          dict[str, Any]]:
    """Settings into the run config's fields and the method options' fields. Without stages every method option
    must be `method_name`'s; with stages they apply to each stage whose method takes them."""
    run_names = {f.name for f in fields(RunConfig)}
    owners: dict[str, list[str]] = {}
    for name, module in METHODS.items():
        for f in fields(module.Options):
            owners.setdefault(f.name, []).append(name)
    unknown = sorted(k for k in settings if k not in run_names and k not in owners)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)}")
    others = sorted(k for k in settings if k in owners and not staged and method_name not in owners[k])
    if others:
        raise ValueError("; ".join(f"{k} is an option of {', '.join(owners[k])}, not of {method_name} "
                                   f"(choose the method with --method)" for k in others))
    return ({k: v for k, v in settings.items() if k in run_names},
            {k: v for k, v in settings.items() if k not in run_names})
