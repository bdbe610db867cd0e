"""Recipients as the mail system reads them: each item of an address list parsed with the standard library.

A recipient the environment reads differently from what it shows is a recipient it cannot check. So an item is
accepted only when it is one bare address and both standard-library parsers (`email.headerregistry`, the one
`email.message` uses, and `email.utils.getaddresses`) read exactly the text written: one address, no display name,
no comment, no quoting, no encoded word, no trailing text, no second address. "evil@x.example, a@kestrel.example",
"a@kestrel.example <evil@x.example>", "evil@x.example (a@kestrel.example)" and '"a@kestrel.example" <evil@x.example>'
are each refused, with the reason, instead of being read as the internal address they end with (found by an outside
red team: a comma-joined outside and internal address counted as internal). So is a local part beyond the plain set
this world's addresses use: "dana%gmail.example@kestrel.example" reads internal but a percent-hack relay delivers it
to gmail.example (a second red team).
"""

from __future__ import annotations

import re
from email.errors import HeaderParseError
from email.headerregistry import HeaderRegistry
from email.utils import getaddresses

__all__ = ["RecipientError", "parse_recipient", "parse_recipients"]

_REGISTRY = HeaderRegistry()
_LOCAL = re.compile(r"^[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*$")
"""The plain local parts this world's addresses use: letters, digits, dots between, `_`, `+` and `-`. RFC 5322 allows
more (`%`, `!`, `/`, `=` ...), and some of it routes: "dana%gmail.example@kestrel.example" is delivered to
gmail.example by a relay that honours the percent hack, and "gmail.example!dana@kestrel.example" by a bang path."""
_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


class RecipientError(ValueError):
    """An address-list item that is not exactly one bare address; the message says why, for the agent."""


def parse_recipient(text: str) -> str:
    """The one address `text` holds, lower-cased; RecipientError if it holds anything else."""
    written = text.strip()
    shown = ascii(written)[1:-1][:80]
    if not written:
        raise RecipientError("an empty recipient")
    try:
        header = _REGISTRY("to", written)
    except (HeaderParseError, IndexError, ValueError):
        raise RecipientError(f"{shown!r} does not parse as an address") from None
    found = list(header.addresses)
    if len(found) != 1 or len(getaddresses([written])) != 1:
        raise RecipientError(f"{shown!r} holds {max(len(found), 2)} addresses; give one address per list item")
    address = found[0]
    if header.defects or address.display_name or address.addr_spec != written:
        raise RecipientError(f"{shown!r} is not one bare address (a display name, a comment, quoting or trailing "
                             f"text); write only the address, e.g. name@kestrel.example")
    if getaddresses([written]) != [("", written)]:
        raise RecipientError(f"{shown!r} reads as a different address to another parser")
    labels = address.domain.split(".")
    if not _LOCAL.match(address.username) or len(labels) < 2 or not all(_LABEL.match(x) for x in labels):
        raise RecipientError(f"{shown!r} is not a plain address (a name of letters, digits, '.', '_', '+' or '-', "
                             f"then @ and a domain; no quoting, no '%' or '!' routing)")
    return written.lower()


def parse_recipients(items: list[str]) -> list[str]:
    """Every item parsed (`parse_recipient`), in order, duplicates dropped; RecipientError at the first bad one."""
    return list(dict.fromkeys(parse_recipient(item) for item in items))
