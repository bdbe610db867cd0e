"""Store searches on real-mail shapes: bounded snippets, people filters, date cutoffs, any str; opening stores
read-only. Each case failed before the real-mail fixes (issue 13 and the registry issue)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from drill.envs.inbox import query
from drill.envs.inbox.mime import parse_message
from drill.envs.inbox.query import SNIPPET_WINDOW, utc_cutoff
from drill.envs.inbox.store import MailRecord, MailStore, Recipient, StoreError


def record(id: str, body: str = "budget", sender: str = "a@x.org", sender_name: str = "",
           date: str | None = "2024-03-14 12:00:00", recipients: tuple[Recipient, ...] = (),
           **aliases: tuple[str, ...]) -> MailRecord:
    return MailRecord(message_id=id, subject=f"subject {id}", sender=sender, sender_name=sender_name, date=date,
                      body=body, recipients=recipients, attachments=(), source_hash=id, **aliases)


@pytest.fixture
def store(tmp_path: Path) -> MailStore:
    return MailStore(tmp_path / "mail.db")


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(h.message_id for h in hits)


def test_snippets_come_from_a_bounded_window_around_the_first_hit(store: MailStore,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = "zebra " * 150_000  # a pasted 1 MB log with one word
    late = "filler text. " * 40_000 + "The vault code for the meetings room is 4471. " + "more filler. " * 1000
    store.add("u", [record("log", log), record("late", late), record("short", "Meeting notes: the budget.")])
    windows: list[int] = []
    real = query.SnippetMaker._snippet

    def spy(self: query.SnippetMaker, match: str, window: str, clipped_start: bool, clipped_end: bool) -> str:
        windows.append(len(window))
        return real(self, match, window, clipped_start, clipped_end)

    monkeypatch.setattr(query.SnippetMaker, "_snippet", spy)
    [hit] = store.search("u", "zebra")
    assert hit.snippet.startswith("[zebra] [zebra]") and len(hit.snippet) < 200
    [hit] = store.search("u", "vault meeting")  # stemmed: "meeting" finds "meetings" half a megabyte in
    assert "[vault] code for the [meetings] room is 4471" in hit.snippet
    assert windows and max(windows) <= 2 * SNIPPET_WINDOW
    [hit] = store.search("u", "subject short")  # matches only in the subject: the body's start
    assert hit.snippet == "Meeting notes: the budget."


def test_from_filter_finds_enron_senders_by_x_from_name_in_either_order(store: MailStore) -> None:
    enron = parse_message(b"Message-ID: <e1@enron.com>\nDate: Mon, 14 May 2001 16:39:00 -0700\n"
                          b"From: helen.okafor@enron.com\nTo: tim.belden@enron.com\nSubject: gas\n"
                          b"X-From: Helen Okafor\nX-To: Belden, Tim </O=ENRON/OU=NA/CN=RECIPIENTS/CN=TBELDEN>\n\n"
                          b"The June forecast.\n")
    named = record("e2", sender="helen.okafor@enron.com", sender_name="Okafor, Helen")
    other = record("e3", sender="helena.smith@enron.com", sender_name="Helena Smith")
    store.add("u", [enron, named, other])
    for text in ("Helen Okafor", "Okafor, Helen", "okafor", "HELEN OKAFOR", "Helen Okafor <helen.okafor@enron.com>",
                 "helen.okafor@enron.com", "HELEN.OKAFOR@ENRON.COM"):
        assert ids(store.search("u", "", from_addr=text)) == ["e1@enron.com", "e2"], text
    assert ids(store.search("u", "", from_addr="Helen")) == ["e1@enron.com", "e2", "e3"]  # word prefixes
    assert ids(store.search("u", "forecast", to_addr="Tim Belden")) == ["e1@enron.com"]  # from X-To
    assert ids(store.search("u", "", to_addr="belden, tim")) == ["e1@enron.com"]


def test_people_filters_fold_unicode_case_and_have_no_wildcards(store: MailStore) -> None:
    store.add("u", [
        record("j", sender="jurgen@x.de", sender_name="Jürgen Weiß",
               recipients=(Recipient("ann_lee@x.org", "Ann Lee", "to"),)),
        record("k", sender="k@x.de", sender_name="Karl 100% Sure",
               recipients=(Recipient("annxlee@x.org", "", "to"),)),
    ])
    assert ids(store.search("u", "", from_addr="JÜRGEN")) == ["j"]
    assert ids(store.search("u", "", from_addr="jürgen weiss")) == ["j"]  # full case folding: ß = ss
    assert ids(store.search("u", "", from_addr="%")) == []  # was a LIKE wildcard matching everyone
    assert ids(store.search("u", "", from_addr="_")) == []
    assert ids(store.search("u", "", to_addr="ann_lee@x.org")) == ["j"]  # "_" was a one-character wildcard
    assert ids(store.search("u", "", from_addr="100%")) == ["k"]


def test_any_str_is_safe_in_every_store_argument(store: MailStore) -> None:
    store.add("u", [record("m")])
    bad = "\ud800 a\x00b\udfff"
    for kwargs in ({"from_addr": bad}, {"to_addr": bad}, {"keywords": bad}, {"sent_after": bad},
                   {"visible_until": bad}):
        store.search("u", **kwargs)  # type: ignore[arg-type]
    store.search(bad, "budget")
    assert store.read("u", "\ud800") is None and store.read(bad, "m") is None
    with pytest.raises(ValueError, match="sent_after must be a date"):
        utc_cutoff("\ud800", "sent_after")


def test_date_cutoffs_honour_offsets_and_old_years(store: MailStore) -> None:
    assert utc_cutoff("2024-03-14", "sent_before") == "2024-03-14 00:00:00"
    assert utc_cutoff("2024-03-14T09:00:00+02:00", "sent_before") == "2024-03-14 07:00:00"
    assert utc_cutoff("2024-03-14T09:00:00Z", "sent_before") == "2024-03-14 09:00:00"
    assert utc_cutoff("0999-05-14", "sent_after") == "0999-05-14 00:00:00"
    store.add("u", [record("early", date="2024-03-14 06:30:00"), record("late", date="2024-03-14 08:00:00"),
                    record("ancient", date="0999-05-14 10:00:00")])
    before = utc_cutoff("2024-03-14T09:00:00+02:00", "sent_before")  # 07:00 UTC: "late" is after the cutoff
    assert ids(store.search("u", "budget", sent_before=before)) == ["ancient", "early"]
    after = utc_cutoff("0500-01-01", "sent_after")
    assert ids(store.search("u", "budget", sent_after=after, sent_before=utc_cutoff("1000-01-01", "b"))) == ["ancient"]


def test_stores_are_left_readable_by_a_user_who_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "mail.db"
    writer = MailStore(path)
    writer.add("u", [record("m")])
    writer.close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    before = sorted(p.name for p in path.parent.iterdir())
    reader = MailStore(path, read_only=True)
    assert ids(reader.search("u", "budget")) == ["m"]
    assert sorted(p.name for p in path.parent.iterdir()) == before == ["mail.db"]  # no -shm or -wal needed


def test_a_store_left_in_wal_mode_opens_read_only_and_is_converted_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "mail.db"
    writer = MailStore(path)
    writer.add("u", [record("m")])
    writer.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"  # as older versions left it
    conn.close()
    reader = MailStore(path, read_only=True)
    assert ids(reader.search("u", "budget")) == ["m"]
    reader.close()
    MailStore(path).close()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_schema_1_store_is_upgraded_with_its_people_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = MailStore(path)
    store.add("u", [record("m", sender="helen@x.org", sender_name="Helen Okafor",
                           recipients=(Recipient("tim@x.org", "Tim Belden", "to"),))])
    store.conn.executescript("DROP TABLE people_fts; UPDATE store_meta SET value = '1';")  # as version 1 wrote it
    store.close()
    upgraded = MailStore(path, read_only=True)
    assert ids(upgraded.search("u", "", from_addr="okafor helen", to_addr="TIM")) == ["m"]


def test_a_file_that_cannot_be_read_is_not_blamed_on_fts5(tmp_path: Path) -> None:
    path = tmp_path / "mail.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError) as raised:
        MailStore(path, read_only=True)
    assert "FTS5" not in str(raised.value) and "not a Drill mail store" in str(raised.value)
