"""The closing evaluation of a training run: the trained adapter against the untrained model (unless
`eval_untrained` is off) and the baselines, on held-out tasks: the environment's validation split by default
(`eval_split`; never used in training), where runs are compared and checkpoints chosen, so the test split is kept
for the final table.

The trained row loads the saved adapter exactly as `drill eval ENV --policy lora:OUTPUT/adapter` does
(`drill.models.adapters.load_lora`, which fails loudly rather than fall back), so the numbers are those
of the artifact on disk. LLM rows decode greedily (temperature 0) and are prompted as in training (tool listing, prefill, demonstrations). In a multi-role environment the
evaluated policy plays the trained roles and `scripted_policy` plays the others, as in training.
Writes `OUTPUT/heldout.json` (summary rows and every episode) and prints a table.
"""

from __future__ import annotations

import random
from dataclasses import replace
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from drill.console import console
from drill.core.policy import Policy
from drill.core.types import Episode, Task
from drill.evaluate.matrix import play
from drill.evaluate.report import progress_bar, summary_table, write_results
from drill.models.base import SamplingParams
from drill.models.local import precision
from drill.models.prompt import LLMOptions, PolicyOptions
from drill.train.config import RunConfig
from drill.train.progress import Heartbeat
from drill.train.target import TrainTarget


def heldout_tasks(target: TrainTarget, count: int, seed: int, split: str = "validation") -> list[Task]:
    """`count` tasks of `split`, a seeded sample kept in the environment's order."""
    tasks = target.tasks(split)
    if not tasks:
        raise ValueError(f"{target.name} has no {split}-split tasks to evaluate on")
    if count >= len(tasks):
        return tasks
    return [tasks[i] for i in sorted(random.Random(f"heldout:{seed}").sample(range(len(tasks)), count))]


def summarize(name: str, episodes: Sequence[Episode]) -> dict[str, Any]:
    info = next(iter(episodes[0].policies.values()))
    llm = next((p for p in episodes[0].policies.values() if p.kind in ("llm", "lora")), info)
    row: dict[str, Any] = {"policy": name, "model": llm.model or "—",
                           "adapter": (llm.adapter_sha256 or "")[:12] or "—", "episodes": len(episodes)}
    scores = [e.score for e in episodes if e.score is not None]
    row["total"] = float(np.mean([s.total for s in scores]))
    for component in scores[0].components:
        row[component] = float(np.mean([s.components[component] for s in scores]))
    return row


def evaluate_heldout(config: RunConfig, target: TrainTarget, roles: Sequence[str], adapter_dir: Path | dict[str, Path],
                     model_id: str, output_dir: Path, prompting: dict[str, Any]) -> list[dict[str, Any]]:
    """The table rows; `prompting` is the rollouts' `prompt_options(config, target)`, so both LLM rows are
    prompted as in training. `adapter_dir` is the trained adapter (row `trained`), or a mapping from row name
    to adapter folder (a staged run: one row per stage's adapter). Episodes play in lockstep batches of the
    environment's `batch`, as in `drill eval`. A line every half minute says which row is playing."""
    from drill.models.policy import build_llm_policy
    from drill.train.rollouts import run_memory

    tasks = heldout_tasks(target, config.eval_tasks, config.seed, config.eval_split)
    jobs = [(task, index) for index, task in enumerate(tasks)]
    prompt = PolicyOptions(sampling=SamplingParams(max_new_tokens=config.max_new_tokens, seed=config.seed),
                           **prompting)  # greedy, SamplingParams' default
    options = LLMOptions(model=config.model, prompt=prompt, device=config.device)  # on the trainer's device
    adapters = adapter_dir if isinstance(adapter_dir, dict) else {"trained": adapter_dir}
    candidates: dict[str, Policy] = {name: build_llm_policy(f"lora:{path}", options) for name, path in adapters.items()}
    if config.eval_untrained:
        candidates["untrained"] = build_llm_policy("llm", replace(options, model=model_id))
    played_at = precision(candidates.values())
    memory = run_memory(config, target)
    if memory is not None:  # prompted as in training: the same retrieved examples
        from drill.memory.policy import MemoryPolicy

        candidates = {name: MemoryPolicy(policy, memory) for name, policy in candidates.items()}
    candidates |= {name: target.baselines[name]() for name in config.eval_baselines}
    rubric = target.rubric({})
    assignments = {name: {role: policy if role in roles else target.baselines[config.scripted_policy]()
                          for role in target.roles} for name, policy in candidates.items()}
    # The bar draws only on a terminal, and a row's episodes run in lockstep, so most finish at its end: the
    # heartbeat also says, every half minute and in a log too, which row is playing and for how long.
    beat = Heartbeat(lambda text: console.print(text, highlight=False, markup=False))
    numbers = {name: index for index, name in enumerate(candidates, 1)}
    with progress_bar() as progress:
        bar = progress.add_task("held-out evaluation", total=len(jobs) * len(candidates))
        try:
            # `drill eval`'s player: lockstep batches of the environment's `batch` (one batch of 95 inbox questions
            # held 19.4 GB), every prefix cache emptied after each row. A greedy episode's batch-mates change only
            # its padding (so, at most, floating-point rounding).
            played = play(target.make_env, assignments, jobs, rubric, target.spec.batch, config.max_turns,
                          on_policy=lambda name: beat.phase(
                              f"held-out evaluation, row {numbers[name]} of {len(candidates)} ({name}): playing "
                              f"{len(jobs)} episodes", total=len(jobs)),
                          on_episode_done=lambda _: (progress.advance(bar), beat.done()))
        finally:
            beat.stop()
    rows = [summarize(name, episodes) for name, episodes in played.items()]
    everything = [episode for episodes in played.values() for episode in episodes]
    columns = list(rows[0])
    title = f"{target.name}: held-out evaluation ({len(tasks)} {config.eval_split} tasks, greedy)"
    console.print(summary_table(title, rows, columns))
    write_results(output_dir / "heldout.json", {"env": target.name, "adapter": str(adapter_dir) if not isinstance(
                      adapter_dir, dict) else {k: str(v) for k, v in adapter_dir.items()}, "model": model_id,
                                                "split": config.eval_split, "tasks": [t.id for t in tasks],
                                                "precision": played_at},
                  rows, everything)
    return rows
