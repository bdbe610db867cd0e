"""`drill eval inbox`, `drill watch inbox` and the `drill inbox` commands (ingest, build-synthetic,
generate-questions, search)."""

from __future__ import annotations

import datetime as dt
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from drill.cli_options import (BaseUrlOpt, DemosOpt, KeyEnvOpt, ListingOpt, ModelOpt, PrefillOpt, ReactOpt,
                               TempOpt, TokensOpt, llm_options)
from drill.console import console, fatal, usage_error
from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.types import Episode
from drill.envs.inbox.baselines import baselines
from drill.envs.inbox.env import InboxEnv
from drill.envs.inbox.questions import InboxQuestion
from drill.envs.inbox.rubric import rubric
from drill.envs.inbox.store import StoreError
from drill.envs.inbox.synthetic import DEFAULT_MESSAGES
from drill.evaluate.report import grouped_bar_chart, progress_bar, summary_table, write_results
from drill.policies import LLMOptions, policy_label, resolve_policies

inbox_app = typer.Typer(no_args_is_help=True, help="Mail stores and questions for the inbox environment.")

_BATCH = 32
"""Episodes played together per `run_episodes` call."""

SeedOpt = typer.Option(0, "--synthetic-seed", help="Seed of the synthetic company inbox (when no --db is given).")
DbOpt = typer.Option(None, "--db", help="A mail store from `drill inbox ingest` instead of the synthetic inbox.")
QuestionsOpt = typer.Option(None, "--questions", help="The questions JSONL for --db.")
TurnsOpt = typer.Option(10, "--max-turns", help="Tool calls per episode.")
JudgeOpt = typer.Option("match", "--judge", help="match (normalized match) or openai:MODEL (an LLM judge).")
JudgeUrlOpt = typer.Option(None, "--judge-base-url", help="OpenAI-compatible endpoint of the judge model.")

OUTCOMES = ("correct", "abstained", "wrong", "no_answer")


def _make_env(synthetic_seed: int, db: Path | None, questions: Path | None, max_turns: int, judge: str,
              judge_base_url: str | None, api_key_env: str) -> InboxEnv:
    try:
        return InboxEnv(seed=synthetic_seed, db=None if db is None else str(db),
                        questions=None if questions is None else str(questions), max_turns=max_turns, judge=judge,
                        judge_base_url=judge_base_url, judge_api_key_env=api_key_env)
    except (ValueError, FileNotFoundError, StoreError) as exc:
        usage_error(" ".join(str(exc).split()))


def _policy(spec: str, llm: LLMOptions) -> Policy:
    try:
        return resolve_policies(spec, InboxEnv.roles, baselines, llm)["assistant"]
    except ValueError as exc:
        usage_error(str(exc))




def outcome(episode: Episode) -> str:
    """correct, abstained ("I don't know" to an answerable question), wrong, or no_answer."""
    answers = episode.events_named("answered")
    return str(answers[0].data["verdict"]) if answers else "no_answer"


def summarize(spec: str, episodes: Sequence[Episode]) -> dict[str, Any]:
    """One table row: the policy, its model, mean reward, outcome rates, turns and source precision."""
    info = episodes[0].policies["assistant"]
    outcomes = [outcome(e) for e in episodes]
    row: dict[str, Any] = {"policy": spec, "model": policy_label(info), "episodes": len(episodes),
                           "reward": statistics.fmean(e.score.total for e in episodes if e.score)}
    for name in OUTCOMES:
        row[name] = outcomes.count(name) / len(episodes)
    correct = [e for e, o in zip(episodes, outcomes) if o == "correct"]
    row["sources"] = statistics.fmean(e.score.components["sources"] for e in correct if e.score) if correct else 0.0
    row["turns"] = statistics.fmean(len(e.turns) for e in episodes)
    row["format_errors"] = statistics.fmean(e.count("invalid_action") for e in episodes)
    return row


def evaluate(
    policy: list[str] = typer.Option(["random", "heuristic", "oracle"], "--policy",
                                     help="Policy to evaluate (repeatable): random, heuristic, oracle, llm, "
                                          "openai:MODEL, lora:PATH, vllm:MODEL."),
    split: str = typer.Option("test", "--split", help="Question split: test (held out) or train."),
    limit: int | None = typer.Option(None, "--limit", help="Evaluate only the first N questions of the split."),
    seeds: int = typer.Option(1, "--seeds", help="Seeds per question (0..N-1); they matter for random and sampling."),
    synthetic_seed: int = SeedOpt,
    db: Path | None = DbOpt,
    questions: Path | None = QuestionsOpt,
    max_turns: int = TurnsOpt,
    judge: str = JudgeOpt,
    judge_base_url: str | None = JudgeUrlOpt,
    out: Path = typer.Option(Path("reports/inbox"), "--out", help="Report folder."),
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
    """Evaluate policies on inbox QA: a table per policy, results.json and a chart of reward per question kind."""
    if split not in ("train", "test"):
        usage_error(f"unknown --split {split!r}; choose train or test")
    if limit is not None and limit < 1:
        usage_error(f"--limit must be at least 1, got {limit}")
    if seeds < 1:
        usage_error(f"--seeds must be at least 1, got {seeds}")
    if max_turns < 1:
        usage_error(f"--max-turns must be at least 1, got {max_turns}")
    env = _make_env(synthetic_seed, db, questions, max_turns, judge, judge_base_url, api_key_env)
    scorer = rubric(max_turns)
    llm = llm_options(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                      temperature=temperature, react=react, tool_listing=tool_listing, prefill=prefill,
                      demos=demos, make_env=lambda: InboxEnv(**env.options), oracle=baselines["oracle"])
    policies = {spec: _policy(spec, llm) for spec in dict.fromkeys(policy)}
    tasks = env.tasks(split)[:limit]
    if not tasks:
        usage_error(f"the {split} split has no questions")
    jobs = [(task, seed) for task in tasks for seed in range(seeds)]

    episodes_by_policy: dict[str, list[Episode]] = {}
    with progress_bar() as progress:
        bar = progress.add_task("inbox", total=len(jobs) * len(policies))
        for spec, chosen in policies.items():
            progress.update(bar, description=f"inbox · {spec}")
            played: list[Episode] = []
            for start in range(0, len(jobs), _BATCH):
                played += run_episodes(lambda: InboxEnv(**env.options), jobs[start:start + _BATCH], chosen, scorer,
                                       on_episode_done=lambda _: progress.advance(bar))
            episodes_by_policy[spec] = played

    rows = [summarize(spec, eps) for spec, eps in episodes_by_policy.items()]
    columns = ["policy", *(["model"] if any(r["model"] != "—" for r in rows) else []), "episodes", "reward",
               *OUTCOMES, "sources", "turns", "format_errors"]
    percent = {name: (lambda v: f"{v:.0%}") for name in OUTCOMES}
    plural = "s" if seeds > 1 else ""
    title = f"inbox · {split} split · {len(tasks)} questions x {seeds} seed{plural} · judge {judge}"
    table = summary_table(title, rows, columns, {"episodes": str, "turns": lambda v: f"{v:.1f}", **percent})
    (console if console.is_terminal else Console(width=160)).print(table)
    by_id = {t.id: t for t in tasks}
    kinds = sorted({_kind(t) for t in tasks})
    chart_rows = []
    for spec, eps in episodes_by_policy.items():
        for kind in kinds:
            scores = [e.score.total for e in eps if e.score and _kind(by_id[e.task_id]) == kind]
            chart_rows.append({"kind": kind, "policy": spec, "reward": statistics.fmean(scores) if scores else 0.0})
    meta = {"env": "inbox", "options": env.options, "split": split, "tasks": len(tasks), "seeds": seeds,
            "policies": list(policies), "weights": scorer.weights, "by_kind": chart_rows,
            "command": " ".join(["drill", *sys.argv[1:]]),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    write_results(out / "results.json", meta, rows, [e for eps in episodes_by_policy.values() for e in eps])
    grouped_bar_chart(out / "inbox_by_kind.png", chart_rows, group="kind", series="policy", value="reward",
                      title="inbox QA: mean reward per question kind", ylabel="mean reward")
    console.print(f"wrote {out / 'results.json'} and {out / 'inbox_by_kind.png'}")


def _kind(task: object) -> str:
    assert isinstance(task, InboxQuestion)
    return "no answer" if task.answer is None else task.kind


def watch(
    task: str | None = typer.Option(None, "--task", help="Question id, e.g. q00042; default the first test question."),
    policy: str = typer.Option("heuristic", "--policy",
                               help="random, heuristic, oracle, llm, openai:MODEL, lora:PATH."),
    seed: int = typer.Option(0, "--seed", help="Episode seed."),
    synthetic_seed: int = SeedOpt,
    db: Path | None = DbOpt,
    questions: Path | None = QuestionsOpt,
    max_turns: int = TurnsOpt,
    judge: str = JudgeOpt,
    judge_base_url: str | None = JudgeUrlOpt,
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
    """Watch one inbox episode: what the agent saw, the raw model output, its action, events and the score."""
    if max_turns < 1:
        usage_error(f"--max-turns must be at least 1, got {max_turns}")
    env = _make_env(synthetic_seed, db, questions, max_turns, judge, judge_base_url, api_key_env)
    llm = llm_options(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                      temperature=temperature, react=react, tool_listing=tool_listing, prefill=prefill,
                      demos=demos, make_env=lambda: InboxEnv(**env.options), oracle=baselines["oracle"], seed=seed)
    chosen = _policy(policy, llm)
    try:
        picked = env.task(task) if task else env.tasks("test")[0]
    except KeyError:
        usage_error(f"unknown --task {task!r}; ids look like q00042 (see the questions JSONL)")
    assert isinstance(picked, InboxQuestion)
    episode = run_episodes(lambda: InboxEnv(**env.options), [(picked, seed)], chosen, rubric(max_turns))[0]
    console.rule(f"inbox · {picked.id} ({picked.split}) · seed {seed} · {policy}")
    for turn in episode.turns:
        console.print(Panel(Text(turn.observation.content), title=f"turn {turn.index + 1}: the agent sees",
                            title_align="left", border_style="cyan"))
        if turn.observation.error:
            console.print(f"[red]error shown to the agent:[/] {turn.observation.error}", highlight=False)
        if turn.action.raw is not None:
            console.print(Panel(Text(turn.action.raw), title="raw model output", title_align="left",
                                border_style="magenta"))
        if turn.action.parse_error is not None:
            console.print(f"[red]unparseable:[/] {turn.action.parse_error}")
        else:
            args = json.dumps(turn.action.arguments, ensure_ascii=False)
            console.print(f"[bold]action[/] {turn.action.tool}({args})", highlight=False, soft_wrap=True)
        for event in turn.events:
            console.print(f"  [yellow]event[/] {event.name} {json.dumps(event.data, ensure_ascii=False)}",
                          highlight=False, soft_wrap=True)
    score = episode.score
    assert score is not None
    gold = picked.answer if picked.answer is not None else "I don't know (the inbox has no answer)"
    table = Table(title=f"score · gold answer: {gold} · sources: {', '.join(picked.sources) or 'none'}")
    for column in ("component", "value", "weight", "contribution"):
        table.add_column(column, justify="left" if column == "component" else "right")
    for name, value in score.components.items():
        table.add_row(name, f"{value:.3f}", f"{score.weights[name]:.2f}", f"{score.contribution(name):.3f}")
    table.add_row("[bold]total", "", "", f"[bold]{score.total:.3f}")
    console.print(table)


# -- drill inbox ... -----------------------------------------------------------------------------------


@inbox_app.command("ingest")
def ingest_command(
    path: Path = typer.Argument(..., help="A maildir tree (e.g. Enron's maildir/allen-p), an mbox file, "
                                          "or a folder of either."),
    db: Path = typer.Option(Path("inbox.db"), "--db", help="The mail store to create or add to."),
    user: str | None = typer.Option(None, "--user", help="Whose inbox this is (an address); default: the folder "
                                                        "or file name."),
    split_users: bool = typer.Option(False, "--split-users", help="Each top-level folder of PATH is one user's inbox "
                                     "(Enron's maildir/ root)."),
) -> None:
    """Ingest maildir or mbox mail into a SQLite FTS5 mail store; running it again adds nothing."""
    from drill.envs.inbox.ingest import IngestReport, ingest
    from drill.envs.inbox.store import MailStore

    if not path.exists():
        usage_error(f"nothing to ingest at {path}")
    if split_users and (user is not None or not path.is_dir()):
        usage_error("--split-users takes a folder of user folders and no --user")
    targets = ([(d, d.name) for d in sorted(path.iterdir()) if d.is_dir() and not d.name.startswith(".")]
               if split_users else [(path, user or path.stem)])
    try:
        store = MailStore(db)
    except StoreError as exc:
        fatal(str(exc))
    total = IngestReport()
    with progress_bar() as progress:
        for folder, owner in targets:
            report = ingest(folder, store, owner, progress)
            total.added += report.added
            total.duplicates += report.duplicates
            total.skipped += report.skipped
    for source, reason in total.skipped[:20]:
        console.print(f"[yellow]skipped[/] {source}: {reason}", highlight=False, soft_wrap=True)
    if len(total.skipped) > 20:
        console.print(f"[yellow]... and {len(total.skipped) - 20} more skipped[/]")
    console.print(f"{db}: {total.summary()}", highlight=False, soft_wrap=True)


@inbox_app.command("build-synthetic")
def build_synthetic(
    seed: int = typer.Option(0, "--seed", help="Seed of the generated company inbox."),
    messages: int = typer.Option(DEFAULT_MESSAGES, "--messages", help="About how many messages to generate."),
    out: Path | None = typer.Option(None, "--out", help="Folder for the .db and questions JSONL; default the cache."),
    mbox: Path | None = typer.Option(None, "--mbox", help="Also write the mail as an mbox file here."),
) -> None:
    """Generate the synthetic Kestrel Dynamics inbox and its questions (deterministic from --seed)."""
    from drill.envs.inbox.synthetic import build, cache_dir, generate, write_mbox

    if messages < 1000:
        usage_error(f"--messages must be at least 1000 (the planted facts alone take several hundred), got {messages}")
    db_path, questions_path = build(out or cache_dir() / "inbox", seed, messages)
    console.print(f"wrote {db_path} and {questions_path}")
    if mbox is not None:
        inbox = generate(seed, messages)
        write_mbox(inbox.mails, mbox)
        console.print(f"wrote {len(inbox.mails)} messages to {mbox}")


@inbox_app.command("generate-questions")
def generate_questions(
    db: Path = typer.Option(..., "--db", help="The mail store."),
    user: str = typer.Option(..., "--user", help="The inbox to write questions about."),
    base_url: str = typer.Option(..., "--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1."),
    model: str = typer.Option(..., "--model", help="The model that writes the questions."),
    api_key_env: str = KeyEnvOpt,
    out: Path = typer.Option(Path("questions.jsonl"), "--out", help="Where to write the questions JSONL."),
    batches: int = typer.Option(20, "--batches", help="How many batches of emails to show the model."),
    batch_size: int = typer.Option(20, "--batch-size", help="Emails per batch."),
    per_batch: int = typer.Option(5, "--per-batch", help="Questions to ask for per batch."),
    seed: int = typer.Option(0, "--seed", help="Picks the batches."),
) -> None:
    """Write question / answer / source triples for a real inbox with an LLM, keeping only those that check out."""
    from drill.envs.inbox.question_writer import QuestionWriter
    from drill.envs.inbox.store import MailStore

    if batches < 1:
        usage_error(f"--batches must be at least 1, got {batches}")
    try:
        writer = QuestionWriter(MailStore(db, read_only=True), user, base_url, model, api_key_env, batch_size,
                                per_batch)
    except (ValueError, StoreError) as exc:
        usage_error(str(exc))
    with progress_bar() as progress:
        report = writer.write(out, batches, seed, progress)
    console.print(f"{out}: {report.summary()}", highlight=False, soft_wrap=True)


@inbox_app.command("search")
def search_command(
    keywords: str = typer.Argument(..., help="Words that must all appear."),
    db: Path = typer.Option(Path("inbox.db"), "--db", help="The mail store."),
    user: str | None = typer.Option(None, "--user", help="The inbox; default the store's only inbox."),
    before: str | None = typer.Option(None, "--visible-until",
                                      help="Hide mail after this UTC time (YYYY-MM-DD HH:MM:SS)."),
    limit: int = typer.Option(10, "--limit", help="How many results."),
) -> None:
    """Search a mail store the way the agent's search_emails tool does."""
    from drill.envs.inbox.store import MailStore

    try:
        store = MailStore(db, read_only=True)
    except StoreError as exc:
        usage_error(str(exc))
    inboxes = store.inboxes()
    if user is None and len(inboxes) != 1:
        usage_error(f"{db} holds {len(inboxes)} inboxes; pick one with --user ({', '.join(inboxes[:5])})")
    chosen = user or inboxes[0]
    if chosen not in inboxes:
        usage_error(f"no inbox {chosen!r} in {db}")
    for hit in store.search(chosen, keywords, visible_until=before, max_results=limit):
        line = Text.assemble((hit.message_id, "bold"), f" {hit.date} {hit.sender}\n  {hit.subject}\n  {hit.snippet}")
        console.print(line, highlight=False, soft_wrap=True)
