"""The one evaluation: policies × tasks × seeds for any registered environment, its table, results.json and charts.

`evaluate(spec, options, policies, tasks, seeds, rubric, out)` plays every (task, seed) for every policy spec in
lockstep batches (one batched model call per turn), summarizes each policy with the environment's own
`summarize` (one row per policy, or per policy and group), prints the table, and writes `results.json` and the
spec's charts. `drill eval ENV` and the trainer's held-out evaluation both call it.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from drill.console import console
from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rollout import fewer_collections, run_episodes
from drill.core.rubric import Rubric
from drill.core.spec import Chart, EnvSpec, percent
from drill.core.types import Episode, PolicyInfo, Task
from drill.evaluate.report import chart_process, grouped_bar_chart, progress_bar, summary_table, write_results
from drill.models.local import precision
from drill.policies import policy_label


def model_label(policies: Mapping[str, PolicyInfo]) -> str:
    """The model, adapter (sha256 prefix) and load status of every language-model role; "—" when all are scripted."""
    labels = [policy_label(info) if len(policies) == 1 else f"{role}: {policy_label(info)}"
              for role, info in policies.items() if info.kind != "scripted"]
    return "; ".join(labels) or "—"


def play(make_env: Callable[[], Env], policies: Mapping[str, Mapping[str, Policy]], jobs: Sequence[tuple[Task, int]],
         rubric: Rubric, batch: int, max_turns: int = 1000, on_policy: Callable[[str], None] | None = None,
         on_episode_done: Callable[[Episode], None] | None = None) -> dict[str, list[Episode]]:
    """Every job for every policy spec (a policy per role), scored; the episodes per spec, in job order. The
    garbage collector's first generation stays raised across the batches (`fewer_collections`), so the deferred
    collection runs once, not after every batch."""
    from drill.models.local import clear_prefix_caches

    played: dict[str, list[Episode]] = {}
    with fewer_collections():
        for name, by_role in policies.items():
            if on_policy is not None:
                on_policy(name)
            episodes: list[Episode] = []
            for start in range(0, len(jobs), batch):
                episodes += run_episodes(make_env, jobs[start:start + batch], by_role, rubric, max_turns,
                                         on_episode_done=on_episode_done)
            played[name] = episodes
            clear_prefix_caches()  # the next spec is another model: this one's cache would only hold memory
    return played


def pass_k(spec: EnvSpec, episodes: Sequence[Episode], tasks: Mapping[str, Task]) -> dict[str, float]:
    """pass^1..pass^k (τ-bench): for each task played k times with c successes, the chance that j trials drawn
    from its k all succeed, C(c, j) / C(k, j), averaged over the tasks. pass^1 is the success rate; a policy that
    succeeds on a task only sometimes falls as j grows. Empty when the spec defines no success."""
    if spec.success is None or not episodes:
        return {}
    trials: dict[str, list[bool]] = {}
    for episode in episodes:
        trials.setdefault(episode.task_id, []).append(bool(spec.success(episode, tasks[episode.task_id])))
    k = min(len(outcomes) for outcomes in trials.values())
    return {f"pass^{j}": statistics.fmean(math.comb(sum(o), j) / math.comb(len(o), j) for o in trials.values())
            for j in range(1, k + 1)}


def pass_k_chart(spec: EnvSpec) -> tuple[Chart, ...]:
    """The pass^k chart every environment with a success definition gets, beside its own charts."""
    if spec.success is None:
        return ()
    return (Chart("pass_k.png", "pass_k", f"{spec.name}: pass^k (all k trials of a task succeed)", "pass^k"),)


def summary_rows(spec: EnvSpec, played: Mapping[str, Sequence[Episode]], tasks: Mapping[str, Task]) -> list[dict]:
    """The table rows: per policy (and per group with `spec.rows_by_group`), the env's columns."""
    rows = []
    for name, episodes in played.items():
        if spec.rows_by_group and spec.group is not None:
            groups: dict[str, list[Episode]] = {}
            for episode in episodes:
                groups.setdefault(spec.group(tasks[episode.task_id]), []).append(episode)
            parts = [({spec.group_name: group}, chunk) for group, chunk in groups.items()]
        else:
            parts = [({}, list(episodes))]
        for keys, chunk in parts:
            if not chunk:
                continue
            row: dict[str, Any] = {"policy": name, **keys, "model": model_label(chunk[0].policies),
                                   "episodes": len(chunk)}
            row.update(spec.summarize(chunk, tasks))
            row.update(pass_k(spec, chunk, tasks))
            rows.append(row)
    return rows


def _chart_rows(spec: EnvSpec, played: Mapping[str, Sequence[Episode]], tasks: Mapping[str, Task],
                kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, episodes in played.items():
        scores = [e.score for e in episodes if e.score is not None]
        if kind == "pass_k":
            rows += [{"x": name_j, "policy": name, "value": value}
                     for name_j, value in pass_k(spec, episodes, tasks).items()]
            continue
        if kind == "components":
            rows.append({"x": "total", "policy": name, "value": statistics.fmean(s.total for s in scores)})
            rows += [{"x": c, "policy": name, "value": statistics.fmean(s.components[c] for s in scores)}
                     for c in scores[0].components]
            continue
        groups: dict[str, list[float]] = {}
        for episode in episodes:  # groups in the order the tasks first show them (ChaosOps: easy, medium, hard)
            label = spec.group(tasks[episode.task_id]) if spec.group else "all"
            groups.setdefault(label, []).append(episode.score.total if episode.score else 0.0)
        rows += [{"x": g, "policy": name, "value": statistics.fmean(v)} for g, v in groups.items()]
    return rows


@dataclass(frozen=True)
class Report:
    rows: list[dict[str, Any]]
    episodes: dict[str, list[Episode]]
    files: list[Path]


def scripted_only(policies: Mapping[str, Mapping[str, Policy]]) -> bool:
    return all(p.info.kind == "scripted" for by_role in policies.values() for p in by_role.values())


def evaluate(spec: EnvSpec, options: Mapping[str, Any], policies: Mapping[str, Mapping[str, Policy]],
             tasks: Sequence[Task], seeds: int, rubric: Rubric, out: Path | None, title: str,
             meta: Mapping[str, Any] | None = None, max_turns: int = 1000, quiet: bool = False,
             keep_text: bool = False, player: Callable[..., dict[str, list[Episode]]] = play) -> Report:
    """Play, summarize, print and (with `out`) write results.json and the charts. See the module docstring.
    `player` plays like `play` (drill.memory's retries and cost counting); `meta` is read after it ran.

    With only scripted policies and no `keep_text`, the env's `text_option` (if it has one) is turned off: the
    episodes are the same, only the observation text nobody reads is not rendered."""
    scripted = scripted_only(policies)
    if spec.text_option and not keep_text and scripted:
        options = {**options, spec.text_option: False}
    # a scripted matrix played here takes about as long as importing matplotlib: import it in a second process
    # meanwhile (not beside a Ray or memory player, whose threads and connections a fork should not copy)
    charts_drawn = (*spec.charts, *pass_k_chart(spec))
    with chart_process(out is not None and bool(charts_drawn) and scripted and player is play) as charts:
        make_env = spec.make(options)
        jobs = [(task, seed) for task in tasks for seed in range(seeds)]
        with progress_bar(disable=quiet) as progress:
            bar = progress.add_task(spec.name, total=len(jobs) * len(policies))
            played = player(make_env, policies, jobs, rubric, spec.batch, max_turns,
                            on_policy=lambda name: progress.update(bar, description=f"{spec.name} · {name}"),
                            on_episode_done=lambda _: progress.advance(bar))
        by_id = {t.id: t for t in tasks}
        rows = summary_rows(spec, played, by_id)
        passes = [f"pass^{j}" for j in range(1, seeds + 1)] if spec.success is not None else []
        columns = ["policy", *([spec.group_name] if spec.rows_by_group else []), "model", "episodes",
                   *(c.name for c in spec.columns), *passes]
        columns = [c for c in columns
                   if any(row.get(c) not in (None, "—") for row in rows) or c in ("policy", "episodes")]
        formats = {"episodes": str, **{c.name: c.format for c in spec.columns if c.format is not None},
                   **{name: percent for name in passes}}
        table = summary_table(title, rows, columns, formats)
        if not quiet:
            (console if console.is_terminal else Console(width=170)).print(table)  # pipes and logs get the whole table
        files: list[Path] = []
        if out is not None:
            drawn = []
            for chart in charts_drawn:  # drawn (in the chart process, if there is one) while results.json is written
                arguments = (out / chart.filename, _chart_rows(spec, played, by_id, chart.kind))
                settings = {"group": "x", "series": "policy", "value": "value", "title": chart.title,
                            "ylabel": chart.ylabel}
                if charts is not None:
                    drawn.append(charts.submit(grouped_bar_chart, *arguments, **settings))
                else:
                    grouped_bar_chart(*arguments, **settings)
            full_meta = {"env": spec.name, "options": dict(options), "tasks": len(tasks), "seeds": list(range(seeds)),
                         "policies": list(policies), "weights": rubric.weights, **spec.notes, **(meta or {}),
                         "precision": precision(p for by_role in policies.values() for p in by_role.values()),
                         "command": " ".join(["drill", *sys.argv[1:]]),
                         "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
            if spec.group is not None:
                full_meta[f"by_{spec.group_name}"] = _chart_rows(spec, played, by_id, "by_group")
            write_results(out / "results.json", full_meta, rows, [e for eps in played.values() for e in eps])
            for future in drawn:
                future.result()  # a chart that failed raises here, with the drawing process's traceback
            files = [out / "results.json", *(out / chart.filename for chart in charts_drawn)]
            if not quiet:
                console.print(f"wrote {' and '.join(str(f) for f in files)}", highlight=False)
    return Report(rows=rows, episodes=played, files=files)
