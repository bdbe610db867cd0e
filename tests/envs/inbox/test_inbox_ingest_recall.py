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
from drill.envs.inbox.ingest import SHOWN_SKIPPED, IngestReport, ingest
from drill.envs.inbox.mime import decode_text, parse_message
from drill.envs.inbox.store import MailStore, content_key, variant_id

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


def ingest_folder(tmp_path: Path, mails: dict[str, bytes]) -> tuple[MailStore, IngestReport]:
    """`mails` written as one maildir folder and ingested into a fresh store: the store and the ingest report."""
    folder = tmp_path / "mail" / "inbox"
    folder.mkdir(parents=True)
    for name, raw in mails.items():
        (folder / name).write_bytes(raw)
    store = MailStore(tmp_path / "mail.db")
    return store, ingest(tmp_path / "mail", store, USER)


def ingested(tmp_path: Path, mails: dict[str, bytes]) -> MailStore:
    store, report = ingest_folder(tmp_path, mails)
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


# -- multipart/alternative --------------------------------------------------------------------------


def alternative(id: str, *versions: tuple[str, str]) -> bytes:
    """A message whose body is a multipart/alternative of (subtype, text) versions, in that order."""
    msg = EmailMessage()
    for name, value in (("Message-ID", f"<{id}@example.com>"), ("Date", "Mon, 14 May 2001 16:39:00 -0700"),
                        ("From", "ann@example.com"), ("To", USER), ("Subject", "offsite")):
        msg[name] = value
    (first_type, first), *rest = versions
    msg.set_content(first, subtype=first_type)
    for subtype, text in rest:
        msg.add_alternative(text, subtype=subtype)
    return msg.as_bytes()


PLACEHOLDERS = [
    "This message is in HTML format.",
    "Your mail client does not support HTML. This is a multi-part message in MIME format; to read it, please "
    "view this message in a web browser or in an HTML-capable email program, or contact our support desk.",
    "To view this email in your browser, open the link below.\nhttps://news.example.com/view/2001-05",
]


@pytest.mark.parametrize("placeholder", PLACEHOLDERS)
def test_an_html_part_behind_a_placeholder_is_indexed(tmp_path: Path, placeholder: str) -> None:
    html = "<html><body><p>Gate code <b>4471</b> for the Zephyrhills depot.</p></body></html>"
    store = ingested(tmp_path, {"1.": alternative("ph", ("plain", placeholder), ("html", html))})
    assert found(store, "Zephyrhills") == found(store, "4471") == ["ph@example.com"]
    stored = store.read(USER, "ph@example.com")
    assert stored is not None and stored.body == "Gate code 4471 for the Zephyrhills depot."  # no placeholder


def test_a_much_shorter_plain_part_gives_way_to_the_html(tmp_path: Path) -> None:
    html = ("<table><tr><td>Monday</td><td>Kickoff in the Tamarack room</td></tr>"
            "<tr><td>Tuesday</td><td>Hike to Lake Isabelle, bring crampons</td></tr></table>")
    store = ingested(tmp_path, {"1.": alternative("short", ("plain", "Schedule for Monday and Tuesday below."),
                                                  ("html", html))})
    assert found(store, "crampons") == found(store, "Tamarack") == ["short@example.com"]
    assert found(store, "below") == ["short@example.com"]  # the plain part's own words stay searchable


def test_plain_and_html_that_differ_in_content_are_both_indexed_once(tmp_path: Path) -> None:
    common = "The offsite moves to the Granite Lodge in Boulder on June 3."
    plain = f"{common}\nPlain only: the shuttle leaves from Gate Kestrel."
    html = f"<p>{common}</p><p>HTML only: bring the <b>Quetzal</b> badge.</p>"
    store = ingested(tmp_path, {"1.": alternative("both", ("plain", plain), ("html", html))})
    assert found(store, "Kestrel") == found(store, "Quetzal") == ["both@example.com"]
    stored = store.read(USER, "both@example.com")
    assert stored is not None and stored.body == f"{plain}\n\nHTML only: bring the Quetzal badge."


def test_an_html_part_that_repeats_the_plain_text_adds_nothing() -> None:
    plain = "The offsite moves to the Granite Lodge in Boulder on June 3.\nBring hiking boots."
    html = f"<div><p>{plain.splitlines()[0]}</p><p><i>Bring</i> hiking boots.</p></div>" * 3
    assert parse_message(alternative("same", ("plain", plain), ("html", html))).body == plain


def test_several_alternatives_each_add_what_is_new(tmp_path: Path) -> None:
    raw = alternative("three", ("plain", "This message is in HTML format."),
                      ("markdown", "Agenda: **Wapiti** trail briefing."),
                      ("html", "<p>Agenda: Wapiti trail briefing.</p><p>Dinner at the Ptarmigan Grill.</p>"))
    store = ingested(tmp_path, {"1.": raw})
    assert found(store, "Wapiti") == found(store, "Ptarmigan") == ["three@example.com"]
    stored = store.read(USER, "three@example.com")
    assert stored is not None and stored.body.count("Wapiti") == 1 and "HTML format" not in stored.body


def test_a_huge_html_part_is_indexed_to_its_end(tmp_path: Path) -> None:
    rows = "".join(f"<tr><td>row {n}</td><td>routine shipment {n % 97}</td></tr>" for n in range(40_000))
    html = f"<html><body><table>{rows}</table><p>Final line: Quokka pallet missing.</p></body></html>"
    store = ingested(tmp_path, {"1.": alternative("huge", ("plain", "This message is in HTML format."),
                                                  ("html", html))})
    assert len(html) > 2_000_000 and found(store, "Quokka") == ["huge@example.com"]


@pytest.mark.parametrize("hostile", ["<script>var x = 1; " * 100_000, "<!-- unclosed " * 100_000,
                                     "if a < b then " * 100_000, "<style>p {}</style>" * 60_000])
def test_huge_html_is_read_in_linear_time_without_its_scripts(hostile: str) -> None:
    """Past MAX_LAYOUT_HTML a tag strip reads the HTML: unclosed scripts, comments or stray `<` cannot make
    it scan to the end again and again (each case below would take minutes if they did)."""
    html = f"<html><head><title>Ignored title</title></head><body><script>leak()</script>{hostile}" \
           "<div>Final line: the Quokka pallet is missing &amp; late.</div></body></html>"
    text = parse_message(alternative("hostile", ("plain", "This message is in HTML format."), ("html", html))).body
    assert text.endswith("Final line: the Quokka pallet is missing & late.")
    assert "leak" not in text and "Ignored title" not in text


# -- reused Message-IDs ----------------------------------------------------------------------------------


def reused(body: str, extra_headers: str = "", subject: str = "Depot notes") -> bytes:
    return (f"{extra_headers}Message-ID: <reused@example.com>\nDate: Mon, 14 May 2001 16:39:00 -0700\n"
            f"From: ann@example.com\nTo: {USER}\nSubject: {subject}\n\n{body}\n").encode()


def test_a_reused_message_id_with_another_body_keeps_both_and_reruns_add_nothing(tmp_path: Path) -> None:
    first = reused("The pallet count at the Wapiti depot is 41.")
    second = reused("Different mail, same broken id: the Ptarmigan shipment left on Friday.")
    copy = reused("Different mail,  same broken id:\nthe Ptarmigan shipment left on Friday.",  # re-wrapped
                  "Received: from relay.example.com by mx.example.com; Tue, 15 May 2001 00:00:00 +0000\n"
                  "X-Folder: \\\\Ann\\\\Archive\n")
    other_subject = reused("The pallet count at the Wapiti depot is 41.", subject="Fwd: Depot notes")
    mails = {"1.": first, "2.": second, "3.": copy, "4.": other_subject}
    store, report = ingest_folder(tmp_path, mails)
    assert (report.added, report.duplicates, report.skipped) == (3, 1, [])
    assert report.summary() == "added 3 (2 reusing a stored Message-ID with other content), duplicates 1, skipped 0"
    assert [Path(source).name for source in report.duplicate_sources] == ["3."]  # headers and wrapping differ
    [(source_2, id_2), (source_4, id_4)] = report.variants
    assert (Path(source_2).name, Path(source_4).name) == ("2.", "4.")
    assert id_2.startswith("reused@example.com#") and len({id_2, id_4, "reused@example.com"}) == 3
    assert report.details()[0] == f"stored {source_2} as {id_2}: its Message-ID was taken by a message with " \
                                  "other content"
    assert sorted(found(store, "Wapiti")) == sorted(["reused@example.com", id_4])
    assert found(store, "Ptarmigan") == [id_2]
    stored = store.read(USER, id_2)
    assert stored is not None and stored.body == second.decode().split("\n\n", 1)[1].strip()

    again = ingest(tmp_path / "mail", store, USER)  # the same tree: nothing added, nothing lost
    assert (again.added, again.duplicates, again.variants) == (0, 4, []) and store.count(USER) == 3
    elsewhere = MailStore(tmp_path / "other.db")  # the derived ids depend on content only
    assert [stored for _, stored in ingest(tmp_path / "mail", elsewhere, USER).variants] == [id_2, id_4]
    fifth = copy.replace(b"Received:", b"Delivered-To: bob@example.com\nReceived:")
    (tmp_path / "mail" / "inbox" / "5.").write_bytes(fifth)
    third = ingest(tmp_path / "mail", store, USER)  # new bytes, content already stored under a derived id
    assert (third.added, third.duplicates) == (0, 5) and store.count(USER) == 3
    store.check_integrity()


def test_a_derived_id_taken_by_another_message_falls_back_to_the_whole_content_key(tmp_path: Path) -> None:
    store = MailStore(tmp_path / "mail.db")
    original, reuse = parse_message(reused("Original body.")), parse_message(reused("Another body: Zanzibar."))
    key = content_key(reuse.subject, reuse.body, "")
    squatter = parse_message(reused("A third body.").replace(b"<reused@example.com>",
                                                              f"<{variant_id(reuse.message_id, key, 16)}>".encode()))
    assert store.add_each(USER, [original, squatter, reuse]) == [
        original.message_id, squatter.message_id, variant_id(reuse.message_id, key, 64)]
    assert store.add_each(USER, [reuse, original, squatter]) == [None, None, None]
    assert found(store, "Zanzibar") == [variant_id(reuse.message_id, key, 64)]


def test_the_report_lists_the_first_derived_ids_and_counts_them_all() -> None:
    report = IngestReport(added=25, variants=[(f"inbox/{n}.", f"m@x#{n:016x}") for n in range(25)])
    assert report.summary() == "added 25 (25 reusing a stored Message-ID with other content), duplicates 0, skipped 0"
    assert len(report.details()) == SHOWN_SKIPPED + 1 and report.details()[-1].startswith("... and 5 more stored")
    assert len(report.details(verbose=True)) == 25
