"""Folder walking: symlinks, Maildir++, `tmp`, FIFOs, `.` as a path, top-level mbox files; nothing is lost silently."""

from __future__ import annotations

import mailbox
import os
import threading
from pathlib import Path

import pytest

from drill.envs.inbox.ingest import IngestReport, default_user, ingest, user_sources
from drill.envs.inbox.store import MailStore

MESSAGE = ("Message-ID: <{id}@example.com>\nDate: Mon, 14 May 2001 16:39:00 -0700\nFrom: ann@example.com\n"
           "To: bob@example.com\nSubject: message {id}\n\nThe body of message {id}.\n")


def put(path: Path, id: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MESSAGE.format(id=id))


def maildir(root: Path, ids: list[str]) -> None:
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for n, id in enumerate(ids):
        put(root / ("new" if n % 2 else "cur") / f"17000000{n:02d}.M{n}P1.host:2,S", id)


@pytest.fixture
def store(tmp_path: Path) -> MailStore:
    return MailStore(tmp_path / "mail.db")


def stored_ids(store: MailStore, user: str) -> set[str]:
    return {h.message_id.split("@")[0] for h in store.search(user, "", max_results=1000)}


def test_maildir_plus_plus_dot_folders_are_walked_and_control_files_reported(tmp_path: Path,
                                                                             store: MailStore) -> None:
    root = tmp_path / "Maildir"
    maildir(root, [f"inbox{i}" for i in range(10)])
    maildir(root / ".Sent", [f"sent{i}" for i in range(10)])
    maildir(root / ".Archive.2001", [f"arch{i}" for i in range(10)])
    (root / "dovecot-uidlist").write_text("3 V1 N31\n")
    (root / "maildirfolder").write_text("")
    put(root / "tmp" / "1700.half-delivered", "half")
    report = ingest(root, store, "bob")
    assert report.added == 30 and len(stored_ids(store, "bob")) == 30
    reasons = {Path(source).name: reason for source, reason in report.skipped}
    assert set(reasons) == {"dovecot-uidlist", "maildirfolder", "tmp"}
    assert reasons["tmp"] == "maildir tmp folder: 1 messages still being delivered"
    assert reasons["dovecot-uidlist"].startswith("maildir control file")


def test_a_folder_named_tmp_outside_a_maildir_is_walked(tmp_path: Path, store: MailStore) -> None:
    put(tmp_path / "enron" / "allen-p" / "tmp" / "1.", "in-tmp")
    put(tmp_path / "enron" / "allen-p" / "inbox" / "1.", "in-inbox")
    report = ingest(tmp_path / "enron", store, "allen-p")
    assert (report.added, report.skipped) == (2, [])


def test_directory_symlinks_are_followed_once_and_loops_are_reported(tmp_path: Path, store: MailStore) -> None:
    elsewhere = tmp_path / "elsewhere"
    put(elsewhere / "1.", "linked")
    root = tmp_path / "mail"
    put(root / "inbox" / "1.", "own")
    (root / "linked").symlink_to(elsewhere, target_is_directory=True)
    (root / "inbox" / "loop").symlink_to(root, target_is_directory=True)
    (root / "inbox" / "dangling").symlink_to(tmp_path / "nowhere")
    report = ingest(root, store, "bob")
    assert report.added == 2 and stored_ids(store, "bob") == {"linked", "own"}
    reasons = {Path(source).name: reason for source, reason in report.skipped}
    assert reasons == {"loop": "folder already walked: a symlink leads back to it", "dangling": "broken symlink"}


def test_a_fifo_is_reported_and_never_opened(tmp_path: Path, store: MailStore) -> None:
    root = tmp_path / "mail"
    put(root / "1.", "one")
    os.mkfifo(root / "2.")
    done: list[IngestReport] = []
    worker = threading.Thread(target=lambda: done.append(ingest(root, MailStore(tmp_path / "f.db"), "bob")),
                              daemon=True)
    worker.start()
    worker.join(timeout=30)
    if not done:  # opening the FIFO would block forever: unblock it so the test process can exit, then fail
        with open(root / "2.", "wb"):
            pass
        pytest.fail("ingest hung on a FIFO")
    assert done[0].added == 1 and done[0].skipped == [(str(root / "2."), "not a regular file: a FIFO")]


def test_dot_as_the_path_uses_the_folder_name(tmp_path: Path, store: MailStore,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "allen-p"
    put(root / "inbox" / "1.", "dot")
    monkeypatch.chdir(root)
    assert default_user(Path(".")) == "allen-p"
    report = ingest(Path("."), store, "")
    assert report.added == 1 and store.inboxes() == ["allen-p"]


def test_split_users_includes_top_level_mbox_files(tmp_path: Path, store: MailStore) -> None:
    put(tmp_path / "maildir" / "allen-p" / "inbox" / "1.", "allen")
    box = mailbox.mbox(tmp_path / "maildir" / "beck-s.mbox")
    box.add(MESSAGE.format(id="beck"))
    box.flush()
    box.close()
    (tmp_path / "maildir" / "README.txt").write_text("not mail")
    sources = user_sources(tmp_path / "maildir")
    assert [(p.name, user) for p, user in sources] == [("allen-p", "allen-p"), ("beck-s.mbox", "beck-s")]
    for path, user in sources:
        assert ingest(path, store, user).added == 1
    assert store.inboxes() == ["allen-p", "beck-s"]


def test_every_file_is_stored_a_duplicate_or_skipped_with_a_reason(tmp_path: Path, store: MailStore) -> None:
    root = tmp_path / "mixed"
    maildir(root / "box", ["m1", "m2", "m3"])
    maildir(root / "box" / ".Sent", ["m4"])
    put(root / "enron" / "inbox" / "1.", "m5")
    put(root / "enron" / "inbox" / "2.", "m1")  # same Message-ID as a maildir message
    (root / "enron" / "inbox" / "3.").write_bytes(b"")
    (root / "enron" / ".hidden").mkdir()
    put(root / "enron" / ".hidden" / "9.", "hidden")
    (root / ".DS_Store").write_bytes(b"\x00\x01")
    box = mailbox.mbox(root / "archive.mbox")
    for id in ("m6", "m7", "m6"):
        box.add(MESSAGE.format(id=id))
    box.flush()
    box.close()
    report = ingest(root, store, "bob")
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix != ".mbox"]
    accounted = report.added + report.duplicates + len(report.skipped)
    assert (report.added, report.duplicates, len(report.skipped)) == (7, 2, 3)
    # every file once (the hidden folder's one file through its folder's entry), and each of the 3 mbox messages
    assert accounted == len(files) + 3
    assert sorted(reason.split(":")[0] for _, reason in report.skipped) == ["empty", "hidden file", "hidden folder"]
    assert sorted(Path(s).name for s in report.duplicate_sources) == ["2.", "archive.mbox#3"]
    lines = report.details(verbose=True)
    assert any("archive.mbox#3" in line for line in lines) and any(".hidden" in line for line in lines)
