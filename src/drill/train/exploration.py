"""How much a group's samples differ, per reward component: the signal group-relative methods learn from.

GRPO, DPO pairs and RFT's group-mean bar all compare the G episodes of one task and seed. A component whose
value is the same in every episode of a group gives that group no learning signal for it, whatever its weight.
`component_group_std` logs, for every component, the mean over groups of its within-group standard
deviation (`group_std/<component>`), and the share of groups where it does not vary at all
(`group_flat/<component>`), so a component that never moves (e.g. triage's calibration when every sample
writes the same confidence and escalation decision) shows in the metrics rather than only in the outcome.
`group_flat/total` is the share of zero-variance groups: those that give GRPO no gradient at all (after SFT, a
policy that answers every sample of a task alike leaves RL nothing to learn from). `group_signal` puts both on the
printed step line of GRPO, RFT and DPO.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from drill.core.policy import Policy
from drill.core.types import Episode, Task

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


def group_signal(record: dict[str, Any]) -> str:
    """The step line's part for `component_group_std`'s keys: the share of zero-variance groups, then each
    component's mean within-group standard deviation, e.g. `flat 75%  std[resolution=0.12 calibration=0.00]`."""
    spread = " ".join(f"{key[len(GROUP_STD_PREFIX):]}={value:.2f}" for key, value in record.items()
                      if key.startswith(GROUP_STD_PREFIX) and key != f"{GROUP_STD_PREFIX}total")
    return f"flat {record[f'{GROUP_FLAT_PREFIX}total']:.0%}  std[{spread}]"


def diverse_demo_tasks(make_env: Any, tasks: Sequence[Task], oracle: Policy, count: int, max_turns: int = 200,
                       pool: int = 64) -> list[Task]:
    """`count` training tasks whose demonstrated decisions differ, for `demo_selection = "diverse"`.

    Why: a small model copies the worked examples' decision values. With triage's first two training tickets as
    demonstrations (both `"confidence": 1.0`, the second `"escalate": true`), SmolLM2-135M wrote confidence 1.0 in
    every parsed sample of two 8-sample groups, and mostly escalate true, so the calibration component could not
    vary within a group. The oracle plays its first turn on each of the first `pool` tasks; a task's signature is
    its call's tool and every argument that is not free text (booleans, numbers, and whether a list is empty).
    Tasks are taken in order when their signature is new, then the first remaining ones fill up to `count`. The
    result is deterministic and uses training tasks only (pass those).
    """
    from drill.core.rollout import run_episodes

    candidates = list(tasks[:max(pool, count)])
    episodes = run_episodes(make_env, [(t, 0) for t in candidates], oracle, None, max_turns)
    chosen: list[Task] = []
    seen: set[str] = set()
    for task, episode in zip(candidates, episodes, strict=True):
        action = episode.turns[0].action
        arguments = action.arguments if isinstance(action.arguments, dict) else {}
        signature = json.dumps([action.tool, sorted(
            (k, bool(v) if isinstance(v, list) else v) for k, v in arguments.items()
            if isinstance(v, bool | int | float | list))])
        if signature not in seen and len(chosen) < count:
            seen.add(signature)
            chosen.append(task)
    chosen += [t for t in candidates if t not in chosen][:count - len(chosen)]
    return chosen
