"""Every word of every mail is searchable (issue 42): each test plants a distinctive word in a message of one
class that used to lose text (a charset family, an HTML part behind a placeholder, a reused Message-ID),
ingests it, and finds the word with the store's search, the function `drill inbox search` calls."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill.cli import app
from drill.envs.inbox.ingest import ingest
from drill.envs.inbox.mime import decode_text, parse_message
from drill.envs.inbox.store import MailStore

USER = "bob@example.com"

# (charset label, subject fact, body fact): each fact a word of its own (spaces around it), as FTS5 tokenizes.
CHARSETS = [
    ("iso-2022-jp", "東京駅前", "新宿御苑"),
    ("shift_jis", "大阪城公園", "道頓堀"),
    ("euc-kr", "서울특별시", "해운대"),
    ("koi8-r", "Москва", "Ленинград"),
    ("gb18030", "北京烤鸭", "颐和园"),
    ("big5", "臺北車站", "阿里山"),
]


def encoded_word(text: str, charset: str) -> str:
    """An RFC 2047 encoded word (B encoding) holding `text` in `charset`."""
    return f"=?{charset}?B?{base64.b64encode(text.encode(charset)).decode()}?="


def charset_mail(n: int, charset: str, subject_fact: str, body_fact: str) -> bytes:
    head = (f"Message-ID: <cs-{n}@example.com>\nDate: Mon, 14 May 2001 16:39:00 -0700\nFrom: ann@example.com\n"
            f"To: {USER}\nSubject: {encoded_word(f'Re: {subject_fact} 2001', charset)}\nMIME-Version: 1.0\n"
            f"Content-Type: text/plain; charset={charset}\nContent-Transfer-Encoding: 8bit\n\n")
    return head.encode() + f"Note: {body_fact} is the place.\n".encode(charset)


def ingested(tmp_path: Path, mails: dict[str, bytes]) -> MailStore:
    folder = tmp_path / "mail" / "inbox"
    folder.mkdir(parents=True)
    for name, raw in mails.items():
        (folder / name).write_bytes(raw)
    store = MailStore(tmp_path / "mail.db")
    report = ingest(tmp_path / "mail", store, USER)
    assert report.skipped == [] and report.added == len(mails)
    return store


def found(store: MailStore, word: str) -> list[str]:
    return [hit.message_id for hit in store.search(USER, word)]


@pytest.mark.parametrize(("n", "charset", "subject_fact", "body_fact"),
                         [(n, *c) for n, c in enumerate(CHARSETS)], ids=[c[0] for c in CHARSETS])
def test_each_charset_family_is_searchable_in_subject_and_body(tmp_path: Path, n: int, charset: str,
                                                              subject_fact: str, body_fact: str) -> None:
    store = ingested(tmp_path, {f"{n}.": charset_mail(n, charset, subject_fact, body_fact)})
    assert found(store, subject_fact) == [f"cs-{n}@example.com"]
    assert found(store, body_fact) == [f"cs-{n}@example.com"]
    stored = store.read(USER, f"cs-{n}@example.com")
    assert stored is not None and stored.subject == f"Re: {subject_fact} 2001"
    assert stored.body == f"Note: {body_fact} is the place."


def test_drill_inbox_search_finds_every_charset_fact(tmp_path: Path) -> None:
    root = tmp_path / "mail" / "inbox"
    root.mkdir(parents=True)
    for n, (charset, subject_fact, body_fact) in enumerate(CHARSETS):
        (root / f"{n}.").write_bytes(charset_mail(n, charset, subject_fact, body_fact))
    db = str(tmp_path / "mail.db")
    runner = CliRunner()
    result = runner.invoke(app, ["inbox", "ingest", str(tmp_path / "mail"), "--db", db, "--user", USER])
    assert result.exit_code == 0 and "added 6, duplicates 0, skipped 0" in result.output
    for n, (_, subject_fact, body_fact) in enumerate(CHARSETS):
        for fact in (subject_fact, body_fact):
            result = runner.invoke(app, ["inbox", "search", fact, "--db", db])
            assert result.exit_code == 0 and result.output.count("@example.com ") == 1, fact
            assert f"cs-{n}@example.com" in result.output, fact


def test_iso_2022_jp_as_windows_writes_it_and_raw_jis_headers(tmp_path: Path) -> None:
    """Outlook's ISO-2022-JP (CP50221) carries NEC extensions (①) and half-width katakana, which Python's
    iso2022 codecs refuse; old Japanese mailers put raw JIS, not encoded words, in the Subject."""
    body = b"\x1b$B-!\x1b(B " + "品川埠頭".encode("iso2022_jp") + b" \x1b(I1\x1b(B"  # ① (NEC row 13), fact, ｱ
    raw = (b"Message-ID: <jis@example.com>\nFrom: ann@example.com\nTo: bob@example.com\nSubject: "
           + "議題 横浜港".encode("iso2022_jp") + b"\nContent-Type: text/plain; charset=ISO-2022-JP\n\n" + body)
    store = ingested(tmp_path, {"1.": raw})
    assert found(store, "品川埠頭") == found(store, "横浜港") == ["jis@example.com"]
    stored = store.read(USER, "jis@example.com")
    assert stored is not None and stored.body == "① 品川埠頭 ｱ" and stored.subject == "議題 横浜港"


@pytest.mark.parametrize(("text", "label"), [
    ("Привет, мир: Кострома", "utf-7"),
    ("会议在 杭州西湖 举行", "hz-gb-2312"),
    ("회의는 부산항 에서", "iso-2022-kr"),
    ("本日の 品川埠頭 会議", "iso-2022-jp"),
    ("本日の 品川埠頭 会議", "csISO2022JP"),
])
def test_seven_bit_charsets_are_decoded_not_read_as_ascii(text: str, label: str) -> None:
    codec = {"csISO2022JP": "iso-2022-jp", "hz-gb-2312": "hz"}.get(label, label)
    payload = text.encode(codec)
    assert payload.isascii()
    assert decode_text(payload, label) == text
    unlabelled = text if codec.startswith("iso-2022") else payload.decode("ascii")  # only escapes are recognisable
    assert decode_text(payload, None) == decode_text(payload, "us-ascii") == unlabelled


@pytest.mark.parametrize("label", ["base64", "rot13", "zlib", "windows-31j"])
def test_codec_names_that_are_not_charsets_do_not_lose_the_message(label: str) -> None:
    raw = (b"Message-ID: <odd@example.com>\nFrom: ann@example.com\nSubject: =?" + label.encode()
           + b"?Q?caf=E9?=\nContent-Type: text/plain; charset=" + label.encode()
           + b"\nContent-Transfer-Encoding: 8bit\n\nLe caf\xc3\xa9 Zanzibar ferme le lundi.\n")
    record = parse_message(raw)
    assert record.body == "Le café Zanzibar ferme le lundi." and record.subject
