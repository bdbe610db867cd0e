"""Chained training stages: SFT, RFT, DPO and GRPO in one run, each starting from the previous stage's adapter.

    drill train triage -E k=1 --tool-listing compact --prefill '...' \\
        --stage sft:source=heuristic,epochs=2 --stage rft:rounds=3 --stage grpo:steps=60

    stages = ["sft:source=oracle,epochs=1", "grpo:steps=10"]      # or `stages = [...]` in the config file

A stage is `METHOD:KEY=VALUE,...`. METHOD is a name in `drill.train.methods.METHODS` (`sft`, `rft`, `dpo`,
`grpo`, ...). A key is a field of that method's `Options` (e.g. `steps` for grpo, `epochs` for sft) or any field
of the run config, which then applies to that stage alone (e.g. `learning_rate=2e-4`).
Every stage is checked before any model is loaded.

Outputs under `--output-dir`: one folder per stage, `stage-1-sft/`, `stage-2-rft/`, ..., each with its own
`metrics.jsonl`, checkpoints and `adapter/`, plus `stage.json` once the stage is complete. `--resume` skips the
complete stages and resumes the first incomplete one from its newest checkpoint (a stage killed before its first
checkpoint restarts). A second stage of a method other than SFT (GRPO, RFT and online DPO draw environment tasks)
draws with its own seed (`fresh_draws`), not the first's order again. `--init-adapter PATH` starts the first stage
from a saved adapter instead of a fresh one (the closing evaluation then shows it too, as `0-init`). After the last
stage, `metrics.jsonl` holds every stage's lines on one step axis (`global_step`), `learning_curve.png` draws them,
and the closing held-out evaluation (the existing `heldout.evaluate_heldout` path) plays every stage's adapter next
to the untrained model and the baselines.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from drill.evaluate.report import atomic_write_text, save_figure
from drill.train.config import RunConfig, parse_scalar
from drill.train.methods import METHODS, method
from drill.train.methods import train as train_method
from drill.train.run import BaseModel, plan_run
from drill.train.run import load_base as load_fresh_base
from drill.train.target import TrainTarget, load_target

STAGE_DONE = "stage.json"


@dataclass(frozen=True)
class Stage:
    method: str
    options: Any
    """The method's `Options`."""
    config: RunConfig
    """The run config for this stage: its own output folder, its overrides, no closing evaluation."""
    overrides: frozenset[str] = frozenset()
    """The run-config fields the stage string sets itself (e.g. `seed`)."""


def parse_stage(spec: str, index: int, config: RunConfig, defaults: Mapping[str, Any] | None = None) -> Stage:
    """`METHOD:KEY=VALUE,...` into a Stage; raises ValueError naming what is wrong. `defaults`: method options given
    outside the stages (command line, config file), used by every stage whose method takes them."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in METHODS:
        raise ValueError(f"stage {index} {spec!r}: unknown method {name!r}; choose from {', '.join(METHODS)}")
    options_class = method(name).Options
    option_names = {f.name for f in fields(options_class)}
    config_names = {f.name for f in fields(RunConfig)} - {"stages", "output_dir", "resume", "eval_tasks"}
    chosen: dict[str, Any] = {k: v for k, v in (defaults or {}).items() if k in option_names}
    overrides: dict[str, Any] = {}
    for part in (p.strip() for p in rest.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"stage {index} {spec!r}: expected KEY=VALUE, got {part!r}")
        if key in option_names:
            chosen[key] = parse_scalar(value.strip())
        elif key in config_names:
            overrides[key] = parse_scalar(value.strip())
        else:
            raise ValueError(f"stage {index} {spec!r}: unknown option {key!r}; {name} takes "
                             f"{', '.join(sorted(option_names)) or 'run-config fields'} or any run-config field")
    stage_config = config.updated(output_dir=config.output_dir / f"stage-{index}-{name}", eval_tasks=0,
                                  stages=[], resume=False, **overrides)
    return Stage(method=name, options=options_class(**chosen), config=stage_config, overrides=frozenset(overrides))


def plan_stages(config: RunConfig, target: TrainTarget | None = None,
                defaults: Mapping[str, Any] | None = None) -> tuple[list[Stage], TrainTarget]:
    """Every stage parsed and checked against the environment before any model is loaded."""
    if not config.stages:
        raise ValueError("no stages to run")
    target = target or load_target(config.env, config.env_options, config.env_url)
    stages = [parse_stage(spec, i, config, defaults) for i, spec in enumerate(config.stages, start=1)]
    stages = fresh_draws(stages, config)
    taken = {f.name for stage in stages for f in fields(stage.options)}
    unused = sorted(set(defaults or {}) - taken)
    if unused:
        raise ValueError(f"{', '.join(unused)}: no stage's method takes this option "
                         f"(stages: {', '.join(s.method for s in stages)})")
    for stage in stages:  # checked as a fresh run in a folder that does not exist, whatever the stage folder holds
        plan_run(stage.config.updated(output_dir=stage.config.output_dir / ".not-written"), target)
    if not config.resume and stages[0].config.output_dir.exists():
        raise ValueError(f"{config.output_dir} already holds a staged run; pass --resume to continue it, "
                         "or choose another --output-dir")
    return stages, target


REPEAT_SEED_OFFSET = 1000


def fresh_draws(stages: Sequence[Stage], config: RunConfig) -> list[Stage]:
    """A later stage of a method other than `sft` (GRPO, RFT and online DPO draw environment tasks and samples from
    the seed; an SFT stage reads its own source), run after an earlier stage of the same method, draws with the seed +
    1000 x the earlier such stages (+ 1000 more while an earlier stage of the method has that seed), so a second GRPO
    stage does not replay the first's tasks in the first's order; a stage that sets `seed=` keeps its own."""
    used: dict[str, set[int]] = {}
    planned = []
    for stage in stages:
        seeds = used.setdefault(stage.method, set())
        if seeds and stage.method != "sft" and "seed" not in stage.overrides:
            seed = config.seed + REPEAT_SEED_OFFSET * len(seeds)
            while seed in seeds:
                seed += REPEAT_SEED_OFFSET
            stage = replace(stage, config=stage.config.updated(seed=seed))
        if stage.method != "sft":
            seeds.add(stage.config.seed)
        planned.append(stage)
    return planned


def stage_done(folder: Path) -> bool:
    return (folder / STAGE_DONE).is_file()


def run_stages(config: RunConfig, target: TrainTarget | None = None,
               load_base: Callable[[], BaseModel] | None = None,
               defaults: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run the stages in order as the module docstring says; returns the closing evaluation's rows."""
    from drill.train.heldout import evaluate_heldout
    from drill.train.rollouts import prompt_options

    stages, target = plan_stages(config, target, defaults)
    fresh_base = load_base or (lambda: load_fresh_base(config.model))
    previous: Path | None = Path(config.init_adapter) if config.init_adapter else None
    adapters: dict[str, Path] = {"0-init": previous} if previous else {}
    model_id = ""
    for index, stage in enumerate(stages, start=1):
        folder = stage.config.output_dir
        if stage_done(folder):
            print(f"stage {index} ({stage.method}) is complete: {folder}")
        else:
            stage_config = stage.config.updated(resume=resume_inside(folder, config.resume))
            if stage_config.seed != config.seed:
                print(f"stage {index} ({stage.method}) draws its tasks and samples with seed {stage_config.seed} "
                      f"(the run's is {config.seed})", flush=True)
            base = fresh_base()
            model_id = base.model_id
            try:
                train_method(stage_config, stage.method, stage.options, target, base, init_adapter=previous)
            except KeyboardInterrupt:
                print(f"stage {index} ({stage.method}) was interrupted; the staged run continues with --resume")
                raise
            atomic_write_text(folder / STAGE_DONE, json.dumps({"stage": index, "method": stage.method,
                                                               "started_from": str(previous)}, indent=1))
            del base
            print(f"stage {index} ({stage.method}) is complete; {release_memory()}", flush=True)
        previous = folder / "adapter"
        adapters[f"{index}-{stage.method}"] = previous
    combined = combine_metrics(config.output_dir, stages)
    plot_stages(combined, config.output_dir / "learning_curve.png", f"{target.name}: {' -> '.join(config.stages)}")
    if not config.eval_tasks:
        return []
    roles = list(config.roles or target.roles)
    model_id = model_id or json.loads((previous / "adapter_config.json").read_text())["base_model_name_or_path"]
    return evaluate_heldout(config, target, roles, adapters, model_id, config.output_dir,
                            prompt_options(config, target))


def release_memory() -> str:
    """Hand a finished stage's memory back before the next stage loads its model; says what the process held before
    and after.

    glibc keeps the freed arenas of a stage's batches: an inbox SFT stage left its process at 10.7 GB resident, and
    the GRPO stage after it sampled at 16.5 GB in the same process (a fresh one resuming at GRPO: 7-9 GB). With
    `malloc_trim` the same stage ends at 1.6 GB (experiments/LOG.md, eleventh try).
    """
    import ctypes
    import gc

    before = resident_bytes()
    gc.collect()
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return "memory not trimmed (no glibc here)"
    libc.malloc_trim(0)
    after = resident_bytes()
    if before is None or after is None:
        return "memory trimmed"
    return f"resident memory {before / 2**30:.1f} -> {after / 2**30:.1f} GB"


def resident_bytes() -> int | None:
    """This process's resident memory (Linux /proc), or None where there is no /proc."""
    import os

    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def resume_inside(folder: Path, resume: bool) -> bool:
    """Whether an incomplete stage resumes from its checkpoint; a stage killed before its first one starts over."""
    from drill.train.checkpoint import latest_checkpoint

    if not folder.exists():
        return False
    if not resume:
        raise ValueError(f"{folder} holds an incomplete stage; pass --resume to continue it")
    if latest_checkpoint(folder) is not None:
        return True
    print(f"{folder}: killed before its first checkpoint; the stage starts over")
    shutil.rmtree(folder)
    return False


def combine_metrics(output_dir: Path, stages: Sequence[Stage]) -> list[dict[str, Any]]:
    """Every stage's metrics lines on one step axis (`global_step`), written to OUTPUT/metrics.jsonl atomically."""
    from drill.train.metrics import MetricsLog

    combined: list[dict[str, Any]] = []
    for index, stage in enumerate(stages, start=1):
        for record in MetricsLog(stage.config.output_dir / "metrics.jsonl").read():
            combined.append({"global_step": len(combined) + 1, "stage_index": index, "method": stage.method} | record)
    atomic_write_text(output_dir / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in combined))
    return combined


def plot_stages(records: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    """Top: the mean training reward per step (stages that sample: rft, dpo, grpo). Bottom: each stage's loss.
    Dotted lines mark where a stage starts. Atomic write."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for method in dict.fromkeys(r["method"] for r in records):
        mine = [r for r in records if r["method"] == method]
        rewarded = [r for r in mine if "reward/total" in r]
        if rewarded:
            top.plot([r["global_step"] for r in rewarded], [r["reward/total"] for r in rewarded], marker="o",
                     markersize=3, label=method)
        lossy = [r for r in mine if r.get("loss") is not None]
        bottom.plot([r["global_step"] for r in lossy], [r["loss"] for r in lossy], marker="o", markersize=2,
                    label=method)
    for index in sorted({r["stage_index"] for r in records}):
        first = min(r["global_step"] for r in records if r["stage_index"] == index)
        for axis in (top, bottom):
            axis.axvline(first - 0.5, linestyle=":", color="gray")
    top.set_ylabel("mean training reward")
    top.set_title(title, fontsize=9)
    bottom.set_ylabel("loss (per stage's own objective)")
    bottom.set_xlabel("step, across stages")
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
