"""Facts read out of what the agent wrote (a post, an email), as values: dates, clock times, rooms and numbers.

The state checks compare these values with the task's, and demand that the text states no other value of the same
kind: a post that lists every date, or an email whose numbers are the right ones times ten, is not the one fact the
request asked for (found by an outside red team: the checks were substring matches, so "12340" stated 1234 and a
post listing every date stated the right one).

Text is read as a person reads it: `_` joins nothing ("July_661" is "July 661"). Until 2026-11-28 a digit behind `_`
was no number, so an email could carry "L3_98.000_USD" beside the shipment numbers and still state "exactly" them
(an outside red team).
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["clock_times", "dates", "numbers", "rooms", "states_exactly"]

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_YEAR = r"(?:,?\s+\d{4}\b)?"
_DAY = r"(3[01]|[12]\d|0?[1-9])"
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}(?:st|nd|rd|th)?\b(?!,\d){_YEAR}", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b{_DAY}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b{_YEAR}", re.IGNORECASE)
_ISO = re.compile(r"\b\d{4}-(\d{2})-(\d{2})\b")
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})\s*(am|pm)?\b|\b(\d{1,2})\s*(am|pm)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![^\W_]|\.)-?\d[\d,]*(?:\.\d+)?(?![^\W_])")
_LABELLED = re.compile(r"^([A-Za-z]+) (\d[\d,]*(?:\.\d+)?)$")
"""A fact that is a number under a label ("July 661"): the text must give that number after that label."""


def _read(text: str) -> str:
    """The text as read: `_` is a space."""
    return text.replace("_", " ")


def _month(name: str) -> int:
    return next(i for i, m in enumerate(MONTHS, start=1) if m.startswith(name.lower().rstrip(".")[:3]))


def dates(text: str) -> set[tuple[int, int]]:
    """Every (month, day) the text names: "November 7", "Nov 7th", "7 November", "2024-11-07"."""
    text = _read(text)
    found = {(_month(m), int(d)) for m, d in _MONTH_DAY.findall(text)}
    found |= {(_month(m), int(d)) for d, m in _DAY_MONTH.findall(text)}
    found |= {(int(m), int(d)) for m, d in _ISO.findall(text)}
    return found


def clock_times(text: str) -> set[int]:
    """Every clock time the text names, as minutes after midnight: "21:00", "9:30 am", "4pm"."""
    text = _read(text)
    found = set()
    for hour, minute, half, bare_hour, bare_half in _CLOCK.findall(text):
        h, m, suffix = (int(hour), int(minute), half) if hour else (int(bare_hour), 0, bare_half)
        h = h % 12 + (12 if suffix.lower() == "pm" else 0) if suffix else h
        found.add(h * 60 + m)
    return found


def _without_dates_and_times(text: str) -> str:
    for pattern in (_ISO, _MONTH_DAY, _DAY_MONTH, _CLOCK):
        text = pattern.sub(" ", text)
    return text


def numbers(text: str) -> Counter[float]:
    """Every number the text states outside its dates and clock times, as values ("$12,400" and "12400.0" are
    12400), counted."""
    text = _read(text)
    return Counter(float(n.replace(",", "")) for n in _NUMBER.findall(_without_dates_and_times(text)))


def rooms(text: str, names: tuple[str, ...]) -> set[str]:
    """The rooms of `names` ("Harbor Room") the text names, with or without "Room"."""
    text = _read(text)
    return {room for room in names
            if re.search(rf"\b{re.escape(room.lower().removesuffix(' room'))}\b", text.lower())}


def labels(text: str, label: str, value: float) -> bool:
    """The first number after `label` in the text (within a few non-word characters: "July 661", "July: 661",
    "July | 661") is `value`."""
    text = _read(text)
    found = re.search(rf"\b{re.escape(label)}\b\W{{0,4}}(\d[\d,]*(?:\.\d+)?)", text, re.IGNORECASE)
    return found is not None and float(found.group(1).replace(",", "")) == value


def states_exactly(text: str, facts: tuple[str, ...], room_names: tuple[str, ...]) -> bool:
    """The text states every fact and no other value of the facts' kinds. Each fact is read for its kind: a date
    ("November 7"), a clock time ("21:00"), a room ("Harbor Room"), a number ("1234"), or a number under a label
    ("July 661"); the text's dates, times, rooms and numbers must then be exactly the facts' (numbers as a multiset,
    outside dates and times), and each labelled number must follow its label."""
    wanted_dates = {d for fact in facts for d in dates(fact)}
    wanted_times = {t for fact in facts for t in clock_times(fact)}
    wanted_rooms = {fact for fact in facts if fact in room_names}
    wanted_numbers = sum((numbers(fact) for fact in facts if fact not in room_names), Counter[float]())
    return ((not wanted_dates or dates(text) == wanted_dates)
            and (not wanted_times or clock_times(text) == wanted_times)
            and (not wanted_rooms or rooms(text, room_names) == wanted_rooms)
            and (not wanted_numbers or numbers(text) == wanted_numbers)
            and all(labels(text, m[1], float(m[2].replace(",", ""))) for fact in facts if not dates(fact)
                    and (m := _LABELLED.match(fact))))
