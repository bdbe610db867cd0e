"""A training method written outside the package, as a user would: best-of-G imitation. Each step plays a group of
episodes per task through `Run`, and takes one NLL step toward each group's best episode. Registered with one line,
`METHODS["toy"] = toy_method`, it trains through `drill train ENV --method toy` (tests/train/test_train_methods.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drill.train.config import setting
from drill.train.run import Run, TrainResult
from drill.train.samples import episode_samples, nll_update


@dataclass(frozen=True)
class Options:
    """What the toy method adds to the run config."""

    steps: int = setting("toy", 1, "Steps: a group per task, then one NLL step toward each group's best episode.")
    top: int = setting("toy", 1, "Episodes imitated per group, best first.")


def train(run: Run, options: Options) -> TrainResult:
    config, rubric = run.config, run.target.rubric({})
    tasks = run.target.tasks("train")[:config.tasks_per_step]
    start = run.resume()
    for step in range(start + 1, options.steps + 1):
        groups = run.play_groups(run.group_jobs(step, tasks), run.policies(step), rubric)
        best = [e for group in groups for e in sorted(group, key=lambda e: -e.score.total)[:options.top]]
        samples = [s for i, e in enumerate(best) for s in episode_samples(e, i, {role: 1.0 for role in run.roles})]
        run.model.train()
        loss, tokens, _ = nll_update(run.model, run.optimizer, run.params, samples, run.pad_id, config)
        totals = [e.score.total for group in groups for e in group]
        run.metrics.append({"step": step, "stage": "toy", "loss": loss, "tokens": tokens,
                            "reward/total": float(np.mean(totals)), "imitated": len(best)})
        run.checkpoint(step, options.steps, {"step": step})
    return run.finish(options.steps, f"toy on {run.target.name}")
