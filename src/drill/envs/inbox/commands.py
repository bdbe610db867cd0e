"""`drill inbox ...`: the inbox's own commands (ingest, build-synthetic, generate-questions, search).
`drill eval inbox` and `drill watch inbox` are the generic ones, built from the inbox's `EnvSpec`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from drill.console import console, fatal, usage_error
from drill.envs.inbox.question_writer import BATCH_SIZE, BATCHES, PER_BATCH, QuestionWriter
from drill.envs.inbox.rule_questions import DEFAULT_COUNT
from drill.envs.inbox.store import MailStore, StoreError
from drill.envs.inbox.synthetic import DEFAULT_MESSAGES
from drill.evaluate.report import progress_bar

inbox_app = typer.Typer(no_args_is_help=True, help="Mail stores and questions for the inbox environment.")
KeyEnvOpt = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key.")


@inbox_app.command("ingest")
def ingest_command(
    path: Path = typer.Argument(..., help="A maildir tree (e.g. Enron's maildir/allen-p), an mbox file, "
                                          "or a folder of either."),
    db: Path = typer.Option(Path("inbox.db"), "--db", help="The mail store to create or add to."),
    user: str | None = typer.Option(None, "--user", help="Whose inbox this is (an address); default: the folder "
                                                        "or file name."),
    split_users: bool = typer.Option(False, "--split-users", help="Each top-level folder (or mbox file) of PATH is "
                                     "one user's inbox (Enron's maildir/ root)."),
    verbose: bool = typer.Option(False, "--verbose", help="List every skipped file and folder, every message stored "
                                 "under a derived id and every duplicate (default: the first 20 of the first two, and "
                                 "the counts)."),
) -> None:
    """Ingest maildir or mbox mail into a SQLite FTS5 mail store; running it again adds nothing. Every message file
    is stored, counted as a duplicate, or reported as skipped with its reason."""
    from drill.envs.inbox.ingest import IngestReport, ingest, user_sources

    if not path.exists():
        usage_error(f"nothing to ingest at {path}")
    if split_users and (user is not None or not path.is_dir()):
        usage_error("--split-users takes a folder of user folders and no --user")
    targets = user_sources(path) if split_users else [(path, user or path.resolve().stem)]
    try:
        store = MailStore(db)
    except StoreError as exc:
        fatal(str(exc))
    total = IngestReport()
    with progress_bar() as progress:
        for folder, owner in targets:
            total.merge(ingest(folder, store, owner, progress))
    for line in total.details(verbose):
        console.print(Text(line, style="yellow"), soft_wrap=True)
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
    db: Path = typer.Option(..., "--db", help="The mail store (from `drill inbox ingest`)."),
    user: str | None = typer.Option(None, "--user", help="The inbox to write questions about; default the store's "
                                                        "only inbox."),
    out: Path = typer.Option(Path("questions.jsonl"), "--out", help="Where to write the questions JSONL."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
    seed: int = typer.Option(0, "--seed", help="Picks the messages (rules) or the batches (openai)."),
    generator: str = typer.Option("rules", "--generator",
                                  help="rules: questions read from the mail by rules (who sent, when, which amount; "
                                       "no model needed); openai: written by a model at --base-url."),
    count: int | None = typer.Option(None, "--count", help=f"How many questions (rules; default {DEFAULT_COUNT})."),
    base_url: str | None = typer.Option(None, "--base-url",
                                        help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (openai)."),
    model: str | None = typer.Option(None, "--model", help="The model that writes the questions (openai)."),
    api_key_env: str = KeyEnvOpt,
    batches: int | None = typer.Option(None, "--batches",
                                       help=f"Batches of emails to show the model (openai; default {BATCHES})."),
    batch_size: int | None = typer.Option(None, "--batch-size",
                                          help=f"Emails per batch (openai; default {BATCH_SIZE})."),
    per_batch: int | None = typer.Option(None, "--per-batch",
                                         help=f"Questions to ask for per batch (openai; default {PER_BATCH})."),
) -> None:
    """Write questions with checked answers and source ids for an inbox of a mail store: by rules from the mail
    (the default; deterministic from --seed), or with a model behind an OpenAI-compatible server."""
    if generator not in ("rules", "openai"):
        usage_error(f"unknown --generator {generator!r}; use rules or openai")
    model_options = {"--base-url": base_url, "--model": model, "--batches": batches, "--batch-size": batch_size,
                     "--per-batch": per_batch}
    given = [name for name, value in model_options.items() if value is not None]
    if generator == "rules" and given:
        usage_error(f"{', '.join(given)}: for --generator openai (a model server); the rules need no model")
    if generator == "openai" and (base_url is None or model is None):
        usage_error("--generator openai needs --base-url and --model")
    if generator == "openai" and count is not None:
        usage_error("--count is for --generator rules; a model's count is --batches × --per-batch at most")
    if out.is_dir():
        usage_error(f"--out {out} is a folder; give a file name")
    if out.exists() and not force:
        usage_error(f"{out} exists; pass --force to overwrite it, or choose another --out")
    try:
        store = MailStore(db, read_only=True)
    except StoreError as exc:
        usage_error(str(exc))
    inbox = _inbox(store, db, user)
    if generator == "rules":
        _write_rule_questions(store, inbox, out, count if count is not None else DEFAULT_COUNT, seed)
        return
    assert base_url is not None and model is not None
    batches = BATCHES if batches is None else batches
    if batches < 1:
        usage_error(f"--batches must be at least 1, got {batches}")
    try:
        writer = QuestionWriter(store, inbox, base_url, model, api_key_env,
                                BATCH_SIZE if batch_size is None else batch_size,
                                PER_BATCH if per_batch is None else per_batch)
    except ValueError as exc:
        usage_error(str(exc))
    with progress_bar() as progress:
        report = writer.write(out, batches, seed, progress)
    console.print(f"{out}: {report.summary()}", highlight=False, soft_wrap=True)


def _write_rule_questions(store: MailStore, inbox: str, out: Path, count: int, seed: int) -> None:
    from drill.envs.inbox.questions import write_questions
    from drill.envs.inbox.rule_questions import generate_rule_questions

    if count < 1:
        usage_error(f"--count must be at least 1, got {count}")
    questions, report = generate_rule_questions(store, inbox, count, seed)
    if not questions:
        fatal(f"no questions for {inbox!r}: {report.summary()}")
    write_questions(out, questions)
    short = f" (asked for {count})" if report.written < count else ""
    console.print(f"{out}: {report.summary()}{short}", highlight=False, soft_wrap=True)


def _inbox(store: MailStore, db: Path, user: str | None) -> str:
    """`user`, checked to be an inbox of the store, or the store's only inbox; a usage error otherwise."""
    inboxes = store.inboxes()
    if user is None and len(inboxes) != 1:
        usage_error(f"{db} holds {len(inboxes)} inboxes; pick one with --user ({', '.join(inboxes[:5])})")
    chosen = user or inboxes[0]
    if chosen not in inboxes:
        usage_error(f"no inbox {chosen!r} in {db}; inboxes: {', '.join(inboxes[:10]) or 'none'}")
    return chosen


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

    try:
        store = MailStore(db, read_only=True)
    except StoreError as exc:
        usage_error(str(exc))
    chosen = _inbox(store, db, user)
    for hit in store.search(chosen, keywords, visible_until=before, max_results=limit):
        line = Text.assemble((hit.message_id, "bold"), f" {hit.date} {hit.sender}\n  {hit.subject}\n  {hit.snippet}")
        console.print(line, highlight=False, soft_wrap=True)
