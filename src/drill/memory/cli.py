"""The `drill eval ENV` flags of the inference-time methods, and the player that runs them.

    drill eval triage --split train --policy oracle --store runs/memory.sqlite        # fill a store
    drill eval triage --policy llm --memory runs/memory.sqlite --memory-k 2           # retrieved examples
    drill eval triage --policy llm --attempts 3 --reflect                             # Reflexion
    drill eval triage --policy lats:llm --lats-budget 12 --lats-rollout heuristic     # tree search

`Methods.from_flags` reads the flags; `wrap` puts memory into every LLM policy; `search` builds a `lats:`
policy (`drill.policies` calls it for that prefix); `player` plays every policy spec (retrying failures with
`--attempts`), counts what each cost (model calls, tokens, search nodes, wall time per task), adds a
`methods` table to results.json's meta and writes every episode to `--store`. A store's rows name the
method: the policy spec, with `+memory` / `+reflect` appended, and the attempt number.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer

from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rubric import Rubric
from drill.core.types import Episode, Task
from drill.memory.lats import LATSPolicy, SearchSettings
from drill.memory.policy import Memory, MemoryPolicy, with_memory
from drill.memory.reflexion import play_attempts
from drill.memory.store import EpisodeCost, SuccessRule, TrajectoryStore, episode_cost
from drill.models.policy import LLMPolicy

__all__ = ["METHOD_PARAMETERS", "Methods", "methods_for"]


def _flag(name: str, annotation: Any, option: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


_SEARCH = SearchSettings()  # the LATS flags' defaults are the search's own

METHOD_PARAMETERS: tuple[inspect.Parameter, ...] = (
    _flag("store", Optional[Path], typer.Option(None, "--store", help="Write every episode to this trajectory "
                                                                      "store (SQLite; created if missing).")),
    _flag("memory", Optional[Path], typer.Option(None, "--memory", help="Show LLM policies the most similar "
                                                 "successful training episodes from this store as worked examples.")),
    _flag("memory_k", int, typer.Option(2, "--memory-k", help="Episodes retrieved per task with --memory.")),
    _flag("attempts", int, typer.Option(1, "--attempts", help="Play a failed task again, up to this many times.")),
    _flag("reflect", bool, typer.Option(False, "--reflect", help="After each failed attempt the model writes a "
                                                                 "reflection, shown at the next (Reflexion).")),
    _flag("success_at", Optional[float], typer.Option(None, "--success-at", help="Reward total that counts as a "
                                                      "success; default half the oracle's total on the task.")),
    _flag("lats_budget", int, typer.Option(_SEARCH.budget, "--lats-budget",
                                           help="lats:POLICY: tree nodes per search.")),
    _flag("lats_k", int, typer.Option(_SEARCH.k, "--lats-k", help="lats:POLICY: samples per expansion.")),
    _flag("lats_rollout", str, typer.Option("greedy", "--lats-rollout", help="lats:POLICY: rollout policy, greedy "
                                            "(the model at temperature 0) or a baseline (heuristic, random, ...).")),
    _flag("lats_temperature", float, typer.Option(_SEARCH.temperature, "--lats-temperature",
                                                  help="lats:POLICY: sampling temperature of expansions.")),
)
"""The method flags as command parameters, for commands built from a signature."""


@dataclass
class Methods:
    """The methods asked for on one `drill eval` command line, and what they cost once played."""

    env: str
    options: dict[str, Any]
    make_env: Callable[[], Env]
    rubric: Rubric
    baselines: Mapping[str, Callable[[], Policy]]
    success: SuccessRule
    store: TrajectoryStore | None = None
    memory: Memory | None = None
    attempts: int = 1
    reflect: bool = False
    settings: SearchSettings = field(default_factory=SearchSettings)
    rollout: str = "greedy"
    rows: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_flags(cls, values: Mapping[str, Any], env: str, options: Mapping[str, Any], make_env: Callable[[], Env],
                   rubric: Rubric, baselines: Mapping[str, Callable[[], Policy]]) -> Methods:
        """Raises ValueError (shown as a usage error) for a bad value."""
        if values["attempts"] < 1:
            raise ValueError(f"--attempts must be at least 1, got {values['attempts']}")
        if values["reflect"] and values["attempts"] < 2:
            raise ValueError("--reflect needs --attempts 2 or more (a reflection is shown at the next attempt)")
        if values["lats_rollout"] != "greedy" and values["lats_rollout"] not in baselines:
            raise ValueError(f"unknown --lats-rollout {values['lats_rollout']!r}; choose greedy or "
                             f"{', '.join(baselines)}")
        memory = None
        if values["memory"] is not None:
            if not Path(values["memory"]).is_file():
                raise ValueError(f"--memory {values['memory']}: no trajectory store there (fill one with --store)")
            memory = Memory(TrajectoryStore(values["memory"]), env, options, values["memory_k"])
        store = TrajectoryStore(values["store"]) if values["store"] is not None else None
        success = SuccessRule(make_env, rubric, baselines.get("oracle"), at=values["success_at"])
        settings = SearchSettings(budget=values["lats_budget"], k=values["lats_k"],
                                  temperature=values["lats_temperature"])
        return cls(env=env, options=dict(options), make_env=make_env, rubric=rubric, baselines=baselines,
                   success=success, store=store, memory=memory, attempts=values["attempts"],
                   reflect=values["reflect"], settings=settings, rollout=values["lats_rollout"])

    def search(self, inner: Policy) -> Policy:
        """The `lats:` policy around `inner` (with memory, if asked for, in its expansions)."""
        if isinstance(inner, LLMPolicy) and self.memory is not None:
            inner = MemoryPolicy(inner, self.memory)
        rollout = None if self.rollout == "greedy" else self.baselines[self.rollout]()
        return LATSPolicy(inner, rollout, self.make_env, self.rubric, self.settings, solved=self.success)

    def wrap(self, by_role: Mapping[str, Policy]) -> dict[str, Policy]:
        """Memory (and the reflection slot) in every LLM policy; LATS policies learn the other roles' policies."""
        wants = self.memory is not None or self.reflect or self.attempts > 1
        wrapped = with_memory(by_role, self.memory) if wants else dict(by_role)
        for policy in wrapped.values():
            if isinstance(policy, LATSPolicy):
                policy.bind(wrapped)
        return wrapped

    def method_name(self, spec: str, by_role: Mapping[str, Policy]) -> str:
        """The spec, with +memory and +reflect where they apply (scripted specs are retried without either)."""
        learns = any(isinstance(p, MemoryPolicy) for p in by_role.values())
        searches = any(isinstance(p, LATSPolicy) for p in by_role.values())
        return (spec + ("+memory" if self.memory is not None and (learns or searches) else "")
                + ("+reflect" if self.reflect and learns else ""))

    def player(self, tasks: Sequence[Task]) -> Callable[..., dict[str, list[Episode]]]:
        """A `drill.evaluate.matrix.play` that also retries, counts costs and stores (see the module docstring)."""
        by_id = {t.id: t for t in tasks}

        def play(make_env: Callable[[], Env], policies: Mapping[str, Mapping[str, Policy]],
                 jobs: Sequence[tuple[Task, int]], rubric: Rubric, batch: int, max_turns: int = 1000,
                 on_policy: Callable[[str], None] | None = None,
                 on_episode_done: Callable[[Episode], None] | None = None) -> dict[str, list[Episode]]:
            played: dict[str, list[Episode]] = {}
            for name, by_role in policies.items():
                if on_policy is not None:
                    on_policy(name)
                started = time.perf_counter()
                method = self.method_name(name, by_role)
                reflect = self.reflect and any(isinstance(p, MemoryPolicy) for p in by_role.values())
                report = play_attempts(make_env, by_role, jobs, rubric, self.success, self.attempts, reflect,
                                       batch, max_turns, on_episode_done)
                wall = time.perf_counter() - started
                searches = [p for p in {id(p): p for p in by_role.values()}.values() if isinstance(p, LATSPolicy)]
                costs: dict[tuple[str, int], EpisodeCost] = {}
                for _, episode in report.played:
                    key = (episode.task_id, episode.seed)
                    own = EpisodeCost() if searches else episode_cost(episode)  # a plan's calls are the search's
                    costs[key] = costs.get(key, EpisodeCost()) + own
                for key, extra in report.costs.items():
                    costs[key] = costs.get(key, EpisodeCost()) + extra
                for search in searches:
                    for key, extra in search.costs.items():
                        costs[key] = costs.get(key, EpisodeCost()) + extra
                total = sum(costs.values(), EpisodeCost())
                n = max(len(jobs), 1)
                row: dict[str, Any] = {"policy": name, "method": method}
                row |= {f"success@{i + 1}": rate for i, rate in enumerate(report.success_by_attempt)}
                row |= {"success": report.success_by_attempt[-1] if report.success_by_attempt else 0.0,
                        "reward": sum(e.score.total for e in report.final if e.score) / n,
                        "model_calls": total.model_calls / n, "tokens": total.tokens / n, "nodes": total.nodes / n,
                        "wall_s": wall / n}
                if report.reflections:
                    row["reflections"] = report.reflections
                self.rows.append(row)
                if self.store is not None:
                    for attempt in range(1, self.attempts + 1):
                        episodes = [e for a, e in report.played if a == attempt]
                        if episodes:
                            search_costs = {k: v for s in searches for k, v in s.costs.items()}
                            self.store.add(episodes, by_id, self.options, self.success, method,
                                           attempt, costs=search_costs, thresholds=self.success.threshold)
                played[name] = report.final
            return played

        return play

    def print_table(self, title: str) -> None:
        from rich.console import Console

        from drill.console import console
        from drill.evaluate.report import summary_table

        rows = [{k: v for k, v in row.items() if k != "reflections"} for row in self.rows]
        if not rows:
            return
        columns = list(dict.fromkeys(k for row in rows for k in row))
        formats = {c: "{:.0%}".format for c in columns if c.startswith("success")}
        formats |= {"model_calls": "{:.1f}".format, "tokens": "{:.0f}".format, "nodes": "{:.1f}".format,
                    "wall_s": "{:.2f}".format}
        (console if console.is_terminal else Console(width=170)).print(
            summary_table(f"{title} · success, reward and cost per task", rows, columns, formats))


def methods_for(values: Mapping[str, Any], env: str, options: Mapping[str, Any], make_env: Callable[[], Env],
                rubric: Rubric, baselines: Mapping[str, Callable[[], Policy]],
                policy_specs: Sequence[str]) -> Methods | None:
    """The methods of a `drill eval` command line, or None when it uses none of their flags or `lats:` specs."""
    from drill.policies import SEARCH_PREFIX

    used = (values["store"] is not None or values["memory"] is not None or values["attempts"] != 1
            or values["reflect"] or any(SEARCH_PREFIX in text for text in policy_specs))
    return Methods.from_flags(values, env, options, make_env, rubric, baselines) if used else None

