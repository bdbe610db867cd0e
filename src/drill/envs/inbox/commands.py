"""`drill inbox ...`: the inbox's own commands (ingest, build-synthetic, generate-questions, search).
`drill eval inbox` and `drill watch inbox` are the generic ones, built from the inbox's `EnvSpec`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from drill.console import console, fatal, usage_error
from drill.envs.inbox.store import StoreError
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
    from drill.envs.inbox.store import MailStore

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
