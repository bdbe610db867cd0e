"""Ingestion keeps every piece of readable text exactly once: HTML, MIME alternatives, forwards, mbox framing,
wrong charsets, old dates. Each fixture is written here; each case failed before the real-mail fixes (issue 13)."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from drill.envs.inbox.ingest import ingest
from drill.envs.inbox.mime import decode_text, parse_message
from drill.envs.inbox.store import MailStore

HEAD = ("Message-ID: <{id}@example.com>\nDate: Mon, 14 May 2001 16:39:00 -0700\nFrom: Ann Lee <ann@example.com>\n"
        "To: bob@example.com\nSubject: {subject}\nMIME-Version: 1.0\n")


def raw(id: str, body: str, content_type: str = "text/plain; charset=utf-8", subject: str = "test") -> bytes:
    return (HEAD.format(id=id, subject=subject) + f"Content-Type: {content_type}\n\n" + body).encode()


def message(id: str) -> EmailMessage:
    msg = EmailMessage()
    msg["Message-ID"] = f"<{id}@example.com>"
    msg["Date"] = "Mon, 14 May 2001 16:39:00 -0700"
    msg["From"] = "Ann Lee <ann@example.com>"
    msg["To"] = "bob@example.com"
    msg["Subject"] = id
    return msg


@pytest.fixture
def store(tmp_path: Path) -> MailStore:
    return MailStore(tmp_path / "mail.db")


def test_html_table_cells_stay_apart() -> None:
    html = ("<html><body><p>Your itinerary:</p><table><tr><td>Flight</td><td>LH441</td></tr>"
            "<tr><td>Seat</td><td>12A</td></tr></table></body></html>")
    body = parse_message(raw("table", html, "text/html; charset=utf-8")).body
    assert "Flight LH441" in body and "Seat 12A" in body and "FlightLH441" not in body


def test_an_unclosed_head_does_not_empty_the_body() -> None:
    html = "<html><head><title>Notice</title><style>p {color: red}</style><body><p>The vault code is 4471.</p>"
    body = parse_message(raw("head", html, "text/html; charset=utf-8")).body
    assert body == "The vault code is 4471."


def test_a_placeholder_plain_alternative_gives_way_to_the_html() -> None:
    msg = message("placeholder")
    msg.set_content("This message is in HTML format.")
    msg.add_alternative("<html><body><p>The offsite moves to the Granite Lodge in Boulder on June 3.</p>"
                        "<p>Bring hiking boots and the Q2 deck.</p></body></html>", subtype="html")
    body = parse_message(msg.as_bytes()).body
    assert "Granite Lodge in Boulder" in body and "hiking boots" in body
    real = message("real-plain")
    real.set_content("The offsite moves to the Granite Lodge in Boulder on June 3. Bring hiking boots.")
    real.add_alternative("<p>The offsite moves to the <b>Granite Lodge</b> in Boulder on June 3. "
                         "Bring hiking boots.</p>", subtype="html")
    assert parse_message(real.as_bytes()).body.count("Granite Lodge") == 1  # one version, not both


def test_every_inline_text_part_is_kept_in_order() -> None:
    msg = message("two-parts")
    msg.set_content("First part: the budget is $48,500.")
    msg.add_attachment("Second part: approved by Omar.", disposition="inline")
    msg.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="budget.pdf")
    msg.add_attachment("a text attachment", filename="notes.txt")
    record = parse_message(msg.as_bytes())
    assert record.body == "First part: the budget is $48,500.\n\nSecond part: approved by Omar."
    assert record.attachments == ("budget.pdf", "notes.txt")


def test_nested_forwards_appear_once_each() -> None:
    inner = message("depth-0")
    inner.set_content("The innermost fact: the launch is on October 9.")
    for depth in range(1, 6):
        outer = message(f"depth-{depth}")
        outer.set_content(f"Forwarding, level {depth}.")
        outer.add_attachment(inner)
        inner = outer
    body = parse_message(inner.as_bytes()).body
    assert body.count("the launch is on October 9") == 1
    assert body.count("---------- Forwarded message ----------") == 5
    assert [body.count(f"Forwarding, level {d}.") for d in range(1, 6)] == [1] * 5


def test_mbox_from_lines_inside_bodies_do_not_cut_messages(tmp_path: Path, store: MailStore) -> None:
    first = raw("mbox-1", "Hello,\n\nFrom here on we ship on Tuesdays.\n>From the quoted archive: keep this.\n"
                          "From 9:00 to 17:00 the desk is staffed.\nThe code is K-77.\n").decode()
    second = raw("mbox-2", "Second message body.\n").decode()
    mboxcl2_body = "Content-Length says 51 bytes.\n\nFrom me Mon Jan 1 00:00:00 2024\n"
    third = (HEAD.format(id="mbox-3", subject="cl2") + f"Content-Length: {len(mboxcl2_body)}\n\n" + mboxcl2_body)
    path = tmp_path / "archive.mbox"
    path.write_text(f"From ann@example.com Mon May 14 23:39:00 2001\n{first}\n"
                    f"From ann@example.com Tue May 15 08:00:00 2001\n{second}\n"
                    f"From ann@example.com Tue May 15 09:00:00 2001\n{third}\n")
    report = ingest(path, store, "bob")
    assert (report.added, report.duplicates, report.skipped) == (3, 0, [])
    one = store.read("bob", "mbox-1@example.com")
    assert one is not None and "From here on we ship" in one.body and "The code is K-77." in one.body
    assert "\nFrom the quoted archive: keep this." in one.body  # mboxrd: one level of > quoting undone
    three = store.read("bob", "mbox-3@example.com")
    assert three is not None and three.body.endswith("From me Mon Jan 1 00:00:00 2024")  # Content-Length honoured


def test_a_maildir_file_with_an_envelope_line_is_one_message(tmp_path: Path, store: MailStore) -> None:
    box = tmp_path / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (box / sub).mkdir(parents=True)
    body = "Line one.\n\nFrom ann@example.com Mon May 14 23:39:00 2001\nLine after an envelope-looking line.\n"
    (box / "cur" / "1700000000.1.host:2,S").write_bytes(b"From - Mon May 14 23:39:00 2001\n" + raw("env", body))
    report = ingest(box, store, "bob")
    assert (report.added, report.skipped) == (1, [])
    stored = store.read("bob", "env@example.com")
    assert stored is not None and "Line after an envelope-looking line." in stored.body
    assert stored.subject == "test" and stored.sender == "ann@example.com"


@pytest.mark.parametrize(("text", "declared", "codec"), [
    ("朱镕基说项目预算为三百万元。", "gb2312", "gbk"),  # 镕 is GBK, not GB2312
    ("Rendez-vous au café Müller à 10h.", "iso-8859-1", "utf-8"),
    ("He said “the price is €40” — final.", "latin-1", "cp1252"),
    ("Prix: 12 € pour la crème brûlée.", "utf-8", "cp1252"),
    ("naïve résumé", "x-klingon", "utf-8"),
    ("Rendez-vous au café Müller à 10h.", None, "latin-1"),
])
def test_wrong_but_decodable_charsets_fall_back(text: str, declared: str | None, codec: str) -> None:
    assert decode_text(text.encode(codec), declared) == text
    content_type = f"text/plain; charset={declared}" if declared else "text/plain"
    mail = (HEAD.format(id="cs", subject="cs") + f"Content-Type: {content_type}\n"
            "Content-Transfer-Encoding: 8bit\n\n").encode() + text.encode(codec)
    assert parse_message(mail).body == text


def test_years_below_1000_are_zero_padded_and_sort_as_oldest(store: MailStore) -> None:
    old = parse_message(raw("old", "ancient mail").replace(b"Mon, 14 May 2001", b"Thu, 14 May 999"))
    new = parse_message(raw("new", "recent mail"))
    assert old.date == "0999-05-14 23:39:00"
    store.add("bob", [old, new])
    assert [h.message_id for h in store.search("bob", "")] == ["new@example.com", "old@example.com"]
    assert [h.message_id for h in store.search("bob", "mail", sent_before="1000-01-01")] == ["old@example.com"]


def test_enron_x_from_names_become_the_display_name(store: MailStore) -> None:
    mail = (b"Message-ID: <x@enron.com>\nDate: Mon, 14 May 2001 16:39:00 -0700\nFrom: helen.okafor@enron.com\n"
            b"To: tim.belden@enron.com\nSubject: gas\nX-From: Okafor, Helen </O=ENRON/OU=NA/CN=RECIPIENTS/CN=HOKAFOR>\n"
            b"X-To: Belden, Tim </O=ENRON/OU=NA/CN=RECIPIENTS/CN=TBELDEN>\n\nThe June number is 3.2.\n")
    record = parse_message(mail)
    assert (record.sender, record.sender_name) == ("helen.okafor@enron.com", "Okafor, Helen")
    assert record.recipient_aliases == ("Belden, Tim",)


def test_a_multipart_without_its_boundary_is_read_as_text() -> None:
    body = parse_message(raw("no-boundary", "The gate code is 5512.\n", "multipart/mixed")).body
    assert body == "The gate code is 5512."


def test_a_wrong_content_length_falls_back_to_envelope_framing(tmp_path: Path, store: MailStore) -> None:
    first = HEAD.format(id="bad-length", subject="cl") + "Content-Length: 7\n\nThe whole body survives.\n"
    second = raw("after", "Next message.\n").decode()
    path = tmp_path / "cl.mbox"
    path.write_text(f"From a@b Mon May 14 23:39:00 2001\n{first}\nFrom a@b Mon May 14 23:40:00 2001\n{second}")
    assert ingest(path, store, "bob").added == 2
    stored = store.read("bob", "bad-length@example.com")
    assert stored is not None and stored.body == "The whole body survives."
