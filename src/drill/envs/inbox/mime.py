"""One raw RFC 822 message to a `MailRecord`: headers, body text, charsets, forwarded messages, attachments.

Parsing uses `email` with `email.policy.default` (parsed headers memoized). The body keeps every piece of
readable text once:

* the MIME tree is walked part by part (never with `Message.walk()`, which would also walk into forwarded
  messages and repeat them): every inline text part is kept, in order (a multipart whose boundary is missing
  is read as plain text); HTML is turned
  into text by `inscriptis` (table cells stay apart, `<head>`/`<script>`/`<style>` dropped, unclosed tags
  tolerated), or past `MAX_LAYOUT_HTML` characters by a linear-time tag strip;
* of a multipart/alternative (`_alternative`), the primary version is the text/plain one, unless it is a
  placeholder (at most `MAX_PLACEHOLDER_WORDS` distinct words saying it stands in for HTML: "This message is
  in HTML format", "view it in your browser") or has fewer than half the distinct words of the richest
  version, which is primary instead; then each other version adds its lines that hold a word not yet kept, so
  an HTML version that says more than the plain one is indexed too, and one that repeats it adds nothing;
* a forwarded message (message/rfc822) becomes a `---------- Forwarded message ----------` block with its
  From/Date/Subject/To and its own body, once, however deep the nesting;
* parts with `Content-Disposition: attachment` and non-text parts are attachments: their names are kept.

Charsets (`decode_text`): every text codec Python knows, by any of its labels (and a few common MIME labels it
does not: windows-31j, cp50221, x-euc-jp, ...); codec names that are not charsets (base64, rot13) count as no
label. All-ASCII bytes are ASCII, unless the label is a 7-bit charset (ISO-2022-JP/-KR, UTF-7, HZ: read with it)
or the bytes switch to an ISO-2022 multibyte set (raw JIS in a header, JIS labelled us-ascii): ISO-2022-JP is
read as ISO-2022-JP-2, and what that refuses as Windows writes it (CP50221: NEC/IBM extensions such as ①, and
half-width katakana). Non-ASCII bytes that are valid UTF-8 are UTF-8 whatever the label says (UTF-8 labelled
iso-8859-1 is common, and valid UTF-8 by accident is not); a legacy label is read as its superset, as browsers
do (WHATWG encoding labels: latin-1/ASCII as cp1252, gb2312/GBK as GB18030, EUC-KR as cp949, Shift_JIS as cp932,
Big5 as Big5-HKSCS); an unknown label, none, or bytes the label cannot decode go to `charset-normalizer`,
preferring cp1252 among its equally good guesses; as a last resort, cp1252 with replacement characters.
Decoding never fails. Headers: RFC 2047 encoded words, raw 8-bit bytes and raw ISO-2022 are decoded the same way.

Enron-style headers: `From:` often holds a bare address with the name only in `X-From:`; the X-From name
becomes the display name, and X-From/X-To/X-cc/X-bcc names are kept as aliases the address filters match.
Dates are stored as zero-padded UTC text; a missing or unparseable Date is NULL.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import re
from email import policy
from email.errors import HeaderParseError, MessageError
from email.header import decode_header
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.policy import EmailPolicy
from email.utils import getaddresses, parsedate_to_datetime
from html import unescape
from typing import Any

from charset_normalizer import from_bytes
from inscriptis import get_text

from drill.envs.inbox.query import utc_text
from drill.envs.inbox.store import MailRecord, Recipient, normalize_message_id

__all__ = ["CorruptMessage", "decode_text", "html_to_text", "parse_message"]

MAX_FORWARD_DEPTH = 20
"""Forwarded messages nested deeper than this keep their headers only (a guard against pathological input)."""


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
_SUPERSETS = {"ascii": "cp1252", "iso8859-1": "cp1252", "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949",
              "shift_jis": "cp932", "big5": "big5hkscs", "iso8859-9": "cp1254", "tis-620": "cp874",
              "iso8859-11": "cp874", "iso2022_jp": "iso2022_jp_2", "iso2022_jp_1": "iso2022_jp_2"}
_LABELS = {"windows-31j": "cp932", "x-sjis": "cp932", "cp50220": "iso2022_jp", "cp50221": "iso2022_jp",
           "cp50222": "iso2022_jp", "x-euc-jp": "euc_jp", "x-gbk": "gbk", "windows-874": "cp874",
           "iso-8859-8-i": "iso8859_8", "x-mac-roman": "mac_roman", "utf8mb4": "utf-8"}
"""Common MIME charset labels that Python's codec registry does not know, as a codec it does."""
_SEVEN_BIT = ("iso2022", "utf-7", "utf_7", "hz")
"""Python's codecs that write non-ASCII text in ASCII bytes; every other codec reads an ASCII payload as ASCII
(an all-ASCII payload labelled EBCDIC or UTF-16 is mislabelled ASCII, or UTF-16 ASCII whose NULs are dropped)."""
_ISO2022_ESCAPE = re.compile(rb"\x1b(?:\$[@AB]|\$\(|\$\)|\(I)")
"""An ISO-2022 switch to a multibyte set or to katakana (never ANSI terminal codes, nor ESC ( B alone)."""
_NOT_ASCII_COMPATIBLE = ("utf_16", "utf_32", "utf_7", "cp037", "cp500", "cp1140")
MAX_LAYOUT_HTML = 1_000_000
"""HTML bodies longer than this (in characters) skip inscriptis's layout for a linear tag strip (`_strip_tags`)."""
_HTML_INVISIBLE = re.compile(r"<(head|script|style)\b|<!--")  # matched on lower-cased text
_HTML_BLOCK_TAG = re.compile(r"</?(p|div|br|tr|li|h[1-6]|table|ul|ol|blockquote|pre|hr|section|article)\b[^<>]*>",
                             re.IGNORECASE)
_HTML_TAG = re.compile(r"<[^<>]*>")  # [^<>]: a stray "<" never makes a match scan to the end
_WORD = re.compile(r"[^\W_]+")
MAX_PLACEHOLDER_WORDS = 40
"""A text/plain alternative this short that says it stands in for HTML is a placeholder (`_PLACEHOLDER`)."""
_PLACEHOLDER = re.compile(
    r"html[- ](format|version|mail|e-?mail|message|capable|enabled|compatible)|(support|display|read)s? html"
    r"|(view|read|open|see) (it|this|the)( (message|e-?mail|newsletter|mail))? (in|with|on|using) (a|an|your)"
    r" (web[- ]?)?browser|(mail|e-?mail) (client|program|reader|software|application|viewer) (does ?n[o']t"
    r"|can ?n[o']t|is unable|may not)|multi-?part message in mime format", re.IGNORECASE)
_ANGLE_PART = re.compile(r"<[^<>]*>")  # Exchange paths in X-From/X-To: "Allen, Phillip K </O=ENRON/OU=NA/...>"


class CorruptMessage(ValueError):
    """A source that cannot be read as an email. The message is the reason shown in the ingest summary."""


# -- text --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _codec(label: str | None) -> str | None:
    """The Python text codec for a MIME charset label (read as its superset), or None if there is none."""
    if not label:
        return None
    name = label.strip().strip('"').strip("'").lower()
    try:
        info = codecs.lookup(_LABELS.get(name, name))
    except (LookupError, ValueError):
        return None
    if not info._is_text_encoding:  # base64, rot13, zlib...: codecs.lookup knows them, but they are not charsets
        return None
    return _SUPERSETS.get(info.name, info.name)


def _iso2022jp_as_cp932(payload: bytes) -> str:
    """ISO-2022-JP as Windows writes it (CP50221): JIS X 0208 pairs turned into Shift_JIS and read as cp932, so
    NEC and IBM extensions (①, Ⅲ, ㈱) and half-width katakana (ESC ( I) decode; what is left is replaced."""
    out = bytearray()
    mode = b"\x1b(B"
    for piece in re.split(rb"(\x1b(?:\$[@B]|\$\(D|\([BJI]))", payload):
        if piece.startswith(b"\x1b"):
            mode = piece
            continue
        if mode in (b"\x1b$@", b"\x1b$B"):  # JIS X 0208
            for j1, j2 in zip(piece[::2], piece[1::2]):
                s1 = (j1 + 1) // 2 + 0x70
                s1 += 0x40 if s1 >= 0xA0 else 0
                s2 = (j2 + 0x1F + (j2 >= 0x60)) if j1 % 2 else j2 + 0x7E
                out += bytes((s1 & 0xFF, s2 & 0xFF))
        elif mode == b"\x1b(I":  # JIS X 0201 katakana: 0x21-0x5F are 0xA1-0xDF in Shift_JIS
            out += bytes(b | 0x80 for b in piece)
        elif mode == b"\x1b$(D":  # JIS X 0212 has no Shift_JIS form
            out += b"?" * (len(piece) // 2)
        else:
            out += piece
    return out.decode("cp932", errors="replace")


def _seven_bit(payload: bytes, codec: str | None) -> str:
    """An all-ASCII payload: ASCII, unless the declared charset is a 7-bit one (ISO-2022, UTF-7, HZ), or the
    payload holds an ISO-2022 escape sequence (raw JIS in a header, JIS labelled us-ascii or unlabelled)."""
    if codec is not None and codec.startswith(_SEVEN_BIT):
        try:
            return payload.decode(codec)
        except UnicodeDecodeError:
            if codec.startswith("iso2022_jp"):
                return _iso2022jp_as_cp932(payload)
    elif b"\x1b" in payload and _ISO2022_ESCAPE.search(payload):
        try:
            return payload.decode("iso2022_kr" if b"\x1b$)C" in payload else "iso2022_jp_2")
        except UnicodeDecodeError:
            return _iso2022jp_as_cp932(payload)
    return payload.decode("ascii")


def decode_text(payload: bytes, label: str | None) -> str:
    """Bytes with a declared charset (possibly wrong, unknown or missing) as text; see the module doc."""
    codec = _codec(label)
    if payload.isascii():
        return _seven_bit(payload, codec)
    if codec is None or not codec.startswith(_NOT_ASCII_COMPATIBLE):
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            pass
    if codec is not None:
        try:
            return payload.decode(codec)
        except UnicodeDecodeError:
            pass
    matches = list(from_bytes(payload))
    if matches:
        least = min(m.chaos for m in matches)
        tied = [m for m in matches if m.chaos <= least]
        chosen = next((m for m in tied if m.encoding == "cp1252"), tied[0])
        return str(chosen)
    return payload.decode("cp1252", errors="replace")


def _drop_invisible(html: str) -> str:
    """`html` without its head, scripts, styles and comments. An element never closed is kept (only its tag is
    stripped), and a closing tag is looked for once per kind after it was missing, so the time stays linear."""
    lowered = html.lower()
    kept: list[str] = []
    position = 0
    unclosed: set[str] = set()
    for opening in _HTML_INVISIBLE.finditer(lowered):
        closing = "-->" if opening.group() == "<!--" else f"</{opening.group(1)}"
        if opening.start() < position or closing in unclosed:
            continue
        end = lowered.find(closing, opening.end())
        if end < 0:
            unclosed.add(closing)
            continue
        kept.append(html[position:opening.start()])
        position = end + len(closing)
    return " ".join([*kept, html[position:]])


def _strip_tags(html: str) -> str:
    """Text of an HTML body by regular expressions, in time linear in its size: head, scripts, styles and comments
    dropped, a line break at each block tag, a space at each other tag, entities decoded."""
    html = _HTML_BLOCK_TAG.sub("\n", _drop_invisible(html))
    return unescape(_HTML_TAG.sub(" ", html))


def html_to_text(html: str) -> str:
    """Readable text of an HTML body: one line per block, cells and list items apart, blank lines dropped.
    Bodies over `MAX_LAYOUT_HTML` characters are read by `_strip_tags` (inscriptis's layout time grows faster
    than the size: a 2 MB table takes seconds)."""
    if len(html) > MAX_LAYOUT_HTML:
        text = _strip_tags(html)
    else:
        try:
            text = get_text(html)
        except (ValueError, TypeError):  # lxml refuses a few oddities (an encoding declaration in a str)
            text = get_text(html.encode("utf-8", "replace").decode("ascii", "ignore"))
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _part_text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    text = decode_text(payload, part.get_content_charset())
    if part.get_content_type() == "text/html":
        text = html_to_text(text)
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()


# -- headers -----------------------------------------------------------------------------------------


def _decoded(value: str) -> str:
    """A raw header value as text: RFC 2047 encoded words decoded, raw 8-bit bytes decoded like bodies."""
    if any("\udc80" <= c <= "\udcff" for c in value):  # undeclared 8-bit bytes, kept by the parser as surrogates
        value = decode_text(value.encode("ascii", "surrogateescape"), None)
    elif "\x1b" in value and value.isascii():  # raw ISO-2022-JP, as old Japanese mailers wrote headers
        value = decode_text(value.encode("ascii"), None)
    if "=?" in value:
        try:
            parts = decode_header(value)
        except _HEADER_ERRORS:
            parts = [(value, None)]
        value = "".join(decode_text(p, charset) if isinstance(p, bytes) else p for p, charset in parts)
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


def _x_names(headers: dict[str, list[str]], name: str) -> str:
    """An Enron X-From/X-To/X-cc value without its Exchange paths (`<...>`)."""
    return " ".join(_ANGLE_PART.sub(" ", _header_text(headers, name)).split()).strip(" ,")


def _utc_date(text: str) -> str | None:
    if not text:
        return None
    try:
        return utc_text(parsedate_to_datetime(text))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# -- body --------------------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    """Distinct words, roughly as the search index's unicode61 tokenizer splits them (letters and digits)."""
    return set(_WORD.findall(text.lower()))


def _is_placeholder(text: str, words: set[str]) -> bool:
    return len(words) <= MAX_PLACEHOLDER_WORDS and _PLACEHOLDER.search(text) is not None


def _alternative(parts: list[tuple[list[str], list[str]]], types: list[str]) -> tuple[list[str], list[str]]:
    """The text of a multipart/alternative: the primary version, then the lines of the others that hold a word
    not kept yet (an HTML version that says more than the plain one is indexed too; one that repeats it adds
    nothing). The primary version is the text/plain one, or the version with the most distinct words where the
    plain one is a placeholder or has fewer than half as many; a placeholder's words are dropped."""
    texts = ["\n\n".join(blocks) for blocks, _ in parts]
    words = [_words(text) for text in texts]
    placeholders = {i for i, ctype in enumerate(types) if ctype == "text/plain" and _is_placeholder(texts[i], words[i])}
    if all(not w for i, w in enumerate(words) if i not in placeholders):
        placeholders = set()  # nothing stands behind the placeholder: it is the message
    richest = max((i for i in range(len(parts)) if i not in placeholders), key=lambda i: len(words[i]))
    plain = next((i for i, ctype in enumerate(types) if ctype == "text/plain" and i not in placeholders), None)
    primary = plain if plain is not None and len(words[plain]) * 2 >= len(words[richest]) else richest
    kept, seen = list(parts[primary][0]), set(words[primary])
    for i, text in enumerate(texts):
        if i == primary or i in placeholders or words[i] <= seen:
            continue
        kept.append("\n".join(line for line in text.splitlines() if not _words(line) <= seen))
        seen |= words[i]
    return kept, [name for _, names in parts for name in names]


def _content(part: Message, depth: int) -> tuple[list[str], list[str]]:
    """(text blocks, attachment names) of one MIME part and everything under it, each exactly once."""
    ctype = part.get_content_type()
    if ctype == "message/rfc822":
        inner = part.get_payload()
        inner_msg = inner[0] if isinstance(inner, list) and inner else None
        if not isinstance(inner_msg, Message):
            return [], []
        return _forwarded(inner_msg, depth + 1)
    if part.is_multipart():
        children = [c for c in part.get_payload() if isinstance(c, Message)]
        results = [_content(child, depth) for child in children]
        if ctype == "multipart/alternative" and results:
            return _alternative(results, [c.get_content_type() for c in children])
        return [t for texts, _ in results for t in texts], [a for _, names in results for a in names]
    filename = part.get_filename()
    readable = ctype.startswith("text/") or ctype.startswith("multipart/")  # a multipart without a boundary
    if readable and part.get_content_disposition() != "attachment":
        text = _part_text(part)
        return ([text] if text else []), []
    return [], ([_decoded(str(filename))] if filename else [])


def _forwarded(msg: Message, depth: int) -> tuple[list[str], list[str]]:
    headers = _headers(msg)
    lines = ["---------- Forwarded message ----------"]
    for name in ("From", "Date", "Subject", "To"):
        value = _header_text(headers, name.lower())
        if value:
            lines.append(f"{name}: {value}")
    if depth > MAX_FORWARD_DEPTH:
        return ["\n".join(lines)], []
    texts, attachments = _content(msg, depth)
    return ["\n".join(lines) + "\n\n" + "\n\n".join(texts)], attachments


def parse_message(raw: bytes) -> MailRecord:
    """Parse one RFC 822 message. Raises CorruptMessage if it is empty or has no mail headers at all.

    A leading mbox envelope line (`From - Mon Jan 1 ...`, as some maildir tools write) is not a header and
    is ignored.
    """
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
    x_from = _x_names(headers, "x-from")
    if x_from and not sender_name and "@" not in x_from:
        sender_name = x_from
    recipients = tuple(Recipient(address=a, name=n, kind=kind)
                       for kind in ("to", "cc", "bcc") for n, a in _addresses(headers, kind))
    try:
        texts, attachments = _content(msg, 0)
    except _HEADER_ERRORS as exc:
        raise CorruptMessage(f"unreadable MIME structure: {exc}") from exc
    return MailRecord(
        message_id=message_id,
        subject=_header_text(headers, "subject"),
        sender=sender,
        sender_name=sender_name,
        date=_utc_date(_header_text(headers, "date")),
        body="\n\n".join(texts),
        recipients=recipients,
        attachments=tuple(dict.fromkeys(attachments)),
        source_hash=source_hash,
        sender_aliases=tuple(a for a in (x_from,) if a and a != sender_name),
        recipient_aliases=tuple(a for a in (_x_names(headers, n) for n in ("x-to", "x-cc", "x-bcc")) if a),
    )
