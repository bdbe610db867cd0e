"""Ingestion of real mail (maildir trees such as Enron's, Dovecot Maildir++ trees, and mbox files) into a `MailStore`.

`ingest(path, store, user)` walks `path` (a file, a folder, or `.`) in sorted order:

* a folder is walked recursively; a symlinked folder is followed once (a folder reached twice, e.g. through
  a symlink loop, is reported, not walked again);
* a maildir is a folder with `cur/` or `new/`: its `tmp/` (messages still being delivered) is skipped, and only
  there (a folder named `tmp` elsewhere is walked); its Maildir++ sub-folders (`.Sent`, `.Archive.2001`) are
  walked; the files in its own top level are the mail server's control files (`dovecot-uidlist`,
  `maildirfolder`, ...) and are skipped;
* other hidden folders and files are skipped, and so are FIFOs, sockets, devices and broken symlinks (never
  opened, so a FIFO cannot hang the walk);
* a file whose first line is an mbox envelope (`From sender Mon Jan  1 00:00:00 2024`) is an mbox, unless it
  sits in a maildir's `cur/` or `new/`, where it is one message whose envelope line is ignored; any other
  file is one message. Every message is parsed by `mime.parse_message`.

mbox files are read as a stream (`mbox_messages`): a `From ` line starts a new message only if it looks like
an envelope (a sender, a time and a year) and follows a blank line, so an unescaped `From here on...` inside
a body does not cut the message (mboxo/mboxrd); a valid `Content-Length` header (mboxcl2) is honoured; and
`>From ` quoting is undone one level (mboxrd).

Nothing is lost silently: every message is stored, counted as a duplicate, or listed in `IngestReport.skipped`
with its reason, and so is every file or folder not read. Ingestion is idempotent and incremental: a source
whose raw bytes were stored before is skipped unparsed, and a message whose Message-ID is already in the inbox
with the same content (subject, body, attachment names; `store.content_key`) counts as a duplicate. One that
reuses a stored Message-ID with other content is stored too, under an id derived from its content
(`store.variant_id`), and counted in `IngestReport.variants`. Messages are written in batches, one transaction
each, so an interrupted run leaves whole batches and a rerun completes it.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from rich.progress import Progress

from drill.envs.inbox.mime import CorruptMessage, parse_message
from drill.envs.inbox.store import MailRecord, MailStore

__all__ = ["CorruptMessage", "IngestReport", "default_user", "ingest", "mbox_messages", "parse_message",
           "user_sources"]

BATCH_SIZE = 500
MAX_CONTENT_LENGTH = 256 * 2**20
"""A larger mboxcl2 Content-Length is not trusted (the message is framed by its envelope lines instead)."""
SHOWN_SKIPPED = 20
"""Skipped sources, and messages stored under a derived id, listed by `IngestReport.details()` without `verbose`
(the counts are always given)."""

_ENVELOPE = re.compile(rb"From \S+ +.*\b\d{1,2}:\d\d\b.*\b\d{4}\b")
_QUOTED_FROM = re.compile(rb">+From ")
_CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)\s*$", re.IGNORECASE)


@dataclass
class IngestReport:
    added: int = 0
    duplicates: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(source, reason) for every file, folder or mbox entry that was not stored."""
    duplicate_sources: list[str] = field(default_factory=list)
    """The source of every message counted as a duplicate."""
    variants: list[tuple[str, str]] = field(default_factory=list)
    """(source, stored id) for every added message whose Message-ID was taken by one with other content."""

    def summary(self) -> str:
        reused = f" ({len(self.variants)} reusing a stored Message-ID with other content)" if self.variants else ""
        line = f"added {self.added}{reused}, duplicates {self.duplicates}, skipped {len(self.skipped)}"
        if self.skipped:
            reasons = Counter(reason.split(":")[0] for _, reason in self.skipped)
            line += " (" + ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items())) + ")"
        return line

    def details(self, verbose: bool = False) -> list[str]:
        """One line per message stored under a derived id and per skipped source (the first `SHOWN_SKIPPED` of
        each unless `verbose`); duplicates too if `verbose`."""
        variants = self.variants if verbose else self.variants[:SHOWN_SKIPPED]
        lines = [f"stored {source} as {stored}: its Message-ID was taken by a message with other content"
                 for source, stored in variants]
        if len(self.variants) > len(variants):
            lines.append(f"... and {len(self.variants) - len(variants)} more stored under a derived id (all of them "
                         "with --verbose)")
        shown = self.skipped if verbose else self.skipped[:SHOWN_SKIPPED]
        lines += [f"skipped {source}: {reason}" for source, reason in shown]
        if len(self.skipped) > len(shown):
            lines.append(f"... and {len(self.skipped) - len(shown)} more skipped (all of them with --verbose)")
        if verbose:
            lines += [f"duplicate {source}" for source in self.duplicate_sources]
        return lines

    def merge(self, other: IngestReport) -> None:
        self.added += other.added
        self.duplicates += other.duplicates
        self.skipped += other.skipped
        self.duplicate_sources += other.duplicate_sources
        self.variants += other.variants


# -- what to read ----------------------------------------------------------------------------------------


def default_user(path: Path) -> str:
    """The inbox name for `path` when none is given: the folder's or file's name (`.` is resolved first)."""
    resolved = path.resolve()
    return (resolved.stem if resolved.is_file() else resolved.name) or str(resolved)


def user_sources(root: Path) -> list[tuple[Path, str]]:
    """For `--split-users`: each top-level folder of `root` is one user's inbox, and so is each top-level mbox
    file (named after the file, `.mbox` dropped). Hidden entries are left out."""
    found: list[tuple[Path, str]] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            found.append((entry, entry.name))
        elif entry.is_file() and _starts_with_envelope(entry):
            found.append((entry, entry.stem))
    return found


def _is_maildir(folder: Path) -> bool:
    return (folder / "cur").is_dir() or (folder / "new").is_dir()


def _starts_with_envelope(path: Path) -> bool:
    with path.open("rb") as handle:
        return _ENVELOPE.match(handle.readline(1000)) is not None


def _special_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return kind
    return "special file"


def _walk(root: Path, skipped: list[tuple[str, str]]) -> list[Path]:
    """Every message file under `root` in sorted order; what is not read goes to `skipped` with its reason."""
    files: list[Path] = []
    visited: set[tuple[int, int]] = set()

    def visit(folder: Path) -> None:
        info = folder.stat()
        if (info.st_dev, info.st_ino) in visited:
            skipped.append((str(folder), "folder already walked: a symlink leads back to it"))
            return
        visited.add((info.st_dev, info.st_ino))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            skipped.append((str(folder), f"unreadable folder: {exc}"))
            return
        maildir = _is_maildir(folder)
        for entry in entries:
            path = Path(entry.path)
            try:
                mode = entry.stat().st_mode  # follows symlinks
            except OSError:
                skipped.append((str(path), "broken symlink" if entry.is_symlink() else "unreadable: cannot stat"))
                continue
            if stat.S_ISDIR(mode):
                if maildir and entry.name == "tmp":
                    waiting = sum(1 for _ in path.iterdir())
                    if waiting:
                        skipped.append((str(path), f"maildir tmp folder: {waiting} messages still being delivered"))
                elif entry.name.startswith(".") and not _is_maildir(path):
                    skipped.append((str(path), "hidden folder: not a Maildir++ folder"))
                else:
                    visit(path)
            elif not stat.S_ISREG(mode):
                skipped.append((str(path), f"not a regular file: a {_special_kind(mode)}"))
            elif entry.name.startswith("."):
                skipped.append((str(path), "hidden file"))
            elif maildir:
                skipped.append((str(path), "maildir control file: messages live in cur/ and new/"))
            else:
                files.append(path)

    mode = root.stat().st_mode
    if stat.S_ISDIR(mode):
        visit(root)
    elif stat.S_ISREG(mode):
        files.append(root)
    else:
        skipped.append((str(root), f"not a regular file: a {_special_kind(mode)}"))
    return files


# -- mbox --------------------------------------------------------------------------------------------


def _unquote(line: bytes) -> bytes:
    return line[1:] if _QUOTED_FROM.match(line) else line


def _at_message_end(handle: BinaryIO) -> bool:
    """Whether only blank lines stand between the current position and the next envelope or the end."""
    while True:
        line = handle.readline()
        if not line:
            return True
        if line.strip():
            return _ENVELOPE.match(line) is not None


def mbox_messages(handle: BinaryIO) -> Iterator[bytes]:
    """The raw messages of an mbox stream positioned at its first envelope line (see the module doc)."""
    line = handle.readline()
    while line:
        headers: list[bytes] = []
        line = handle.readline()
        while line and line.strip():
            headers.append(line)
            line = handle.readline()
        separator = line  # the blank line after the headers, or b"" at the end of the file
        length = next((int(m.group(1)) for h in headers if (m := _CONTENT_LENGTH.match(h))), None)
        if length is not None and length <= MAX_CONTENT_LENGTH:
            start = handle.tell()
            body = handle.read(length)
            if len(body) == length and _at_message_end(handle):
                handle.seek(start + length)
                yield b"".join(headers) + separator + body
                line = handle.readline()
                while line and not line.strip():
                    line = handle.readline()
                continue
            handle.seek(start)
        lines: list[bytes] = []
        previous_blank = True
        line = handle.readline()
        while line and not (previous_blank and _ENVELOPE.match(line)):
            lines.append(_unquote(line))
            previous_blank = not line.strip()
            line = handle.readline()
        if line and lines and not lines[-1].strip():
            lines.pop()  # the blank line before the next envelope belongs to the mbox, not to the message
        yield b"".join(headers) + separator + b"".join(lines)


def _sources(files: list[Path], skipped: list[tuple[str, str]]) -> Iterator[tuple[str, bytes]]:
    """(label, raw bytes) for every message in `files`; unreadable files go to `skipped`."""
    for path in files:
        try:
            in_maildir = path.parent.name in ("cur", "new") and _is_maildir(path.parent.parent)
            if not in_maildir and _starts_with_envelope(path):
                with path.open("rb") as handle:
                    for index, raw in enumerate(mbox_messages(handle)):
                        yield f"{path}#{index + 1}", raw
            else:
                yield str(path), path.read_bytes()
        except OSError as exc:
            skipped.append((str(path), f"unreadable: {exc}"))


def ingest(path: Path, store: MailStore, user: str = "", progress: Progress | None = None) -> IngestReport:
    """Ingest every message under `path` into `user`'s inbox (default: `default_user(path)`).

    See the module docstring for the rules. Raises FileNotFoundError if `path` does not exist.
    """
    if not path.exists():
        raise FileNotFoundError(f"nothing to ingest at {path}")
    user = user.strip() or default_user(path)
    report = IngestReport()
    files = _walk(path, report.skipped)
    task = progress.add_task(f"ingest {user}", total=len(files)) if progress is not None else None
    batch: list[MailRecord] = []
    labels: list[str] = []

    def flush() -> None:
        for label, record, stored in zip(labels, batch, store.add_each(user, batch)):
            if stored is None:
                report.duplicates += 1
                report.duplicate_sources.append(label)
                continue
            report.added += 1
            if stored != record.message_id:
                report.variants.append((label, stored))
        batch.clear()
        labels.clear()

    current = ""
    for label, raw in _sources(files, report.skipped):
        if progress is not None and task is not None and label.split("#")[0] != current:
            current = label.split("#")[0]
            progress.advance(task)
        if store.has_source(user, hashlib.sha256(raw).hexdigest()):
            report.duplicates += 1
            report.duplicate_sources.append(label)
            continue
        try:
            batch.append(parse_message(raw))
            labels.append(label)
        except CorruptMessage as exc:
            report.skipped.append((label, str(exc)))
            continue
        if len(batch) >= BATCH_SIZE:
            flush()
    flush()
    return report
