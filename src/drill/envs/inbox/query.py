"""Agent input turned into store queries: FTS5 match expressions, people filters, date cutoffs, snippets.

Everything here accepts any `str` (lone surrogates and control characters included) and either returns a
value the store can bind, or raises ValueError with a message meant for the agent.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from datetime import UTC, date, datetime
from email.utils import parseaddr

__all__ = ["MAX_QUERY_TERMS", "PeopleFilter", "SnippetMaker", "clean_text", "fts_query", "people_text", "utc_cutoff",
           "utc_text"]

MAX_QUERY_TERMS = 12
"""Keywords beyond this many are ignored (all terms must match, so more would only ever find less)."""

SNIPPET_WINDOW = 400
"""Characters of body on each side of the first hit that a snippet is computed from (its cost is bounded)."""

_TERM = re.compile(r"\w+", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s\b")
_NAME_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits: what FTS5's unicode61 keeps as tokens


def clean_text(text: str) -> str:
    """`text` with lone UTF-16 surrogates replaced by U+FFFD, so SQLite can always bind it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def fts_query(keywords: str) -> str:
    """An FTS5 MATCH expression from free text: every word quoted, all of them required.

    Quoting each `\\w+` run means no agent text can produce FTS syntax (NEAR, OR, column filters,
    unbalanced quotes): the result is always a valid query, or "" when there are no words. A possessive
    's is dropped ("Omar's" searches for "omar").
    """
    words = _TERM.findall(_POSSESSIVE.sub("", clean_text(keywords)))
    terms = list(dict.fromkeys(t.lower() for t in words))[:MAX_QUERY_TERMS]
    return " ".join(f'"{t}"' for t in terms)


# -- people ------------------------------------------------------------------------------------------


def people_text(*parts: str) -> str:
    """Names and addresses as the people index stores them: NFKC-normalized and fully case-folded."""
    return unicodedata.normalize("NFKC", clean_text(" ".join(p for p in parts if p))).casefold()


class PeopleFilter:
    """A `from_addr` / `to_addr` argument: an exact address, or name/address words that must all appear.

    * `Name <addr>` (the form `read_email` displays) or a bare `addr` with an `@`: that address exactly
      (case-insensitive).
    * Anything else: every word must start a word of the person's names or address, in any order, with
      full Unicode case folding ("Okafor, Helen", "helen okafor", "JÜRGEN", "hel oka" all find Helen
      Okafor). Names come from `From`/`To`/`Cc` and from Enron's `X-From`/`X-To`/`X-cc`.
    * Text with no letters or digits (`%`, `_`, punctuation) matches nobody.
    """

    def __init__(self, text: str) -> None:
        text = clean_text(text).strip()
        name, address = parseaddr(text)
        if "@" in address and " " not in address and (not name or "<" in text):
            self.address: str | None = address.strip().lower()
            self.match: str | None = None
        else:
            self.address = None
            words = list(dict.fromkeys(_NAME_TOKEN.findall(people_text(text))))[:MAX_QUERY_TERMS]
            self.match = " AND ".join(f'"{w}"*' for w in words) or None

    def column_match(self, column: str) -> str | None:
        """The FTS5 expression for the people index's `column`, or None when only an address is given."""
        return f"{column} : ({self.match})" if self.match else None


# -- dates -------------------------------------------------------------------------------------------


def utc_text(when: datetime) -> str:
    """A datetime as the store's UTC text, `YYYY-MM-DD HH:MM:SS` with the year zero-padded to 4 digits.

    A naive datetime is taken as UTC; an aware one is converted. (`strftime("%Y")` does not pad years
    below 1000 on glibc, and `999-05-14` would sort after every `2001-...` date.)
    """
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when.isoformat(sep=" ", timespec="seconds")


def utc_cutoff(text: str, argument: str) -> str:
    """A `sent_after` / `sent_before` argument as store UTC text.

    Accepts `YYYY-MM-DD` and ISO datetimes; a cutoff with an offset (`2024-03-14T09:00:00+02:00`, or `Z`)
    means that instant and is converted to UTC; one without an offset is UTC. Raises ValueError otherwise.
    """
    cleaned = clean_text(text).strip()
    try:
        when = datetime.fromisoformat(cleaned)
    except ValueError:
        try:
            when = datetime.combine(date.fromisoformat(cleaned), datetime.min.time())
        except ValueError:
            raise ValueError(f"{argument} must be a date like 2024-03-14 (or an ISO datetime), "
                             f"got {cleaned[:80]!r}") from None
    try:
        return utc_text(when)
    except OverflowError:
        raise ValueError(f"{argument} is out of range: {cleaned[:80]!r}") from None


# -- snippets ----------------------------------------------------------------------------------------


def _first_hit(body: str, stems: list[str]) -> int | None:
    """Where the first word starting with one of `stems` begins in `body` (case-insensitive), or None.

    `str.lower` and `str.find` run in C (about 1 ms for 1 MB); a stem found inside a word is skipped, and after
    64 such misses for one stem the rest of the body is searched with a regular expression instead.
    """
    lowered = body.lower()
    if len(lowered) != len(body):  # a few characters grow when lowered: positions would drift
        found = re.search(r"\b(?:" + "|".join(map(re.escape, stems)) + ")", body, re.IGNORECASE) if stems else None
        return found.start() if found else None
    best: int | None = None
    for stem in stems:
        position, misses = lowered.find(stem), 0
        while position != -1 and (best is None or position < best):
            if position == 0 or not lowered[position - 1].isalnum():
                best = position
                break
            misses += 1
            if misses > 64:
                later = re.compile(r"\b" + re.escape(stem)).search(lowered, position + 1)
                if later is not None and (best is None or later.start() < best):
                    best = later.start()
                break
            position = lowered.find(stem, position + 1)
    return best


class SnippetMaker:
    """Snippets with matches in [brackets], computed on a bounded window of the body.

    FTS5's `snippet()` over a whole stored body costs time superlinear in the number of matches (a 1 MB
    pasted log with one word 150,000 times took over 100 s). Here the first occurrence of a query term is
    located with one linear regular-expression scan (its stem as a word prefix, so `meetings` finds
    `meeting`), and `snippet()` runs in a private in-memory FTS5 table, with the store's tokenizer, over
    at most 2 × `SNIPPET_WINDOW` characters around it. Without a located hit the window is the body's start.
    """

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.execute("CREATE VIRTUAL TABLE window USING fts5(body, tokenize='porter unicode61')")
        self.conn.execute("CREATE VIRTUAL TABLE window_terms USING fts5vocab(window, 'row')")

    def close(self) -> None:
        self.conn.close()

    def _stems(self, match: str) -> list[str]:
        with self.conn:
            self.conn.execute("DELETE FROM window")
            self.conn.execute("INSERT INTO window(body) VALUES (?)", (match.replace('"', " "),))
            stems = [row[0] for row in self.conn.execute("SELECT term FROM window_terms")]
            self.conn.execute("DELETE FROM window")
        # Porter turns a final y into i (happy -> happi): drop it so the prefix still matches the word.
        return [s[:-1] if s.endswith("i") and len(s) > 3 else s for s in stems]

    def snippets(self, match: str, bodies: dict[int, str]) -> dict[int, str]:
        """A snippet for each body (by key), for the FTS5 expression `match` (from `fts_query`): every
        query word found in the window is marked, as FTS5 marks the body column of a matching row."""
        stems = self._stems(match)
        any_term = " OR ".join(match.split())  # fts_query terms are quoted words; some may be only in the subject
        result: dict[int, str] = {}
        for key, body in bodies.items():
            found = _first_hit(body, stems)
            start = max(0, found - SNIPPET_WINDOW) if found is not None else 0
            window = body[start:start + 2 * SNIPPET_WINDOW]
            result[key] = self._snippet(any_term, window, clipped_start=start > 0,
                                        clipped_end=start + 2 * SNIPPET_WINDOW < len(body))
        return result

    def _snippet(self, match: str, window: str, clipped_start: bool, clipped_end: bool) -> str:
        with self.conn:
            self.conn.execute("DELETE FROM window")
            self.conn.execute("INSERT INTO window(body) VALUES (?)", (window,))
            row = self.conn.execute("SELECT snippet(window, 0, '[', ']', '…', 16) FROM window WHERE window MATCH ?",
                                    (match,)).fetchone()
            self.conn.execute("DELETE FROM window")
        if row is None:  # the words are only in the subject (or only beyond the window)
            words = window.split()
            text = " ".join(words[:16]) + ("…" if len(words) > 16 or clipped_end else "")
            return ("…" if clipped_start else "") + text
        return " ".join(row[0].split())
