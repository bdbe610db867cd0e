"""Inbox store speed: ingest rate and search latency on a 100k-message inbox.

    .venv/bin/python benchmarks/inbox_speed.py                      # 100k messages, Enron-style maildir files
    .venv/bin/python benchmarks/inbox_speed.py --format mbox        # the same mail as one mbox file
    .venv/bin/python benchmarks/inbox_speed.py --messages 20000     # a quicker run

Steps: generate the synthetic company inbox at the requested size (deterministic, seed 0), write it as
files (a maildir tree `user/folder/N.` like Enron's, or one mbox), ingest it with `drill.envs.inbox.ingest`
into a fresh SQLite FTS5 store (timed, then a second, idempotent pass), and time `MailStore.search` on
queries built the way an agent would: the heuristic baseline's keywords for each question, asked at the
question's time (the time cut applies), the same with a sender filter (an address, or a name in
"Last, First" order), the heuristic's fallback keywords, and one or two very common words (thousands of
matches to rank). Two pathological messages are ingested with the rest and searched on their own: a 1 MB
pasted log holding one word 150,000 times (the worst case for snippets), and a 1 MB body whose only rare
word is at its very end. Targets: every search under 50 ms, the worst case included; 100k messages
ingested within a few minutes.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from drill.envs.inbox.baselines import search_keywords
from drill.envs.inbox.ingest import ingest
from drill.envs.inbox.store import MailStore
from drill.envs.inbox.synthetic import Mail, generate, write_mbox


def write_maildir(mails: list[Mail], root: Path) -> None:
    folders = ["inbox", "inbox/projects", "sent", "notes_inbox", "discussion_threads"]
    for n, mail in enumerate(mails):
        folder = root / "whitfield-d" / folders[n % len(folders)]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{n + 1}.").write_bytes(mail.rfc822())


WORST_CASES = {
    "worst case: 1 MB body, one word 150,000 times": ("zebra", "zebra " * 150_000),
    "1 MB body, the word at its end": ("quokka", "routine filler line\n" * 52_000 + "the quokka report"),
}


def write_pathological(root: Path) -> None:
    for n, (word, body) in enumerate(WORST_CASES.values()):
        (root / "whitfield-d" / "inbox" / f"pathological-{n}.").write_text(
            f"Message-ID: <pathological-{n}@bench>\nDate: Mon, 01 Jan 2024 09:00:00 +0000\n"
            f"From: Log Bot <logs@bench>\nTo: dana.whitfield@kestrel.example\nSubject: pasted {word} log\n\n{body}\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--format", choices=("maildir", "mbox"), default="maildir")
    parser.add_argument("--queries", type=int, default=2000, help="At most this many questions (one query each).")
    parser.add_argument("--workdir", type=Path, default=None, help="Keep files here instead of a temp folder.")
    args = parser.parse_args()

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"SQLite {sqlite3.sqlite_version}")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="inbox-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    inbox = generate(seed=0, messages=args.messages)
    print(f"generated {len(inbox.mails)} messages and {len(inbox.questions)} questions in "
          f"{time.perf_counter() - start:.1f} s")

    start = time.perf_counter()
    source = work / ("mail.mbox" if args.format == "mbox" else "maildir")
    if args.format == "mbox":
        write_mbox(inbox.mails, source)
    else:
        write_maildir(inbox.mails, source)
        write_pathological(source)
    print(f"wrote them as {args.format} under {source} in {time.perf_counter() - start:.1f} s")

    db = work / "bench.db"
    for leftover in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        leftover.unlink(missing_ok=True)
    store = MailStore(db)
    start = time.perf_counter()
    report = ingest(source if args.format == "mbox" else source / "whitfield-d", store, inbox.user)
    elapsed = time.perf_counter() - start
    print(f"ingest: {report.summary()} in {elapsed:.1f} s = {report.added / elapsed:,.0f} messages/s")
    start = time.perf_counter()
    again = ingest(source if args.format == "mbox" else source / "whitfield-d", store, inbox.user)
    print(f"second ingest (idempotent): {again.summary()} in {time.perf_counter() - start:.1f} s")
    print(f"store: {db.stat().st_size / 1e6:.0f} MB")
    store.close()

    reader = MailStore(db, read_only=True)
    rng = random.Random(0)
    questions = rng.sample(inbox.questions, min(args.queries, len(inbox.questions)))
    senders = [m.sender.address for m in inbox.mails[:: max(1, len(inbox.mails) // 500)]]
    names = sorted({", ".join(reversed(m.sender.name.split(" ", 1))) for m in inbox.mails[:2000] if m.sender.name})
    for q in questions[:20]:  # warm the page cache
        reader.search(q.inbox, search_keywords(q.question)[0], visible_until=q.asked_at)
    timings: dict[str, list[float]] = {"keywords": [], "keywords + sender": [], "keywords + sender name": [],
                                       "fallback keywords": [], "common words": []}
    common = ["update", "meeting", "budget", "thanks", "review", "please", "project", "customer", "report", "week"]
    hits = 0
    for q in questions:
        words = " ".join(rng.sample(common, rng.choice([1, 2])))
        start = time.perf_counter()
        reader.search(q.inbox, words, visible_until=q.asked_at)
        timings["common words"].append((time.perf_counter() - start) * 1000)
        first, fallback = search_keywords(q.question)
        for label, words, sender in (("keywords", first, None), ("keywords + sender", first, rng.choice(senders)),
                                     ("keywords + sender name", first, rng.choice(names)),
                                     ("fallback keywords", fallback, None)):
            start = time.perf_counter()
            found = reader.search(q.inbox, words, from_addr=sender, visible_until=q.asked_at)
            timings[label].append((time.perf_counter() - start) * 1000)
            hits += label == "keywords" and bool(found)
    if args.format == "maildir":
        for label, (word, _) in WORST_CASES.items():
            timings[label] = []
            for _ in range(50):
                start = time.perf_counter()
                found = reader.search(inbox.user, word)
                timings[label].append((time.perf_counter() - start) * 1000)
            assert [h.message_id for h in found][:1] == [f"pathological-{list(WORST_CASES).index(label)}@bench"]
    for label, values in timings.items():
        print(f"search [{label}]: p50 {percentile(values, 0.5):.2f} ms, p95 {percentile(values, 0.95):.2f} ms, "
              f"max {max(values):.2f} ms, mean {statistics.fmean(values):.2f} ms over {len(values)} queries")
    print(f"{hits}/{len(questions)} first-try keyword queries found something")


if __name__ == "__main__":
    main()
