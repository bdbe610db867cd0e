"""How much a group's samples differ, per reward component: the signal group-relative methods learn from.

GRPO, DPO pairs and RFT's group-mean bar all compare the G episodes of one task and seed. A component whose
value is the same in every episode of a group gives that group no learning signal for it, whatever its weight.
`component_group_std` logs, for every component, the mean over groups of its within-group standard
deviation (`group_std/<component>`), and the share of groups where it does not vary at all
(`group_flat/<component>`), so a component that never moves (e.g. triage's calibration when every sample
writes the same confidence and escalation decision) shows in the metrics rather than only in the outcome.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drill.core.types import Episode

GROUP_STD_PREFIX = "group_std/"
GROUP_FLAT_PREFIX = "group_flat/"


def component_group_std(episodes: Sequence[Episode], group_size: int) -> dict[str, float]:
    """`group_std/<c>` and `group_flat/<c>` for the total and every component; episodes are group-major."""
    if group_size < 1 or len(episodes) % group_size:
        raise ValueError(f"{len(episodes)} episodes do not split into groups of {group_size}")
    scores = [e.score for e in episodes]
    if any(s is None for s in scores):
        raise ValueError("every episode must be scored before its group variance is measured")
    names = ["total", *scores[0].components]  # type: ignore[union-attr]
    values = {n: np.array([s.total if n == "total" else s.components[n] for s in scores])  # type: ignore[union-attr]
              .reshape(-1, group_size) for n in names}  # (groups, G)
    record: dict[str, float] = {}
    for name, table in values.items():
        spread = table.std(axis=1)  # (groups,)
        record[f"{GROUP_STD_PREFIX}{name}"] = float(spread.mean())
        record[f"{GROUP_FLAT_PREFIX}{name}"] = float((np.ptp(table, axis=1) == 0).mean())
    return record
