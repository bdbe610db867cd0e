"""Training metrics: `metrics.jsonl` (one JSON line per step) and the learning-curve PNG.

Each line is appended and fsync'ed as its step ends. A run killed mid-write leaves at most a torn
last line, which `MetricsLog.read` drops; on resume the lines after the checkpoint's step are removed
because those steps run again.

Keys of a line: `step`, `stage`, `tasks`; `reward/total` and `reward/<component>` (means over the
step's episodes of the total and of each component's raw value); `env_reward/total` (the total without
training-only shaping components, when there are any); `role_reward/<role>`; `weight/<name>` for scheduled
weights; `loss`, `kl` (mean per-token k3 KL to the reference), `clip_fraction`, `grad_norm`;
`completion_tokens_mean` / `_max`; `tokens_per_s` (generated tokens per rollout second); `rollout_s`,
`train_s`, `step_s`; `groups`, `zero_variance_groups`, `samples`, `trained_samples`; `group_std/<c>` and
`group_flat/<c>` for the total and each component (`drill.train.exploration`: the mean within-group standard
deviation, and the share of groups where it is 0; `group_flat/total` is the share of zero-variance groups). RFT and
DPO rounds log the reward, group and loss keys that apply to them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from drill.evaluate.report import atomic_write_text, save_figure

REWARD_PREFIX = "reward/"


class MetricsLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").split("\n")
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if number == len(lines):  # a torn last line from a killed run, without its newline
                    break
                raise ValueError(f"{self.path}:{number} is not valid JSON: {exc}") from exc
        return records

    def truncate_after(self, step: int) -> None:
        """Keep only the lines of steps <= `step` (atomic rewrite)."""
        kept = [r for r in self.read() if int(r["step"]) <= step]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))


def reward_components(records: Sequence[dict[str, Any]]) -> list[str]:
    names: dict[str, None] = {}
    for record in records:
        for key in record:
            if key.startswith(REWARD_PREFIX) and key != f"{REWARD_PREFIX}total":
                names[key[len(REWARD_PREFIX):]] = None
    return list(names)


def plot_learning_curve(records: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    """Top: mean total reward per step. Bottom: one line per reward component (raw mean value). Atomic write."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if not records:
        raise ValueError("no metrics to plot")
    steps = [r["step"] for r in records]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    top.plot(steps, [r[f"{REWARD_PREFIX}total"] for r in records], marker="o", markersize=3, color="black",
             label="total (weighted)")
    if any("env_reward/total" in r for r in records):
        top.plot(steps, [r.get("env_reward/total") for r in records], linestyle="--", color="gray",
                 label="total without training-only shaping")
    top.set_ylabel("mean total reward")
    top.set_title(title)
    top.grid(alpha=0.3)
    top.legend(fontsize=8)
    components = reward_components(records)
    for name in components:
        bottom.plot(steps, [r.get(f"{REWARD_PREFIX}{name}") for r in records], marker="o", markersize=2, label=name)
    bottom.set_xlabel("step")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylabel("mean component value")
    bottom.grid(alpha=0.3)
    if components:  # a stage without reward components (SFT's NLL) draws no lines to label
        bottom.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    save_figure(fig, path)
