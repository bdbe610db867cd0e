"""Ingestion of real mail (maildir trees such as Enron's, and mbox files) into a `MailStore`.

`ingest(path, store, user)` walks `path`:

* a file that starts with `From ` is read as an mbox (Python's `mailbox.mbox`), any other file as one message;
* a folder is walked recursively in sorted order (the Enron layout: `allen-p/inbox/1.`, `allen-p/sent/12.`),
  skipping hidden files and Maildir `tmp/` folders (messages still being delivered).

Each message is parsed with `email` and `email.policy.default` (with parsed headers memoized):

* the body is the text/plain part, or the text/html part with the markup stripped; quoted-printable and
  base64 are decoded; a declared charset that is wrong or unknown falls back to UTF-8, then cp1252, then
  UTF-8 with replacement characters — decoding never fails;
* forwarded messages attached as message/rfc822 are appended to the body; forwarded chains quoted inline
  stay in the body as they are; attachment file names are recorded;
* a missing Message-ID gets a stable id from the SHA-256 of the raw bytes; a missing or unparseable Date
  is stored as NULL (that message never matches date filters and is hidden from time-limited questions).

Ingestion is idempotent and incremental: a source whose raw bytes were stored before is skipped unparsed,
and a message whose Message-ID is already in the inbox counts as a duplicate. A file that cannot be read or
holds no mail headers is reported and skipped; everything else is kept. Messages are written in batches,
one transaction each, so an interrupted run leaves whole batches and a rerun completes it.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import mailbox
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from email import policy
from email.policy import EmailPolicy
from email.errors import HeaderParseError, MessageError
from email.header import decode_header
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rich.progress import Progress

from drill.envs.inbox.store import MailRecord, MailStore, Recipient, normalize_message_id

__all__ = ["CorruptMessage", "IngestReport", "ingest", "parse_message"]

BATCH_SIZE = 500


class _MemoizedPolicy(EmailPolicy):
    """`email.policy.default`, except that a parsed header is memoized by (name, raw value).

    EmailMessage re-parses a header through the header registry on every access (get_body alone reads
    Content-Type several times per part), and header objects are immutable, so sharing them is safe.
    """

    def header_fetch_parse(self, name: str, value: str) -> Any:
        return _fetch_header(name, value)


@functools.lru_cache(maxsize=8192)
def _fetch_header(name: str, value: str) -> Any:
    return policy.default.header_fetch_parse(name, value)


_PARSER = BytesParser(policy=_MemoizedPolicy())
_MAIL_HEADERS = ("from", "to", "subject", "date", "message-id", "cc", "sender", "received")
_HEADER_ERRORS = (HeaderParseError, MessageError, IndexError, ValueError, TypeError, AttributeError, LookupError)


class CorruptMessage(ValueError):
    """A source that cannot be read as an email. The message is the reason shown in the ingest summary."""


@dataclass
class IngestReport:
    added: int = 0
    duplicates: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(source, reason) for every file or mbox entry that was not stored."""

    def summary(self) -> str:
        line = f"added {self.added}, duplicates {self.duplicates}, skipped {len(self.skipped)}"
        if self.skipped:
            reasons = Counter(reason.split(":")[0] for _, reason in self.skipped)
            line += " (" + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items())) + ")"
        return line


# -- parsing -----------------------------------------------------------------------------------------


class _TextFromHTML(HTMLParser):
    _BREAKS = {"br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "table", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head"):
            self._skip += 1
        elif tag in self._BREAKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head"):
            self._skip = max(0, self._skip - 1)
        elif tag in self._BREAKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextFromHTML()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _decode_bytes(payload: bytes, charset: str | None) -> str:
    candidates: list[str] = []
    if charset:
        try:
            candidates.append(codecs.lookup(charset.strip().strip('"')).name)
        except LookupError:
            pass
    for fallback in ("utf-8", "cp1252"):
        if fallback not in candidates:
            candidates.append(fallback)
    for name in candidates:
        try:
            return payload.decode(name)
        except UnicodeDecodeError:
            continue
    return payload.decode(candidates[0], errors="replace")


def _part_text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    text = _decode_bytes(payload, part.get_content_charset())
    if part.get_content_type() == "text/html":
        text = html_to_text(text)
    return text


def _decoded(value: str) -> str:
    """A raw header value as text: RFC 2047 encoded words decoded, raw 8-bit bytes decoded like bodies."""
    if any("\udc80" <= c <= "\udcff" for c in value):  # undeclared 8-bit bytes, kept by the parser as surrogates
        value = _decode_bytes(value.encode("ascii", "surrogateescape"), None)
    if "=?" in value:
        try:
            parts = decode_header(value)
        except _HEADER_ERRORS:
            parts = [(value, None)]
        value = "".join(_decode_bytes(p, charset) if isinstance(p, bytes) else p for p, charset in parts)
    return " ".join(value.split())


def _headers(msg: Message) -> dict[str, list[str]]:
    """Raw header values by lower-cased name. Read raw rather than through policy.default's header registry:
    the registry re-parses a header on every access and rejects some real-world values; these few headers
    are decoded here instead (`_decoded`, `getaddresses`, `parsedate_to_datetime`)."""
    found: dict[str, list[str]] = {}
    for name, value in msg.raw_items():
        found.setdefault(name.lower(), []).append(str(value))
    return found


def _header_text(headers: dict[str, list[str]], name: str) -> str:
    return ", ".join(_decoded(v) for v in headers.get(name, [])).strip()


def _addresses(headers: dict[str, list[str]], name: str) -> list[tuple[str, str]]:
    values = headers.get(name, [])
    return [(_decoded(n), a.strip().lower()) for n, a in getaddresses(values) if a.strip() and "@" in a]


def _utc_date(text: str) -> str | None:
    if not text:
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError):
        return None


def _content(msg: EmailMessage, depth: int = 0) -> tuple[str, tuple[str, ...]]:
    """The body text (forwarded message/rfc822 parts appended) and the attachment file names."""
    part = msg.get_body(preferencelist=("plain", "html"))
    text = _part_text(part) if part is not None else ""
    attachments: list[str] = []
    if msg.is_multipart():
        for sub in msg.walk():
            if sub.get_content_type() == "message/rfc822" and depth < 3:
                inner = sub.get_payload()
                inner_msg = inner[0] if isinstance(inner, list) and inner else None
                if isinstance(inner_msg, EmailMessage):
                    text += "\n\n" + _forwarded(inner_msg, depth + 1)
            elif sub is not part and not sub.is_multipart() and sub.get_filename():
                attachments.append(_decoded(str(sub.get_filename())))
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()
    return text, tuple(dict.fromkeys(attachments))


def _forwarded(msg: EmailMessage, depth: int) -> str:
    headers = _headers(msg)
    lines = ["---------- Forwarded message ----------"]
    for name in ("From", "Date", "Subject", "To"):
        value = _header_text(headers, name.lower())
        if value:
            lines.append(f"{name}: {value}")
    return "\n".join(lines) + "\n\n" + _content(msg, depth)[0]


def parse_message(raw: bytes) -> MailRecord:
    """Parse one RFC 822 message. Raises CorruptMessage if it is empty or has no mail headers at all."""
    if not raw.strip():
        raise CorruptMessage("empty: the file has no content")
    source_hash = hashlib.sha256(raw).hexdigest()
    try:
        msg = _PARSER.parsebytes(raw)
    except _HEADER_ERRORS as exc:
        raise CorruptMessage(f"unparseable: {exc}") from exc
    if not isinstance(msg, EmailMessage):
        raise CorruptMessage("not an email: the parser returned no message")
    headers = _headers(msg)
    if not headers.keys() & set(_MAIL_HEADERS):
        raise CorruptMessage("no mail headers: none of From/To/Subject/Date/Message-ID found")
    id_header = _header_text(headers, "message-id").split()
    message_id = normalize_message_id(id_header[0]) if id_header else ""
    if not message_id:
        message_id = f"{source_hash[:32]}@drill.generated"
    senders = _addresses(headers, "from") or _addresses(headers, "sender")
    sender_name, sender = senders[0] if senders else ("", "")
    recipients = tuple(Recipient(address=a, name=n, kind=kind)
                       for kind in ("to", "cc", "bcc") for n, a in _addresses(headers, kind))
    try:
        body, attachments = _content(msg)
    except _HEADER_ERRORS as exc:
        raise CorruptMessage(f"unreadable MIME structure: {exc}") from exc
    return MailRecord(
        message_id=message_id,
        subject=_header_text(headers, "subject"),
        sender=sender,
        sender_name=sender_name,
        date=_utc_date(_header_text(headers, "date")),
        body=body,
        recipients=recipients,
        attachments=attachments,
        source_hash=source_hash,
    )


# -- walking sources -----------------------------------------------------------------------------------


def _is_mbox(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(5) == b"From "


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "tmp")
        found += [Path(folder) / f for f in sorted(files) if not f.startswith(".")]
    return found


def _sources(files: list[Path], skipped: list[tuple[str, str]]) -> Iterator[tuple[str, bytes]]:
    """(label, raw bytes) for every message under `files`; unreadable files go to `skipped`."""
    for path in files:
        try:
            if _is_mbox(path):
                box = mailbox.mbox(path, create=False)
                try:
                    for index, key in enumerate(box.keys()):
                        yield f"{path}#{index + 1}", box.get_bytes(key)
                finally:
                    box.close()
            else:
                yield str(path), path.read_bytes()
        except (OSError, mailbox.Error) as exc:
            skipped.append((str(path), f"unreadable: {exc}"))


def _count_messages(files: list[Path]) -> int:
    total = 0
    for path in files:
        try:
            if _is_mbox(path):
                box = mailbox.mbox(path, create=False)
                total += len(box)
                box.close()
            else:
                total += 1
        except (OSError, mailbox.Error):
            total += 1
    return total


def ingest(path: Path, store: MailStore, user: str, progress: Progress | None = None) -> IngestReport:
    """Ingest every message under `path` into `user`'s inbox. See the module docstring for the rules."""
    if not path.exists():
        raise FileNotFoundError(f"nothing to ingest at {path}")
    if not user.strip():
        raise ValueError("the inbox user must not be empty")
    report = IngestReport()
    files = _files(path)
    task = progress.add_task(f"ingest {user}", total=_count_messages(files)) if progress is not None else None
    batch: list[MailRecord] = []

    def flush() -> None:
        added, duplicates = store.add(user, batch)
        report.added += added
        report.duplicates += duplicates
        batch.clear()

    for label, raw in _sources(files, report.skipped):
        if progress is not None and task is not None:
            progress.advance(task)
        if store.has_source(user, hashlib.sha256(raw).hexdigest()):
            report.duplicates += 1
            continue
        try:
            batch.append(parse_message(raw))
        except CorruptMessage as exc:
            report.skipped.append((label, str(exc)))
            continue
        if len(batch) >= BATCH_SIZE:
            flush()
    flush()
    return report
