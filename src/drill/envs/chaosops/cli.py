"""`drill eval chaosops` and `drill watch chaosops`: the baseline report and the turn-by-turn viewer."""

from __future__ import annotations

import datetime as dt
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

from drill.cli_options import (BaseUrlOpt, DemosOpt, KeyEnvOpt, ListingOpt, ModelOpt, PrefillOpt, ReactOpt,
                               TempOpt, TokensOpt, llm_options)
from drill.console import console, usage_error
from drill.core import Episode, Policy, PolicyInfo, PolicyInput, Rubric, Turn, run_episodes
from drill.envs.chaosops.baselines import baselines
from drill.envs.chaosops.env import TASKS, ChaosOpsEnv, ChaosOpsTask
from drill.envs.chaosops.failures import FAILURE_NAMES, ROLES, TIER_NAMES
from drill.envs.chaosops.rubric import elapsed_steps, rubric
from drill.evaluate.report import grouped_bar_chart, progress_bar, summary_table, write_results
from drill.policies import LLMOptions, policy_label, resolve_policies

_BATCH = 45
"""Episodes played in lockstep per `run_episodes` call (one batched policy call per turn for each chunk)."""
SPLIT_NOTE = ("train and test hold the same 27 scenarios; the world's generator is keyed on the split, "
              "so their seeds never give the same world")

PolicyOpt = typer.Option(["random", "heuristic", "oracle"], "--policy",
                         help="Policy (repeatable): random, heuristic, oracle, llm, openai:MODEL, lora:PATH, "
                              "vllm:MODEL; per role with commas, e.g. heuristic,oversight=llm.")
FailureOpt = typer.Option([], "--failure", help=f"Failure type (repeatable; default all): {', '.join(FAILURE_NAMES)}.")
TierOpt = typer.Option([], "--tier", help="Tier (repeatable; default all): easy, medium, hard.")
RogueOpt = typer.Option(1.0, "--rogue-multiplier", help="Scales the rogue-catch bonus and false-positive penalty.")


def _choose(values: Sequence[str], known: Sequence[str], option: str) -> list[str]:
    for value in values:
        if value not in known:
            usage_error(f"unknown {option} {value!r}; choose from {', '.join(known)}")
    return list(dict.fromkeys(values)) or list(known)


def _rubric(rogue_multiplier: float) -> Rubric:
    try:
        return rubric(rogue_multiplier)
    except ValueError as exc:
        usage_error(f"--rogue-multiplier: {exc}")


def _policies(spec: str, llm: LLMOptions) -> dict[str, Policy]:
    try:
        return resolve_policies(spec, ROLES, baselines, llm)
    except ValueError as exc:
        usage_error(str(exc))


def _model_label(policies: dict[str, PolicyInfo]) -> str:
    """The model, adapter (sha256 prefix) and load status of every language-model role; "—" for scripted ones."""
    labels = []
    for role, info in policies.items():
        if info.kind != "scripted":
            labels.append(f"{role}: {policy_label(info)}")
    return "; ".join(labels) or "—"


def summarize(spec: str, tier: str, episodes: Sequence[Episode], tasks: dict[str, ChaosOpsTask]) -> dict[str, Any]:
    """One table row: mean reward, % resolved, rogue catch and false-positive rates, MTTR, wrong fixes."""
    scores = [e.score for e in episodes]
    if any(s is None for s in scores):
        raise ValueError("summarize needs scored episodes")
    rogue = [e for e in episodes if tasks[e.task_id].rogue_agent is not None]
    innocent = [e for e in episodes if tasks[e.task_id].rogue_agent is None]
    resolved = [e for e in episodes if e.count("resolved")]
    return {
        "policy": spec, "tier": tier, "model": _model_label(episodes[0].policies), "episodes": len(episodes),
        "mean_reward": statistics.fmean(s.total for s in scores if s is not None),
        "resolved": len(resolved) / len(episodes),
        "rogue_caught": statistics.fmean(e.count("rogue_caught") > 0 for e in rogue) if rogue else None,
        "false_positive_flags": statistics.fmean(e.count("rogue_false_positive") > 0 for e in innocent)
        if innocent else None,
        "mttr": statistics.fmean(elapsed_steps(e, tasks[e.task_id]) for e in resolved) if resolved else None,
        "wrong_fixes": statistics.fmean(e.count("wrong_fix") for e in episodes),
    }


def run_matrix(specs: dict[str, dict[str, Policy]], tasks: Sequence[ChaosOpsTask], seeds: int, scorer: Rubric,
               on_policy: Callable[[str], None] | None = None,
               on_episode_done: Callable[[Episode], None] | None = None) -> dict[str, list[Episode]]:
    """Play every (task, seed) for every policy spec; the episodes per spec, in job order."""
    jobs = [(task, seed) for task in tasks for seed in range(seeds)]
    played: dict[str, list[Episode]] = {}
    for spec, policies in specs.items():
        if on_policy is not None:
            on_policy(spec)
        episodes: list[Episode] = []
        for start in range(0, len(jobs), _BATCH):
            episodes += run_episodes(ChaosOpsEnv, jobs[start:start + _BATCH], policies, scorer,
                                     on_episode_done=on_episode_done)
        played[spec] = episodes
    return played


def evaluate(
    policy: list[str] = PolicyOpt,
    seeds: int = typer.Option(5, "--seeds", help="Seeds per scenario (0..N-1)."),
    failure: list[str] = FailureOpt,
    tier: list[str] = TierOpt,
    rogue_multiplier: float = RogueOpt,
    out: Path = typer.Option(Path("reports/chaosops"), "--out", help="Report folder."),
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
    """Evaluate policies on ChaosOps: seeds x failures x tiers; a table per policy and tier, results.json, a PNG."""
    failures = _choose(failure, FAILURE_NAMES, "--failure")
    tiers = _choose(tier, TIER_NAMES, "--tier")
    if seeds < 1:
        usage_error(f"--seeds must be at least 1, got {seeds}")
    scorer = _rubric(rogue_multiplier)
    llm = llm_options(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                      temperature=temperature, react=react, tool_listing=tool_listing, prefill=prefill,
                      demos=demos, make_env=ChaosOpsEnv, oracle=baselines["oracle"])
    specs = {spec: _policies(spec, llm) for spec in dict.fromkeys(policy)}
    tasks = [t for t in TASKS["test"] if t.failure in failures and t.tier in tiers]
    with progress_bar() as progress:
        bar = progress.add_task("chaosops", total=len(tasks) * seeds * len(specs))
        played = run_matrix(specs, tasks, seeds, scorer,
                            on_policy=lambda spec: progress.update(bar, description=f"chaosops · {spec}"),
                            on_episode_done=lambda _: progress.advance(bar))

    by_id = {t.id: t for t in tasks}
    rows = [summarize(spec, t, [e for e in episodes if by_id[e.task_id].tier == t], by_id)
            for spec, episodes in played.items() for t in tiers]
    columns = ["policy", "tier", *(["model"] if any(r["model"] != "—" for r in rows) else []), "episodes",
               "mean_reward", "resolved", "rogue_caught", "false_positive_flags", "mttr", "wrong_fixes"]
    pct = "{:.0%}".format
    title = (f"chaosops · {len(failures)} failures x {len(tiers)} tiers x {seeds} seeds · "
             f"rogue multiplier {rogue_multiplier:g}")
    table = summary_table(title, rows, columns, {"episodes": str, "mean_reward": "{:+.1f}".format, "resolved": pct,
                                                 "rogue_caught": pct, "false_positive_flags": pct,
                                                 "mttr": "{:.1f}".format, "wrong_fixes": "{:.2f}".format})
    (console if console.is_terminal else Console(width=170)).print(table)  # pipes and logs get the whole table
    meta = {"env": "chaosops", "split": "test", "split_note": SPLIT_NOTE, "seeds": list(range(seeds)),
            "failures": failures, "tiers": tiers, "policies": list(specs), "rogue_multiplier": rogue_multiplier,
            "weights": scorer.weights, "command": " ".join(["drill", *sys.argv[1:]]),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    write_results(out / "results.json", meta, rows, [e for episodes in played.values() for e in episodes])
    grouped_bar_chart(out / "mean_reward_by_tier.png", rows, group="tier", series="policy", value="mean_reward",
                      title="ChaosOps: mean reward by tier", ylabel="mean reward")
    console.print(f"wrote {out / 'results.json'} and {out / 'mean_reward_by_tier.png'}")


def watch(
    failure: str = typer.Option("autoscaler_cost_cut", "--failure", help=f"One of {', '.join(FAILURE_NAMES)}."),
    tier: str = typer.Option("hard", "--tier", help="easy, medium or hard."),
    policy: str = typer.Option("oracle", "--policy", help="One policy spec, e.g. oracle or heuristic,oversight=llm."),
    seed: int = typer.Option(0, "--seed", help="Episode seed."),
    rogue_multiplier: float = RogueOpt,
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
    """Watch one ChaosOps episode: each role's view, its action, the events and the running reward."""
    _choose([failure], FAILURE_NAMES, "--failure")
    _choose([tier], TIER_NAMES, "--tier")
    scorer = _rubric(rogue_multiplier)
    llm = llm_options(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                      temperature=temperature, react=react, tool_listing=tool_listing, prefill=prefill,
                      demos=demos, make_env=ChaosOpsEnv, oracle=baselines["oracle"], seed=seed)
    policies = _policies(policy, llm)
    env = ChaosOpsEnv()
    task = env.task(f"{failure}-{tier}")
    assert isinstance(task, ChaosOpsTask)
    console.rule(f"chaosops · {task.id} · seed {seed} · {policy}")
    console.print(f"ground truth: root cause {task.root_cause}; rogue {task.rogue_agent or 'none'}; "
                  f"fix {' -> '.join(task.fix_sequence)}; budget {task.step_budget} steps", highlight=False)
    obs = env.reset(task, seed)
    turns: list[Turn] = []
    events = []
    done = False
    while not done:
        role, chosen = obs.role, policies[obs.role]
        action = chosen.act([PolicyInput(task=task, seed=seed, observation=obs, history=tuple(turns))])[0]
        result = env.step(action)
        turns.append(Turn(index=len(turns), role=role, observation=obs, action=action, events=result.events,
                          policy=chosen.info.name))
        events += result.events
        done = result.done
        score = scorer.score(Episode(env=env.name, task_id=task.id, seed=seed, turns=turns, events=events,
                                     policies={r: p.info for r, p in policies.items()}, done=done), task)
        console.print(Panel(Text(obs.content), title=f"step {obs.step} · {role} ({chosen.info.name}) sees",
                            title_align="left", border_style="cyan"))
        if obs.error:
            console.print(Text(f"error shown: {obs.error}", style="red"))
        if action.raw is not None:
            console.print(Panel(Text(action.raw), title="raw model output", title_align="left", border_style="magenta"))
        if action.parse_error is not None:
            console.print(Text(f"unparseable: {action.parse_error}", style="red"))
        else:
            console.print(Text(f"{role} -> {action.tool}({json.dumps(action.arguments, ensure_ascii=False)})",
                               style="bold"))
        for event in result.events:
            console.print(Text(f"  event {event.name} {json.dumps(event.data)}", style="yellow"))
        parts = [f"{name} {score.contribution(name):+g}" for name in score.components if score.contribution(name)]
        console.print(Text(f"  reward so far {score.total:+g}" + (f" = {' | '.join(parts)}" if parts else ""),
                           style="green"))
        obs = result.observation
    console.rule(f"episode over after {len(turns)} turns · total {score.total:+g}")
