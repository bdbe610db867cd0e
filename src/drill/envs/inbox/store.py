"""The mail store: one SQLite file holding one or more inboxes, with an FTS5 index over subject and body.

Each inbox belongs to one user (an address such as `dana.whitfield@kestrel.example`, or an Enron folder name
such as `allen-p`). The same message may sit in several inboxes (sender's sent folder and recipient's inbox),
so messages are keyed by (inbox, message_id).

Schema:

* `inboxes(user)` — one row per inbox.
* `messages(id, inbox, message_id, subject, sender, sender_name, date, body, attachments, source_hash)` —
  `date` is UTC text `YYYY-MM-DD HH:MM:SS`, or NULL when the message had no parseable Date header.
  Undated mail is never returned by a time-limited search or read (its place in time cannot be checked)
  and never matches `sent_after` / `sent_before`.
* `recipients(message_key, address, name, kind)` — kind is `to`, `cc` or `bcc`; `message_key` is `messages.id`.
* `messages_fts` — FTS5 over subject and body, external content (`content='messages'`), kept in step by
  triggers, so the index and the table change in the same transaction.
* Indexes on (inbox, sender), (inbox, date), (inbox, source_hash) and recipients(address).

The database runs in WAL mode; every `add` is one transaction, so a crash leaves whole batches or nothing.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MailRecord", "MailStore", "Recipient", "SearchHit", "StoreError", "StoredMessage", "fts_query"]

SCHEMA_VERSION = 1

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

MAX_QUERY_TERMS = 12
"""Keywords beyond this many are ignored (all terms must match, so more would only ever find less)."""

_TERM = re.compile(r"\w+", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s\b")


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


def fts_query(keywords: str) -> str:
    """An FTS5 MATCH expression from free text: every word quoted, all of them required.

    Quoting each `\\w+` run means no agent text can produce FTS syntax (NEAR, OR, column filters,
    unbalanced quotes): the result is always a valid query, or "" when there are no words. A possessive
    's is dropped ("Omar's" searches for "omar").
    """
    terms = list(dict.fromkeys(t.lower() for t in _TERM.findall(_POSSESSIVE.sub("", keywords))))[:MAX_QUERY_TERMS]
    return " ".join(f'"{t}"' for t in terms)


def normalize_message_id(text: str) -> str:
    """Message ids are stored without angle brackets or surrounding whitespace; agents may send either."""
    return text.strip().strip("<>").strip()


def _check_fts5(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.drill_fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp.drill_fts5_probe")
    except sqlite3.OperationalError as exc:
        raise StoreError(
            f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5 full-text search ({exc}); "
            "the inbox store needs it. Use a Python build whose sqlite3 is compiled with FTS5 (python.org, "
            "Debian/Ubuntu and conda builds all are)."
        ) from exc


class MailStore:
    """A mail store file. Open with `MailStore(path)` to write (created if missing) or `read_only=True`."""

    def __init__(self, path: Path | str, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only:
            if not self.path.is_file():
                raise StoreError(f"no mail store at {self.path}")
            self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, check_same_thread=False)
        self.conn.execute("PRAGMA foreign_keys = ON")
        _check_fts5(self.conn)
        if read_only:
            self._check_schema()
        else:
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            with self.conn:
                self.conn.executescript(_SCHEMA)
                self.conn.execute("INSERT OR IGNORE INTO store_meta VALUES ('schema_version', ?)",
                                  (str(SCHEMA_VERSION),))
            self._check_schema()

    def _check_schema(self) -> None:
        try:
            row = self.conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a Drill mail store: {exc}") from exc
        if row is None or row[0] != str(SCHEMA_VERSION):
            found = row[0] if row else "missing"
            raise StoreError(f"{self.path}: mail store schema {found}, expected {SCHEMA_VERSION}")

    def close(self) -> None:
        self.conn.close()

    # -- writing ---------------------------------------------------------------------------------

    def add(self, inbox: str, records: Sequence[MailRecord]) -> tuple[int, int]:
        """Add messages to `inbox` in one transaction; returns (added, duplicates).

        A message whose (inbox, message_id) is already stored is a duplicate and is left as it was.
        If anything fails, the whole batch is rolled back and the error raised.
        """
        added = 0
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO inboxes(user) VALUES (?)", (inbox,))
            for r in records:
                cursor = self.conn.execute(
                    "INSERT OR IGNORE INTO messages(inbox, message_id, subject, sender, sender_name, date, body, "
                    "attachments, source_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (inbox, r.message_id, r.subject, r.sender, r.sender_name, r.date, r.body,
                     "\n".join(r.attachments), r.source_hash),
                )
                if cursor.rowcount == 0:
                    continue
                added += 1
                self.conn.executemany(
                    "INSERT INTO recipients(message_key, address, name, kind) VALUES (?, ?, ?, ?)",
                    [(cursor.lastrowid, p.address, p.name, p.kind) for p in r.recipients],
                )
        return added, len(records) - added

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

        `from_addr` / `to_addr` match an address exactly when they contain "@", otherwise a substring of the
        address or display name. `sent_after` is inclusive and `sent_before` exclusive (UTC date or datetime
        text). `visible_until` hides everything sent later, and all undated mail.
        """
        where = ["m.inbox = ?"]
        params: list[object] = [inbox]
        if from_addr:
            if "@" in from_addr:
                where.append("m.sender = ?")
                params.append(from_addr.strip().lower())
            else:
                where.append("(m.sender LIKE ? OR m.sender_name LIKE ?)")
                params += [f"%{from_addr.strip()}%"] * 2
        if to_addr:
            if "@" in to_addr:
                where.append("m.id IN (SELECT message_key FROM recipients WHERE address = ?)")
                params.append(to_addr.strip().lower())
            else:
                where.append("m.id IN (SELECT message_key FROM recipients WHERE address LIKE ? OR name LIKE ?)")
                params += [f"%{to_addr.strip()}%"] * 2
        if sent_after or sent_before or visible_until:
            where.append("m.date IS NOT NULL")
        if sent_after:
            where.append("m.date >= ?")
            params.append(sent_after)
        if sent_before:
            where.append("m.date < ?")
            params.append(sent_before)
        if visible_until:
            where.append("m.date <= ?")
            params.append(visible_until)
        match = fts_query(keywords)
        if not match:
            rows = self.conn.execute(
                "SELECT m.message_id, m.date, m.sender, m.subject, substr(m.body, 1, 120) FROM messages m "
                f"WHERE {' AND '.join(where)} ORDER BY m.date DESC, m.message_id LIMIT ?", [*params, max_results],
            ).fetchall()
            return [SearchHit(r[0], r[1] or "", r[2], r[3], " ".join(r[4].split())) for r in rows]
        # CROSS JOIN keeps the full-text index as the outer loop: left to itself the planner may walk the
        # date index and re-run the MATCH for every message. Snippets are made only for the rows returned.
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
        snippets = dict(self.conn.execute(
            "SELECT rowid, snippet(messages_fts, 1, '[', ']', '…', 16) FROM messages_fts "
            f"WHERE messages_fts MATCH ? AND rowid IN ({marks})", [match, *(r[0] for r in ranked)],
        ).fetchall())
        return [SearchHit(r[1], r[2] or "", r[3], r[4], " ".join(snippets[r[0]].split())) for r in ranked]

    def read(self, inbox: str, message_id: str, visible_until: str | None = None) -> StoredMessage | None:
        """One message of `inbox`, or None if there is none with that id (or it is later than `visible_until`)."""
        sql = ("SELECT id, message_id, subject, sender, sender_name, date, body, attachments FROM messages "
               "WHERE inbox = ? AND message_id = ?")
        params: list[object] = [inbox, normalize_message_id(message_id)]
        if visible_until is not None:
            sql += " AND date IS NOT NULL AND date <= ?"
            params.append(visible_until)
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

    def existing_ids(self, inbox: str, message_ids: Sequence[str]) -> set[str]:
        wanted = [normalize_message_id(m) for m in message_ids]
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in self.conn.execute(
                f"SELECT message_id FROM messages WHERE inbox = ? AND message_id IN ({marks})", [inbox, *chunk]))
        return found
