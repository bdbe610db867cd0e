"""The mail store: one SQLite file holding one or more inboxes, with an FTS5 index over subject and body.

Each inbox belongs to one user (an address such as `dana.whitfield@kestrel.example`, or an Enron folder name
such as `allen-p`). The same message may sit in several inboxes (sender's sent folder and recipient's inbox),
so messages are keyed by (inbox, message_id). A message that reuses a stored Message-ID with other content is
stored under an id derived from its content (`variant_id`); one with the same content is a duplicate.

Schema:

* `inboxes(user)` — one row per inbox.
* `messages(id, inbox, message_id, subject, sender, sender_name, date, body, attachments, source_hash)` —
  `date` is UTC text `YYYY-MM-DD HH:MM:SS`, or NULL when the message had no parseable Date header.
  Undated mail is never returned by a time-limited search or read (its place in time cannot be checked)
  and never matches `sent_after` / `sent_before`.
* `recipients(message_key, address, name, kind)` — kind is `to`, `cc` or `bcc`; `message_key` is `messages.id`.
* `messages_fts` — FTS5 over subject and body, external content (`content='messages'`), kept in step by
  triggers, so the index and the table change in the same transaction.
* `people_fts(sender, recipients)` — FTS5 over the sender's and the recipients' names and addresses (with
  Enron's `X-From`/`X-To`/`X-cc` names), NFKC-normalized and case-folded, rowid = `messages.id`: the
  `from_addr` / `to_addr` filters (see `query.PeopleFilter`).
* Indexes on (inbox, sender), (inbox, date), (inbox, source_hash) and recipients(address).

Every `add` is one transaction, so a crash leaves whole batches or nothing. The file is kept in SQLite's
rollback-journal mode (not WAL), so a user who may only read it can open it: a WAL database needs its
`-shm` file created even to be read. Opening a schema-1 store for writing upgrades it in place (one
transaction: the people index is built from the stored messages).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import unicodedata
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from drill.envs.inbox.query import MAX_QUERY_TERMS, PeopleFilter, SnippetMaker, clean_text, fts_query, people_text

__all__ = ["MAX_QUERY_TERMS", "MailRecord", "MailStore", "Recipient", "SearchHit", "StoreError", "StoredMessage",
           "content_key", "fts_query", "variant_id"]

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inboxes(user TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS messages(
    id INTEGER PRIMARY KEY,
    inbox TEXT NOT NULL REFERENCES inboxes(user),
    message_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    sender TEXT NOT NULL,
    sender_name TEXT NOT NULL,
    date TEXT,
    body TEXT NOT NULL,
    attachments TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    UNIQUE(inbox, message_id)
);
CREATE TABLE IF NOT EXISTS recipients(
    message_key INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    address TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK(kind IN ('to', 'cc', 'bcc'))
);
CREATE INDEX IF NOT EXISTS messages_by_sender ON messages(inbox, sender);
CREATE INDEX IF NOT EXISTS messages_by_date ON messages(inbox, date);
CREATE INDEX IF NOT EXISTS messages_by_source ON messages(inbox, source_hash);
CREATE INDEX IF NOT EXISTS recipients_by_address ON recipients(address);
CREATE INDEX IF NOT EXISTS recipients_by_message ON recipients(message_key);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    subject, body, content='messages', content_rowid='id', tokenize='porter unicode61'
);
CREATE VIRTUAL TABLE IF NOT EXISTS people_fts USING fts5(
    sender, recipients, tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS people_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM people_fts WHERE rowid = old.id;
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, subject, body) VALUES (new.id, new.subject, new.body);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, subject, body) VALUES ('delete', old.id, old.subject, old.body);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, subject, body) VALUES ('delete', old.id, old.subject, old.body);
    INSERT INTO messages_fts(rowid, subject, body) VALUES (new.id, new.subject, new.body);
END;
"""

_UPGRADE_FROM_1 = """
INSERT INTO people_fts(rowid, sender, recipients)
SELECT m.id, drill_people_text(m.sender_name || ' ' || m.sender),
       drill_people_text(coalesce((SELECT group_concat(r.name || ' ' || r.address, ' ')
                                   FROM recipients r WHERE r.message_key = m.id), ''))
FROM messages m;
"""

BUSY_SECONDS = 30
"""How long opening a store for writing waits for another process's lock before saying so."""


class StoreError(RuntimeError):
    """The store cannot be opened or used (missing FTS5, a file that is not a Drill mail store, ...)."""


@dataclass(frozen=True)
class Recipient:
    address: str
    name: str
    kind: str  # "to" | "cc" | "bcc"


@dataclass(frozen=True)
class MailRecord:
    """One message ready to store. `message_id` has no angle brackets; `date` is UTC text or None."""

    message_id: str
    subject: str
    sender: str
    sender_name: str
    date: str | None
    body: str
    recipients: tuple[Recipient, ...]
    attachments: tuple[str, ...]
    source_hash: str
    sender_aliases: tuple[str, ...] = ()
    """Other names of the sender that filters should match (Enron's `X-From`); not displayed."""
    recipient_aliases: tuple[str, ...] = ()
    """Other names of the recipients (Enron's `X-To` / `X-cc` / `X-bcc`); not displayed."""


@dataclass(frozen=True)
class StoredMessage:
    message_id: str
    subject: str
    sender: str
    sender_name: str
    date: str | None
    body: str
    recipients: tuple[Recipient, ...]
    attachments: tuple[str, ...]


@dataclass(frozen=True)
class SearchHit:
    message_id: str
    date: str
    sender: str
    subject: str
    snippet: str


def _folded_words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", plain)


def _spells(name: str, address: str) -> bool:
    """The display name's words are the address's local part ("Delia Grünwald" <delia.grunwald@...>)."""
    words = _folded_words(name)
    return len(words) >= 2 and words == _folded_words(address.split("@", 1)[0])


def normalize_message_id(text: str) -> str:
    """Message ids are stored without angle brackets or surrounding whitespace; agents may send either."""
    return clean_text(text).strip().strip("<>").strip()


def content_key(subject: str, body: str, attachments: str) -> str:
    """What makes two messages with one Message-ID the same message: the same subject, body and attachment
    names, with every run of whitespace read as one space (a re-wrapped or re-encoded copy is the same mail;
    Received, Delivered-To and the other transport headers are never compared)."""
    text = "\x00".join(" ".join(field.split()) for field in (subject, body, attachments))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def variant_id(message_id: str, key: str, length: int) -> str:
    """The id a message is stored under when its Message-ID is taken by another message: `id#` and the first
    `length` hex digits of its `content_key`."""
    return f"{message_id}#{key[:length]}"


def _check_fts5(conn: sqlite3.Connection | None = None) -> None:
    """Raise StoreError if this Python's SQLite has no FTS5. Probed on a private in-memory database, so a
    store file that cannot be written (or read) is never mistaken for a missing FTS5."""
    conn = conn or sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.drill_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.drill_fts5_probe")
    except sqlite3.OperationalError as exc:
        raise StoreError(
            f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 full-text search ({exc}); "
            "the inbox store needs it. Use a Python build whose sqlite3 is compiled with FTS5 (python.org, "
            "Debian/Ubuntu and conda builds all are)."
        ) from exc


def _is_wal(path: Path) -> bool:
    """Whether the database file's header says WAL mode (bytes 18 and 19 are 2)."""
    try:
        with path.open("rb") as handle:
            header = handle.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2 and header[19] == 2


class MailStore:
    """A mail store file. Open with `MailStore(path)` to write (created if missing) or `read_only=True`.

    A read-only open creates no file next to the store, so it works for a user who may only read it.
    A schema-1 store is upgraded when opened for writing, and also on a read-only open if this user may
    write it; otherwise the error says how to upgrade it.
    """

    def __init__(self, path: Path | str, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        _check_fts5()
        if read_only:
            self.conn = self._open_read_only()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_SECONDS)
            self._prepare_for_writing()
        self.conn.execute("PRAGMA foreign_keys = ON")
        self._check_schema()
        self._snippets = SnippetMaker()

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise StoreError(f"no mail store at {self.path}")
        uri = "file:" + urllib.parse.quote(str(self.path.resolve()))
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        try:
            version = self._schema_version(conn)
        except sqlite3.OperationalError as exc:
            conn.close()
            if not _is_wal(self.path):
                raise StoreError(f"cannot read the mail store {self.path}: {exc}") from exc
            wal = Path(f"{self.path}-wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise StoreError(
                    f"cannot read the mail store {self.path}: it was left in WAL mode with unmerged changes in "
                    f"{wal.name}, and reading it needs write access to its folder ({exc}). Open it once for "
                    "writing (e.g. `drill inbox ingest` with the same --db) as its owner; this version of Drill "
                    "leaves stores in a mode any reader can open.") from exc
            # A WAL-mode file with nothing in a WAL: the file alone is the whole store, read it as immutable.
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            version = self._schema_version(conn)
        if version == "1" and os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK):
            conn.close()
            MailStore(self.path).close()  # upgrades in place, in one transaction
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        return conn

    @staticmethod
    def _schema_version(conn: sqlite3.Connection) -> str | None:
        try:
            row = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
        except sqlite3.DatabaseError:
            return None
        return row[0] if row else None

    def _prepare_for_writing(self) -> None:
        try:
            self.conn.execute("PRAGMA journal_mode = DELETE")  # also turns a WAL store back; see module doc
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(f"{self.path} is in use by another process ({exc}, after waiting {BUSY_SECONDS} s); "
                                 "run again once it has finished") from exc
            raise StoreError(f"{self.path} is not a Drill mail store: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a Drill mail store: {exc}") from exc
        self.conn.create_function("drill_people_text", 1, people_text, deterministic=True)
        found = self._schema_version(self.conn)
        script = _SCHEMA
        if found == "1":
            script += _UPGRADE_FROM_1 + f"UPDATE store_meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version';"
        script += f"INSERT OR IGNORE INTO store_meta VALUES ('schema_version', '{SCHEMA_VERSION}');"
        try:
            self.conn.executescript(f"BEGIN; {script} COMMIT;")  # one transaction: an upgrade is all or nothing
        except sqlite3.DatabaseError as exc:
            if self.conn.in_transaction:
                self.conn.rollback()
            raise StoreError(f"cannot prepare the mail store {self.path}: {exc}") from exc

    def _check_schema(self) -> None:
        try:
            row = self.conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a Drill mail store: {exc}") from exc
        if row is None or row[0] != str(SCHEMA_VERSION):
            found = row[0] if row else "missing"
            hint = (" (open it once for writing as a user who may write it, e.g. with `drill inbox ingest`, "
                    "to upgrade it)" if found == "1" else "")
            raise StoreError(f"{self.path}: mail store schema {found}, expected {SCHEMA_VERSION}{hint}")

    def close(self) -> None:
        self.conn.close()
        self._snippets.close()

    # -- writing ---------------------------------------------------------------------------------

    def add(self, inbox: str, records: Sequence[MailRecord]) -> tuple[int, int]:
        """Add messages to `inbox` in one transaction; returns (added, duplicates). See `add_each`."""
        stored = self.add_each(inbox, records)
        added = sum(1 for message_id in stored if message_id is not None)
        return added, len(stored) - added

    def add_each(self, inbox: str, records: Sequence[MailRecord]) -> list[str | None]:
        """Add messages to `inbox` in one transaction; for each record, the id it was stored under, or None for
        a duplicate.

        A record whose Message-ID is already stored with the same content (`content_key`) is a duplicate and
        changes nothing. With other content it is a different message that reused the id (mail archives carry
        reused and broken Message-IDs): it is stored under `variant_id`, derived from its content, so a rerun
        finds it there and counts it as a duplicate. If anything fails, the whole batch is rolled back and the
        error raised.
        """
        stored: list[str | None] = []
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO inboxes(user) VALUES (?)", (inbox,))
            for record in records:
                stored.append(self._add_one(inbox, record))
        return stored

    def _add_one(self, inbox: str, r: MailRecord) -> str | None:
        attachments = "\n".join(r.attachments)
        key = ""  # the content key, computed only once the Message-ID is found taken
        for length in (0, 16, 64):
            message_id = variant_id(r.message_id, key, length) if length else r.message_id
            cursor = self.conn.execute(
                "INSERT OR IGNORE INTO messages(inbox, message_id, subject, sender, sender_name, date, body, "
                "attachments, source_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (inbox, message_id, r.subject, r.sender, r.sender_name, r.date, r.body, attachments, r.source_hash),
            )
            if cursor.rowcount > 0:
                self._add_people(cursor.lastrowid, r)
                return message_id
            key = key or content_key(r.subject, r.body, attachments)
            held = self.conn.execute("SELECT subject, body, attachments FROM messages WHERE inbox = ? AND "
                                     "message_id = ?", (inbox, message_id)).fetchone()
            if content_key(*held) == key:
                return None
        raise StoreError(f"{r.message_id}: its content-derived ids are all taken by other messages in {inbox!r}")

    def _add_people(self, key: int | None, r: MailRecord) -> None:
        self.conn.executemany("INSERT INTO recipients(message_key, address, name, kind) VALUES (?, ?, ?, ?)",
                              [(key, p.address, p.name, p.kind) for p in r.recipients])
        recipients = [part for p in r.recipients for part in (p.name, p.address)]
        self.conn.execute("INSERT INTO people_fts(rowid, sender, recipients) VALUES (?, ?, ?)",
                          (key, people_text(r.sender_name, *r.sender_aliases, r.sender),
                           people_text(*recipients, *r.recipient_aliases)))

    def has_source(self, inbox: str, source_hash: str) -> bool:
        return self.conn.execute("SELECT 1 FROM messages WHERE inbox = ? AND source_hash = ? LIMIT 1",
                                 (inbox, source_hash)).fetchone() is not None

    def check_integrity(self) -> None:
        """Raise StoreError if the FTS index and the message table disagree or SQLite finds damage."""
        try:
            self.conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: full-text index out of step with messages: {exc}") from exc
        status = self.conn.execute("PRAGMA integrity_check").fetchone()[0]
        if status != "ok":
            raise StoreError(f"{self.path}: integrity check failed: {status}")

    # -- reading ---------------------------------------------------------------------------------

    def inboxes(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT user FROM inboxes ORDER BY user")]

    def count(self, inbox: str) -> int:
        return int(self.conn.execute("SELECT count(*) FROM messages WHERE inbox = ?", (inbox,)).fetchone()[0])

    def search(self, inbox: str, keywords: str = "", from_addr: str | None = None, to_addr: str | None = None,
               sent_after: str | None = None, sent_before: str | None = None, visible_until: str | None = None,
               max_results: int = 10) -> list[SearchHit]:
        """Messages of `inbox` matching every keyword and filter, best bm25 match first (newest first
        without keywords).

        `from_addr` / `to_addr`: see `query.PeopleFilter` (an exact address, or words of a name or address in
        any order). `sent_after` is inclusive and `sent_before` exclusive, `visible_until` inclusive: store
        UTC text (`query.utc_cutoff` makes it from agent input). `visible_until` hides everything sent later,
        and all undated mail. Any str is accepted; snippets cost a bounded time whatever the body's size.
        """
        where = ["m.inbox = ?"]
        params: list[object] = [clean_text(inbox)]
        people: list[str] = []
        for text, column in ((from_addr, "sender"), (to_addr, "recipients")):
            if not text:
                continue
            wanted = PeopleFilter(text)
            if wanted.address is not None and column == "sender":
                where.append("m.sender = ?")
                params.append(wanted.address)
            elif wanted.address is not None:
                where.append("m.id IN (SELECT message_key FROM recipients WHERE address = ?)")
                params.append(wanted.address)
            elif wanted.match is None:
                return []  # no letters or digits: names nobody
            else:
                people.append(wanted.column_match(column) or "")
        if people:
            where.append("m.id IN (SELECT rowid FROM people_fts WHERE people_fts MATCH ?)")
            params.append(" AND ".join(people))
        if sent_after or sent_before or visible_until:
            where.append("m.date IS NOT NULL")
        for bound, op in ((sent_after, ">="), (sent_before, "<"), (visible_until, "<=")):
            if bound:
                where.append(f"m.date {op} ?")
                params.append(clean_text(bound))
        match = fts_query(keywords)
        if not match:
            rows = self.conn.execute(
                "SELECT m.message_id, m.date, m.sender, m.subject, substr(m.body, 1, 120) FROM messages m "
                f"WHERE {' AND '.join(where)} ORDER BY m.date DESC, m.message_id LIMIT ?", [*params, max_results],
            ).fetchall()
            return [SearchHit(r[0], r[1] or "", r[2], r[3], " ".join(r[4].split())) for r in rows]
        # CROSS JOIN keeps the full-text index as the outer loop: left to itself the planner may walk the
        # date index and re-run the MATCH for every message. Snippets are made only for the rows returned,
        # on a bounded window of each body (SnippetMaker), never by FTS5 over the whole body.
        ranked = self.conn.execute(
            "SELECT m.id, m.message_id, m.date, m.sender, m.subject "
            "FROM messages_fts CROSS JOIN messages m ON m.id = messages_fts.rowid "
            f"WHERE messages_fts MATCH ? AND {' AND '.join(where)} "
            "ORDER BY bm25(messages_fts, 3.0, 1.0), m.date DESC, m.message_id LIMIT ?",
            [match, *params, max_results],
        ).fetchall()
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        bodies = dict(self.conn.execute(f"SELECT id, body FROM messages WHERE id IN ({marks})",
                                        [r[0] for r in ranked]).fetchall())
        snippets = self._snippets.snippets(match, bodies)
        return [SearchHit(r[1], r[2] or "", r[3], r[4], snippets[r[0]]) for r in ranked]

    def read(self, inbox: str, message_id: str, visible_until: str | None = None) -> StoredMessage | None:
        """One message of `inbox`, or None if there is none with that id (or it is later than `visible_until`)."""
        sql = ("SELECT id, message_id, subject, sender, sender_name, date, body, attachments FROM messages "
               "WHERE inbox = ? AND message_id = ?")
        params: list[object] = [clean_text(inbox), normalize_message_id(message_id)]
        if visible_until is not None:
            sql += " AND date IS NOT NULL AND date <= ?"
            params.append(clean_text(visible_until))
        row = self.conn.execute(sql, params).fetchone()
        if row is None:
            return None
        recipients = tuple(
            Recipient(address=a, name=n, kind=k) for a, n, k in self.conn.execute(
                "SELECT address, name, kind FROM recipients WHERE message_key = ? ORDER BY rowid", (row[0],))
        )
        return StoredMessage(message_id=row[1], subject=row[2], sender=row[3], sender_name=row[4], date=row[5],
                             body=row[6], recipients=recipients,
                             attachments=tuple(a for a in row[7].split("\n") if a))

    def dated_messages(self, inbox: str) -> Iterator[StoredMessage]:
        """Every dated message of `inbox`, oldest first (for question generation)."""
        ids = [r[0] for r in self.conn.execute(
            "SELECT message_id FROM messages WHERE inbox = ? AND date IS NOT NULL ORDER BY date, message_id", (inbox,))]
        for message_id in ids:
            message = self.read(inbox, message_id)
            if message is not None:
                yield message

    def people(self) -> list[str]:
        """The persons among the store's senders and recipients, each once: a display name of two or more words that
        spells its address's local part ("Lucas Fontaine" <lucas.fontaine@...>; accents folded), so that "Citadel
        Assurance Sales" <sales@...>, "Calendar" or "All Kestrel" are not taken for people."""
        rows = self.conn.execute("SELECT sender_name, sender FROM messages UNION SELECT name, address FROM recipients")
        return sorted({name.strip() for name, address in rows if name and _spells(name, address)})

    def subjects(self, inbox: str) -> list[str]:
        """The subject of every message of `inbox`, dated or not (for telling which subjects are unique)."""
        return [r[0] for r in self.conn.execute("SELECT subject FROM messages WHERE inbox = ?", (inbox,))]

    def existing_ids(self, inbox: str, message_ids: Sequence[str]) -> set[str]:
        wanted = [normalize_message_id(m) for m in message_ids]
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in self.conn.execute(
                f"SELECT message_id FROM messages WHERE inbox = ? AND message_id IN ({marks})", [inbox, *chunk]))
        return found
