"""`drill eval triage` and `drill watch triage`: the evaluation report and the episode viewer."""

from __future__ import annotations

import datetime as dt
import functools
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.text import Text
from rich.table import Table

from drill.cli_options import (BaseUrlOpt, DemosOpt, KeyEnvOpt, ListingOpt, ModelOpt, PrefillOpt, ReactOpt,
                               TempOpt, TokensOpt, llm_options)
from drill.console import console, usage_error
from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.rubric import Rubric
from drill.core.types import Episode
from drill.envs.triage.baselines import HeuristicPolicy, OraclePolicy, RandomPolicy
from drill.envs.triage.corpus import CorpusError, TriageTask
from drill.envs.triage.env import MODES, TriageEnv
from drill.envs.triage.rubric import DEFAULT_WEIGHTS, rubric, submission
from drill.evaluate.report import grouped_bar_chart, progress_bar, summary_table, write_results
from drill.policies import LLMOptions, policy_label, resolve_policies

COMPONENT_NAMES = tuple(DEFAULT_WEIGHTS)
_BATCH = 16
"""Episodes played together per `run_episodes` call: one batched policy call per turn for each chunk."""

ModeOpt = typer.Option("reader", "--mode", help="reader: one turn, ticket + k articles; agent: multi-turn search.")
KOpt = typer.Option(3, "--k", help="Reader mode: articles in the prompt (gold + BM25 distractors).")
BudgetOpt = typer.Option(8, "--turn-budget", help="Agent mode: turns before the episode ends unsubmitted.")
DataOpt = typer.Option(None, "--data-dir", help="A corpus folder to use instead of the shipped one.")
WeightOpt = typer.Option([], "--weight", help="Override a component weight, e.g. --weight parsimony=0.3 (repeatable).")


def _make_env(mode: str, k: int, turn_budget: int, data_dir: Path | None) -> TriageEnv:
    try:
        return TriageEnv(mode=mode, k=k, turn_budget=turn_budget, data_dir=None if data_dir is None else str(data_dir))
    except (ValueError, CorpusError) as exc:
        usage_error(" ".join(str(exc).split()))


def _rubric(weights: Sequence[str]) -> Rubric:
    parsed: dict[str, float] = {}
    for item in weights:
        name, sep, value = item.partition("=")
        try:
            parsed[name.strip()] = float(value)
        except ValueError:
            usage_error(f"--weight {item!r}: expected NAME=NUMBER with NAME one of {', '.join(COMPONENT_NAMES)}")
        if not sep:
            usage_error(f"--weight {item!r}: expected NAME=NUMBER")
    try:
        return rubric(parsed)
    except ValueError as exc:
        usage_error(f"--weight: {exc}")


def _baselines(data_dir: Path | None) -> dict[str, Callable[[], Policy]]:
    return {"random": RandomPolicy, "heuristic": functools.partial(HeuristicPolicy, data_dir),
            "oracle": OraclePolicy}


def _policy(spec: str, data_dir: Path | None, llm: LLMOptions) -> Policy:
    try:
        return resolve_policies(spec, TriageEnv.roles, _baselines(data_dir), llm)["agent"]
    except ValueError as exc:
        usage_error(str(exc))




def escalation_correct(episode: Episode, task: TriageTask) -> bool:
    sub = submission(episode)
    return sub is not None and sub.escalate == task.should_escalate


def summarize(spec: str, episodes: Sequence[Episode], tasks: dict[str, TriageTask]) -> dict[str, Any]:
    """One table row: the policy, its model, the mean total and components, escalation accuracy, submit rate."""
    info = episodes[0].policies["agent"]
    row: dict[str, Any] = {"policy": spec, "model": policy_label(info), "episodes": len(episodes)}
    row["total"] = statistics.fmean(e.score.total for e in episodes if e.score)
    for name in COMPONENT_NAMES:
        row[name] = statistics.fmean(e.score.components[name] for e in episodes if e.score)
    row["escalation_acc"] = statistics.fmean(escalation_correct(e, tasks[e.task_id]) for e in episodes)
    row["submitted"] = statistics.fmean(submission(e) is not None for e in episodes)
    row["turns"] = statistics.fmean(len(e.turns) for e in episodes)
    return row


def evaluate(
    mode: str = ModeOpt,
    policy: list[str] = typer.Option(["random", "heuristic", "oracle"], "--policy",
                                     help="Policy to evaluate (repeatable): random, heuristic, oracle, llm, "
                                          "openai:MODEL, lora:PATH, vllm:MODEL."),
    split: str = typer.Option("test", "--split", help="Task split: test (held out) or train."),
    limit: int | None = typer.Option(None, "--limit", help="Evaluate only the first N tasks of the split."),
    seeds: int = typer.Option(1, "--seeds", help="Seeds per task (0..N-1); in reader mode a seed reorders articles."),
    k: int = KOpt,
    turn_budget: int = BudgetOpt,
    weight: list[str] = WeightOpt,
    data_dir: Path | None = DataOpt,
    out: Path | None = typer.Option(None, "--out", help="Report folder; default reports/triage-MODE."),
    model: str | None = ModelOpt,
    base_url: str | None = BaseUrlOpt,
    api_key_env: str = KeyEnvOpt,
    max_new_tokens: int = TokensOpt,
    temperature: float = TempOpt,
    react: bool = ReactOpt,
    tool_listing: str = ListingOpt,
    prefill: str = PrefillOpt,
    demos: int = DemosOpt,
) -> None:
    """Evaluate policies on IT triage: a table per policy, results.json and a components chart."""
    if mode not in MODES:
        usage_error(f"unknown --mode {mode!r}; choose from {', '.join(MODES)}")
    if split not in ("train", "test"):
        usage_error(f"unknown --split {split!r}; choose train or test")
    if limit is not None and limit < 1:
        usage_error(f"--limit must be at least 1, got {limit}")
    if seeds < 1:
        usage_error(f"--seeds must be at least 1, got {seeds}")
    env = _make_env(mode, k, turn_budget, data_dir)
    scorer = _rubric(weight)
    llm = llm_options(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                      temperature=temperature, react=react, tool_listing=tool_listing, prefill=prefill,
                      demos=demos, make_env=lambda: TriageEnv(**env.options), oracle=_baselines(data_dir)["oracle"])
    policies = {spec: _policy(spec, data_dir, llm) for spec in dict.fromkeys(policy)}
    tasks = env.tasks(split)[:limit]
    jobs = [(task, seed) for task in tasks for seed in range(seeds)]
    out = out or Path("reports") / f"triage-{mode}"

    episodes_by_policy: dict[str, list[Episode]] = {}
    with progress_bar() as progress:
        bar = progress.add_task(f"triage {mode}", total=len(jobs) * len(policies))
        for spec, chosen in policies.items():
            progress.update(bar, description=f"triage {mode} · {spec}")
            played: list[Episode] = []
            for start in range(0, len(jobs), _BATCH):
                played += run_episodes(lambda: TriageEnv(**env.options), jobs[start:start + _BATCH], chosen, scorer,
                                       on_episode_done=lambda _: progress.advance(bar))
            episodes_by_policy[spec] = played

    by_id = {t.id: t for t in tasks}
    rows = [summarize(spec, eps, by_id) for spec, eps in episodes_by_policy.items()]
    columns = ["policy", *(["model"] if any(r["model"] != "—" for r in rows) else []), "episodes", "total",
               *COMPONENT_NAMES, "escalation_acc", "submitted", *(["turns"] if mode == "agent" else [])]
    title = f"triage {mode} · {split} split · {len(tasks)} tasks x {seeds} seed{'s' if seeds > 1 else ''}"
    table = summary_table(title, rows, columns, {"episodes": str, "turns": lambda v: f"{v:.1f}",
                                                 "escalation_acc": lambda v: f"{v:.0%}",
                                                 "submitted": lambda v: f"{v:.0%}"})
    (console if console.is_terminal else Console(width=160)).print(table)  # logs and pipes get the whole table
    meta = {"env": "triage", "mode": mode, "options": env.options, "split": split, "tasks": len(tasks),
            "seeds": list(range(seeds)), "policies": list(policies), "weights": scorer.weights,
            "command": " ".join(["drill", *sys.argv[1:]]),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    write_results(out / "results.json", meta, rows, [e for eps in episodes_by_policy.values() for e in eps])
    chart_rows = [{"component": name, "policy": row["policy"], "mean": row[name]}
                  for row in rows for name in ("total", *COMPONENT_NAMES)]
    grouped_bar_chart(out / "components.png", chart_rows, group="component", series="policy", value="mean",
                      title=f"triage {mode}: mean reward components per policy", ylabel="mean (0-1)")
    console.print(f"wrote {out / 'results.json'} and {out / 'components.png'}")


def watch(
    mode: str = ModeOpt,
    task: str | None = typer.Option(None, "--task", help="Task id, e.g. T-0001; default the first test task."),
    policy: str = typer.Option("heuristic", "--policy",
                               help="random, heuristic, oracle, llm, openai:MODEL, lora:PATH."),
    seed: int = typer.Option(0, "--seed", help="Episode seed (reader mode: the article order)."),
    k: int = KOpt,
    turn_budget: int = BudgetOpt,
    weight: list[str] = WeightOpt,
    data_dir: Path | None = DataOpt,
    model: str | None = ModelOpt,
    base_url: str | None = BaseUrlOpt,
    api_key_env: str = KeyEnvOpt,
    max_new_tokens: int = TokensOpt,
    temperature: float = TempOpt,
    react: bool = ReactOpt,
    tool_listing: str = ListingOpt,
    prefill: str = PrefillOpt,
    demos: int = DemosOpt,
) -> None:
    """Watch one triage episode: what the agent saw, the raw model output, its action, events and the score."""
    if mode not in MODES:
        usage_error(f"unknown --mode {mode!r}; choose from {', '.join(MODES)}")
    env = _make_env(mode, k, turn_budget, data_dir)
    scorer = _rubric(weight)
    llm = llm_options(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                      temperature=temperature, react=react, tool_listing=tool_listing, prefill=prefill,
                      demos=demos, make_env=lambda: TriageEnv(**env.options), oracle=_baselines(data_dir)["oracle"], seed=seed)
    chosen = _policy(policy, data_dir, llm)
    try:
        picked = env.task(task) if task else env.tasks("test")[0]
    except KeyError:
        usage_error(f"unknown --task {task!r}; ids look like T-0001 (see tasks.json)")
    episode = run_episodes(lambda: TriageEnv(**env.options), [(picked, seed)], chosen, scorer)[0]
    assert isinstance(picked, TriageTask)
    console.rule(f"triage {mode} · {picked.id} ({picked.split}) · seed {seed} · {policy}")
    for turn in episode.turns:
        console.print(Panel(Text(turn.observation.content), title=f"turn {turn.index + 1}: the agent sees",
                            title_align="left", border_style="cyan"))
        if turn.observation.error:
            console.print(Text.assemble(("error shown to the agent: ", "red"), turn.observation.error))
        if turn.action.raw is not None:
            console.print(Panel(Text(turn.action.raw), title="raw model output", title_align="left", border_style="magenta"))
        if turn.action.parse_error is not None:
            console.print(Text.assemble(("unparseable: ", "red"), turn.action.parse_error))
        else:
            args = json.dumps(turn.action.arguments, ensure_ascii=False)
            console.print(Text.assemble(("action ", "bold"), f"{turn.action.tool}({args})"), soft_wrap=True)
        for event in turn.events:
            data = {key: value for key, value in event.data.items() if key not in ("resolution", "seen_ids")}
            console.print(Text.assemble(("  event ", "yellow"), f"{event.name} {json.dumps(data)}"), soft_wrap=True)
    score = episode.score
    assert score is not None
    table = Table(title=f"score (gold escalate={picked.should_escalate}, answerable={picked.answerable}, "
                        f"gold articles={', '.join(picked.gold_article_ids) or 'none'})")
    for column in ("component", "value", "weight", "contribution"):
        table.add_column(column, justify="left" if column == "component" else "right")
    for name in COMPONENT_NAMES:
        table.add_row(name, f"{score.components[name]:.3f}", f"{score.weights[name]:.2f}",
                      f"{score.contribution(name):.3f}")
    table.add_row("[bold]total", "", "", f"[bold]{score.total:.3f}")
    console.print(table)
