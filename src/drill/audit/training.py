"""The detectors inside `drill train`: every `audit_every` steps, over the metrics so far and the step's episodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from drill.audit.detectors import detect_episodes, detect_metrics
from drill.audit.search import Finding
from drill.core.types import Episode

__all__ = ["audit_training_step"]


def audit_training_step(step: int, records: Sequence[Mapping[str, Any]], episodes: Sequence[Episode], stop: bool,
                        console: Console) -> list[Finding]:
    """Run the training-run and episode detectors, print one line per finding, and with `stop` end the run
    (`TrainingStopped`) when there is any."""
    findings = [*detect_metrics(records), *detect_episodes(episodes)]
    for f in findings:
        console.print(f"audit step {step}: {f.level} · {f.kind} · {f.strategy}: {f.message}", highlight=False,
                      markup=False)
    if stop and findings:
        from drill.train.run import TrainingStopped

        raise TrainingStopped(step, "the reward-hacking detectors found: "
                                    + "; ".join(f"{f.kind} ({f.strategy})" for f in findings))
    return findings
