"""The synthetic company inbox: a year of one person's mail at a fictional company, with planted facts.

`generate(seed)` writes the inbox of Dana Whitfield, VP of Operations at Kestrel Dynamics (a logistics
software company of about 40 people, see `data/company.json`): quarterly business reviews with customers,
travel requests and itineraries, signed deals, purchase approvals and purchase orders, new hires, monthly
project status reports whose launch dates slip, team offsites, forwarded chains, newsletters, automated
notifications and everyday chatter. Every planted fact (a date, a place, an amount, a name, a code) keeps
the ids of the messages that state it, and questions are written from those facts:

* each question is asked at a moment (`asked_at`); the answer is the latest statement of the fact visible
  then, so a launch date that slipped in June has a different answer in May and in July;
* some questions have no answer in the inbox, and the right reply is "I don't know": asked before the fact
  was ever mailed, about a trip whose hotel was never booked, or about a customer, project or person that
  does not exist at the company.

The same seed gives the same inbox and questions, byte for byte, in any process (only `random.Random(seed)`
drives it; no set or dict iteration depends on string hashing). `build(out_dir, seed)` stores it as a
`MailStore` file plus a questions JSONL; `synthetic_inbox(seed)` builds it once into the cache folder
(`$DRILL_CACHE` or `~/.cache/drill`) and reuses it.

The records and the writer's helpers are in `company.py`, the threads that plant facts in `stories.py`; this
module assembles the inbox, writes the questions and stores both.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from drill.cache import cache_dir
from drill.envs.inbox.company import Fact, Mail, Person
from drill.envs.inbox.questions import InboxQuestion, validation_or_train, write_questions
from drill.envs.inbox.store import MailStore
from drill.envs.inbox.stories import StoryWriter

__all__ = ["DEFAULT_MESSAGES", "GENERATOR_VERSION", "Mail", "Person", "SyntheticInbox", "build", "cache_dir",
           "generate", "synthetic_inbox", "write_mbox"]

GENERATOR_VERSION = 2
"""Bump when the generated inbox changes, so cached builds are not reused."""
DEFAULT_MESSAGES = 6000


@dataclass
class SyntheticInbox:
    user: str
    mails: list[Mail]
    questions: list[InboxQuestion]

def _asked_at(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S")


def _write_questions(writer: StoryWriter) -> list[InboxQuestion]:
    rng, user = writer.rng, writer.owner.address
    year_end = datetime(writer.year, 12, 31, 23, 0, tzinfo=UTC)
    drafts: list[tuple[str, str, datetime, Fact | None, list[Fact]]] = []
    for question, statements in writer.facts.items():
        statements.sort(key=lambda f: f.stated_at)
        first = statements[0].stated_at
        if rng.random() < 0.08:  # asked before the inbox held the answer
            drafts.append((question, statements[0].kind, first - timedelta(hours=rng.randint(2, 480)), None, []))
        periods: list[Fact] = []  # the statements at which the answer changed
        for statement in statements:
            if not periods or periods[-1].answer != statement.answer:
                periods.append(statement)
        chosen = periods if len(periods) > 1 else [rng.choice(statements)]
        for statement in chosen:
            later = [p.stated_at for p in periods if p.stated_at > statement.stated_at]
            latest = min([*later, statement.stated_at + timedelta(days=45), year_end])
            span = max(1, int((latest - statement.stated_at).total_seconds() // 3600) - 1)
            asked = statement.stated_at + timedelta(hours=rng.randint(1, span))
            visible = [s for s in statements if s.stated_at <= asked]
            current = visible[-1]
            drafts.append((question, current.kind, asked, current, [s for s in visible if s.answer == current.answer]))
    for question, kind, known in writer.never_stated:
        drafts.append((question, kind, known + timedelta(hours=rng.randint(2, 900)), None, []))
    quarters = ["Q1", "Q2", "Q3", "Q4"]
    products = writer.data["company"]["products"]
    cities = [c["name"] for c in writer.data["cities"]]
    made: set[str] = set()
    while len(made) < 80:  # about things that do not exist at the company
        customer, project = rng.choice(writer.reserved_customers), rng.choice(writer.reserved_projects)
        person = rng.choice(writer.reserved_people)
        question, kind = rng.choice([
            (f"When is the {rng.choice(quarters)} QBR with {customer}?", "date"),
            (f"How much is the {customer} {rng.choice(products)} agreement worth?", "amount"),
            (f"What is the planned launch date for Project {project}?", "date"),
            (f"What is the approved budget for Project {project}?", "amount"),
            (f"Which hotel is {person.name} staying at in {rng.choice(cities)}?", "place"),
            (f"Who will {person.name} report to?", "name"),
        ])
        if question in made:
            continue
        made.add(question)
        drafts.append((question, kind, datetime(writer.year, 1, 15, tzinfo=UTC) + timedelta(hours=rng.randint(0, 8400)),
                       None, []))
    questions: list[InboxQuestion] = []
    split_of: dict[str, str] = {}
    for index, (question, kind, asked, current, statements) in enumerate(drafts):
        split = split_of.setdefault(question, "test" if rng.random() < 0.25 else validation_or_train(question))
        sources = tuple(dict.fromkeys(m.message_id for s in statements for m in s.sources if m.date <= asked))
        questions.append(InboxQuestion(
            id=f"q{index + 1:05d}", split=split, inbox=user, question=question, asked_at=_asked_at(asked),
            answer=current.answer if current else None, aliases=current.aliases if current else (),
            sources=sources, kind=kind,
        ))
    return questions


def generate(seed: int = 0, messages: int = DEFAULT_MESSAGES) -> SyntheticInbox:
    """The synthetic inbox and its questions for `seed`, with about `messages` messages (at least the planted ones)."""
    writer = StoryWriter(seed, messages)
    writer.qbrs()
    writer.trips(130)
    writer.deals()
    writer.purchases(24)
    writer.hires(22)
    writer.projects_threads()
    writer.offsites()
    newsletter_share = max(0, (messages - len(writer.mails)) // 4)
    writer.newsletters(newsletter_share)
    writer.chatter(budget=10 * messages)
    questions = _write_questions(writer)
    owner, everyone = writer.owner, writer.everyone
    mails = sorted((m for m in writer.mails if m.sender == owner or owner in m.to or owner in m.cc
                    or everyone in m.to or everyone in m.cc), key=lambda m: (m.date, m.message_id))
    return SyntheticInbox(user=owner.address, mails=mails, questions=questions)


# -- building and caching ------------------------------------------------------------------------------


def build(out_dir: Path, seed: int = 0, messages: int = DEFAULT_MESSAGES) -> tuple[Path, Path]:
    """Generate the inbox and write `<name>.db` and `<name>.questions.jsonl` into `out_dir`, atomically.

    Both files are written under temporary names and renamed into place, questions first, so a reader that
    finds the database also finds its questions.
    """
    name = f"synthetic-v{GENERATOR_VERSION}-seed{seed}-n{messages}"
    db_path, questions_path = out_dir / f"{name}.db", out_dir / f"{name}.questions.jsonl"
    inbox = generate(seed, messages)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_questions(questions_path, inbox.questions)
    handle, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".db.tmp")
    os.close(handle)
    tmp_path = Path(tmp)
    tmp_path.unlink()
    try:
        store = MailStore(tmp_path)
        records = [m.record() for m in inbox.mails]
        for start in range(0, len(records), 2000):
            store.add(inbox.user, records[start:start + 2000])
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        os.replace(tmp_path, db_path)
    finally:
        for leftover in (tmp_path, Path(f"{tmp_path}-wal"), Path(f"{tmp_path}-shm")):
            leftover.unlink(missing_ok=True)
    return db_path, questions_path


def synthetic_inbox(seed: int = 0, messages: int = DEFAULT_MESSAGES,
                    cache: str | Path | None = None) -> tuple[Path, Path]:
    """The cached database and questions of the synthetic inbox, built on first use."""
    out_dir = cache_dir(cache) / "inbox"
    name = f"synthetic-v{GENERATOR_VERSION}-seed{seed}-n{messages}"
    db_path, questions_path = out_dir / f"{name}.db", out_dir / f"{name}.questions.jsonl"
    if db_path.is_file() and questions_path.is_file():
        return db_path, questions_path
    return build(out_dir, seed, messages)


def write_mbox(mails: list[Mail], path: Path) -> None:
    """Write messages as an mbox file (for ingestion tests and benchmarks), atomically."""
    import mailbox

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    box = mailbox.mbox(tmp)
    box.lock()
    try:
        for mail in mails:
            box.add(mail.rfc822())
        box.flush()
    finally:
        box.unlock()
        box.close()
    os.replace(tmp, path)
