"""Ingestion of maildir trees and mbox files into the mail store: MIME, charsets, broken input, idempotence."""

from __future__ import annotations

import base64
import mailbox
import sqlite3
from email.message import EmailMessage
from pathlib import Path

import pytest

from drill.envs.inbox import ingest as ingest_module
from drill.envs.inbox.ingest import CorruptMessage, ingest, parse_message
from drill.envs.inbox.store import MailRecord, MailStore, Recipient, fts_query

PLAIN = b"""Message-ID: <plain-1@example.com>
Date: Mon, 14 May 2001 16:39:00 -0700 (PDT)
From: Phillip Allen <phillip.allen@enron.com>
To: tim.belden@enron.com, John Doe <john.doe@enron.com>
Cc: sally.beck@enron.com
Subject: Gas forecast for June

Tim, the June forecast is 3.2 Bcf/d at Henry Hub.
"""

LATIN1 = ("Message-ID: <latin1@example.com>\nDate: Tue, 15 May 2001 09:00:00 +0200\n"
          "From: marie@example.fr\nTo: phillip.allen@enron.com\nSubject: =?iso-8859-1?q?R=E9union_=E0_Paris?=\n"
          "Content-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: 8bit\n\n"
          "Rendez-vous au café Müller à 10h.\n").encode("latin-1")

WRONG_CHARSET = ("Message-ID: <wrong-charset@example.com>\nDate: Wed, 16 May 2001 10:00:00 -0500\n"
                 "From: a@example.com\nTo: b@example.com\nSubject: Déjà vu\n"
                 "Content-Type: text/plain; charset=utf-8\n\nPrix: 12 € pour la crème brûlée.\n").encode("cp1252")

UNKNOWN_CHARSET = ("Message-ID: <unknown-charset@example.com>\nDate: Wed, 16 May 2001 11:00:00 -0500\n"
                   "From: a@example.com\nTo: b@example.com\nSubject: =?x-unknown?q?caf=C3=A9?= charset\n"
                   "Content-Type: text/plain; charset=x-klingon\n\nnaïve résumé\n").encode("utf-8")

NO_HEADERS_ID_OR_DATE = b"""From: nobody@example.com
To: phillip.allen@enron.com
Subject: no id, bad date
Date: sometime last week

The body of a message without a Message-ID.
"""

GARBAGE = bytes(range(256)) * 4


def multipart_with_attachment() -> bytes:
    msg = EmailMessage()
    msg["Message-ID"] = "<multi@example.com>"
    msg["Date"] = "Thu, 17 May 2001 12:00:00 +0000"
    msg["From"] = "Kay Mann <kay.mann@enron.com>"
    msg["To"] = "phillip.allen@enron.com"
    msg["Subject"] = "Contract draft"
    msg.set_content("Attached is the turbine contract. The price is $1,250,000 — see section 4.",
                    cte="quoted-printable")
    msg.add_alternative("<html><body><p>HTML version</p></body></html>", subtype="html")
    msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="contract.pdf")
    return msg.as_bytes()


def html_only_base64() -> bytes:
    html = "<html><head><style>p {color: red}</style></head><body><p>Meeting moved to <b>Houston</b>.</p>" \
           "<script>alert('x')</script><p>Thanks&nbsp;&amp; regards</p></body></html>"
    payload = base64.encodebytes(html.encode()).decode()
    return (f"Message-ID: <html-only@example.com>\nDate: Fri, 18 May 2001 08:00:00 +0000\nFrom: c@example.com\n"
            f"To: d@example.com\nSubject: html\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n"
            f"Content-Transfer-Encoding: base64\n\n{payload}").encode()


def forwarded_as_attachment() -> bytes:
    inner = EmailMessage()
    inner["From"] = "Jeff Skilling <jeff.skilling@enron.com>"
    inner["Subject"] = "Board meeting"
    inner["Date"] = "Mon, 07 May 2001 10:00:00 +0000"
    inner.set_content("The board meets in Room 50M on Friday.")
    outer = EmailMessage()
    outer["Message-ID"] = "<fwd@example.com>"
    outer["Date"] = "Tue, 08 May 2001 10:00:00 +0000"
    outer["From"] = "Sherri Sera <sherri.sera@enron.com>"
    outer["To"] = "phillip.allen@enron.com"
    outer["Subject"] = "Fwd: Board meeting"
    outer.set_content("FYI, see below.")
    outer.add_attachment(inner)
    return outer.as_bytes()


def write_maildir(root: Path) -> Path:
    """An Enron-style tree: user/folder/N. files, nested folders, plus a Maildir tmp/ that must be skipped."""
    user = root / "allen-p"
    files = {
        "inbox/1.": PLAIN,
        "inbox/2.": LATIN1,
        "inbox/3.": multipart_with_attachment(),
        "inbox/projects/gas/4.": WRONG_CHARSET,
        "inbox/projects/gas/5.": UNKNOWN_CHARSET,
        "notes_inbox/6.": NO_HEADERS_ID_OR_DATE,
        "notes_inbox/7.": html_only_base64(),
        "notes_inbox/8.": forwarded_as_attachment(),
        "sent/9.": PLAIN.replace(b"Tim, the June", b"Tim,  the June"),  # same Message-ID, other bytes: a duplicate
        "sent/10.": GARBAGE,  # corrupt
        "sent/11.": b"",  # empty
        "cur/12.": PLAIN.replace(b"<plain-1@", b"<in-cur@"),
        "tmp/13.": PLAIN.replace(b"<plain-1@", b"<still-being-delivered@"),
        ".DS_Store": GARBAGE,
    }
    for name, data in files.items():
        path = user / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return user


def write_mbox(path: Path) -> Path:
    box = mailbox.mbox(path)
    for raw in (PLAIN, LATIN1, multipart_with_attachment(), PLAIN, b"X-Junk\n\n" + GARBAGE[:100], html_only_base64()):
        box.add(raw)
    box.flush()
    box.close()
    return path


@pytest.fixture
def store(tmp_path: Path) -> MailStore:
    return MailStore(tmp_path / "mail.db")


def test_maildir_ingest_handles_mime_charsets_and_broken_files(tmp_path: Path, store: MailStore) -> None:
    user_dir = write_maildir(tmp_path / "maildir")
    report = ingest(user_dir, store, "allen-p")
    assert (report.added, report.duplicates) == (9, 1)
    assert sorted(Path(source).name for source, _ in report.skipped) == [".DS_Store", "10.", "11.", "tmp"]
    reasons = dict((Path(s).name, r) for s, r in report.skipped)
    assert reasons["10."].startswith("no mail headers") and reasons["11."].startswith("empty")
    assert report.summary() == ("added 9, duplicates 1, skipped 4 (1 empty, 1 hidden file, 1 maildir tmp folder, "
                                "1 no mail headers)")
    assert [Path(s).name for s in report.duplicate_sources] == ["9."]

    plain = store.read("allen-p", "<plain-1@example.com>")
    assert plain is not None and plain.sender == "phillip.allen@enron.com" and plain.sender_name == "Phillip Allen"
    assert plain.date == "2001-05-14 23:39:00"  # -0700 converted to UTC
    assert [(r.address, r.kind) for r in plain.recipients] == [
        ("tim.belden@enron.com", "to"), ("john.doe@enron.com", "to"), ("sally.beck@enron.com", "cc")]
    assert "Tim, the June forecast" in plain.body  # the first copy is kept; the duplicate changed nothing

    latin = store.read("allen-p", "latin1@example.com")
    assert latin is not None and latin.subject == "Réunion à Paris" and "café Müller" in latin.body
    wrong = store.read("allen-p", "wrong-charset@example.com")
    assert wrong is not None and "12 € pour la crème brûlée" in wrong.body and wrong.subject == "Déjà vu"
    unknown = store.read("allen-p", "unknown-charset@example.com")
    assert unknown is not None and "naïve résumé" in unknown.body and unknown.subject == "café charset"

    multi = store.read("allen-p", "multi@example.com")
    assert multi is not None and multi.body == (  # the plain version first, then what only the HTML says
        "Attached is the turbine contract. The price is $1,250,000 — see section 4.\n\nHTML version")
    assert multi.attachments == ("contract.pdf",)
    html = store.read("allen-p", "html-only@example.com")
    assert html is not None and html.body == "Meeting moved to Houston.\nThanks & regards"
    forwarded = store.read("allen-p", "fwd@example.com")
    assert forwarded is not None and "Forwarded message" in forwarded.body
    assert "Subject: Board meeting" in forwarded.body and "Room 50M" in forwarded.body

    assert store.read("allen-p", "in-cur@example.com") is not None
    assert store.read("allen-p", "still-being-delivered@example.com") is None  # tmp/ is skipped
    store.check_integrity()


def test_missing_message_id_gets_a_stable_id_and_bad_date_is_null(tmp_path: Path) -> None:
    first, second = parse_message(NO_HEADERS_ID_OR_DATE), parse_message(NO_HEADERS_ID_OR_DATE)
    assert first.message_id == second.message_id and first.message_id.endswith("@drill.generated")
    assert first.date is None
    store = MailStore(tmp_path / "m.db")
    store.add("u", [first])
    assert store.search("u", "body", sent_after="2000-01-01") == []  # undated mail never matches a date filter
    assert store.search("u", "body", visible_until="2030-01-01 00:00:00") == []  # nor a time-limited question
    assert [h.message_id for h in store.search("u", "body")] == [first.message_id]


def test_corrupt_input_raises_only_corrupt_message() -> None:
    for raw in (b"", b"   \n", GARBAGE):
        with pytest.raises(CorruptMessage):
            parse_message(raw)


def test_ingest_is_idempotent_and_incremental(tmp_path: Path, store: MailStore) -> None:
    user_dir = write_maildir(tmp_path / "maildir")
    ingest(user_dir, store, "allen-p")
    count = store.count("allen-p")
    again = ingest(user_dir, store, "allen-p")
    assert again.added == 0 and store.count("allen-p") == count
    assert again.duplicates == 10 and len(again.skipped) == 4  # broken files are reported again, never stored
    (user_dir / "inbox" / "99.").write_bytes(PLAIN.replace(b"<plain-1@", b"<new-one@"))
    third = ingest(user_dir, store, "allen-p")
    assert third.added == 1 and store.count("allen-p") == count + 1


def test_mbox_ingest(tmp_path: Path, store: MailStore) -> None:
    path = write_mbox(tmp_path / "archive.mbox")
    report = ingest(path, store, "me@example.com")
    assert (report.added, report.duplicates, len(report.skipped)) == (4, 1, 1)
    assert report.skipped[0][0].endswith("archive.mbox#5")
    latin = store.read("me@example.com", "latin1@example.com")
    assert latin is not None and "café Müller" in latin.body
    assert ingest(path, store, "me@example.com").added == 0


def test_a_crash_mid_ingest_leaves_whole_batches_and_a_rerun_completes(tmp_path: Path, store: MailStore,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(7):
        (root / f"{i}.").write_bytes(PLAIN.replace(b"<plain-1@", f"<m{i}@".encode()))
    monkeypatch.setattr(ingest_module, "BATCH_SIZE", 2)
    real_parse = ingest_module.parse_message
    calls = {"n": 0}

    def crashing_parse(raw: bytes) -> MailRecord:
        calls["n"] += 1
        if calls["n"] == 6:
            raise RuntimeError("power cut")
        return real_parse(raw)

    monkeypatch.setattr(ingest_module, "parse_message", crashing_parse)
    with pytest.raises(RuntimeError, match="power cut"):
        ingest(root, store, "u")
    assert store.count("u") == 4  # two whole batches; the half-built third never reached the store
    store.check_integrity()
    monkeypatch.setattr(ingest_module, "parse_message", real_parse)
    report = ingest(root, store, "u")
    assert (report.added, report.duplicates) == (3, 4) and store.count("u") == 7


def test_a_failing_batch_is_rolled_back_with_its_index(store: MailStore) -> None:
    good = parse_message(PLAIN)
    bad = MailRecord(message_id="bad@x", subject="s", sender="a@x", sender_name="", date=None, body="budget",
                     recipients=(Recipient("b@x", "", "fax"),), attachments=(), source_hash="h")
    with pytest.raises(sqlite3.IntegrityError):
        store.add("u", [good, bad])
    assert store.count("u") == 0 and store.search("u", "forecast") == []
    store.check_integrity()


def test_agent_text_never_breaks_the_fts_query(store: MailStore) -> None:
    store.add("u", [parse_message(PLAIN)])
    for text in ['NEAR("gas" OR', "* ^ subject:forecast", '"unbalanced', "AND OR NOT", "){}[]", "Tim's forecast"]:
        store.search("u", text)  # must not raise
    assert fts_query('forecast" OR "x') == '"forecast" "or" "x"'
    assert fts_query("Tim's June") == '"tim" "june"'
    assert [h.message_id for h in store.search("u", "Tim's forecast")] == ["plain-1@example.com"]


def test_opening_a_non_store_fails_clearly(tmp_path: Path) -> None:
    from drill.envs.inbox.store import StoreError

    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.commit()
    with pytest.raises(StoreError, match="not a Drill mail store"):
        MailStore(other, read_only=True)
    with pytest.raises(StoreError, match="no mail store"):
        MailStore(tmp_path / "missing.db", read_only=True)


def test_the_synthetic_inbox_survives_a_round_trip_through_mbox(tmp_path: Path, store: MailStore) -> None:
    from drill.envs.inbox.synthetic import generate, write_mbox

    mails = generate(0).mails[::12]
    write_mbox(mails, tmp_path / "kestrel.mbox")
    report = ingest(tmp_path / "kestrel.mbox", store, "dana")
    assert (report.added, report.duplicates, report.skipped) == (len(mails), 0, [])
    for mail in mails:
        expected, stored = mail.record(), store.read("dana", mail.message_id)
        assert stored is not None
        assert (stored.subject, stored.sender, stored.sender_name, stored.date, stored.body, stored.recipients,
                stored.attachments) == (expected.subject, expected.sender, expected.sender_name, expected.date,
                                        expected.body, expected.recipients, expected.attachments)


def test_a_sqlite_without_fts5_is_reported_clearly() -> None:
    from drill.envs.inbox.store import StoreError, _check_fts5

    class NoFTS5:  # stands in for a connection to an SQLite built without FTS5
        def execute(self, sql: str) -> None:
            raise sqlite3.OperationalError("no such module: fts5")

    with pytest.raises(StoreError, match="has no FTS5 full-text search .*no such module: fts5"):
        _check_fts5(NoFTS5())  # type: ignore[arg-type]
