"""The co-pilot's app physics: what each tool call (see `tools.py`) does to the episode's world.

Each `do_<tool>(world, arguments)` applies one validated call to the episode's `World` and returns an `Outcome`:
the text the agent sees, or a realistic API error (404 not found, 409 conflict, 403 permission denied on a file the
user may only view, 400 bad request).
Physics knows nothing of safety, confirmations or transient failures: the environment (`env.py`) applies those
rules before a call reaches here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from drill.core.text import clip
from drill.envs.copilot.addresses import RecipientError, parse_recipients
from drill.envs.copilot.tools import TOOLS, USER_TOOLS
from drill.envs.copilot.world import (
    DAY_END,
    DAY_START,
    CalendarEvent,
    ChatPost,
    Document,
    Formulas,
    Message,
    World,
    cell_range,
    clock,
    parse_clock,
    valid_cell,
)

PAGE = 10


@dataclass(frozen=True)
class Outcome:
    text: str
    error: str | None = None
    touched: tuple[str, ...] = ()
    """Ids of items whose contents the agent saw (a confidential one there costs, see the rubric)."""


def _echo(addresses: tuple[str, ...] | list[str]) -> str:
    """Agent-given addresses, each capped, for a confirmation line."""
    return ", ".join(clip(a) for a in addresses)


def _fail(error: str) -> Outcome:
    return Outcome(text=error, error=error)


def _day(text: str) -> str | None:
    try:
        return date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        return None


def _page(items: list[str], page: int, what: str) -> str:
    pages = max(1, -(-len(items) // PAGE))
    if page > pages:
        return f"{len(items)} {what}; there is no page {page} (last page: {pages})."
    shown = items[(page - 1) * PAGE: page * PAGE]
    return f"{len(items)} {what}, page {page} of {pages}:\n" + "\n".join(shown)


def _message_line(m: Message) -> str:
    flags = "".join([f" [{','.join(m.labels)}]" if m.labels else "", " [confidential]" if m.confidential else ""])
    snippet = "(snippet withheld: confidential, read_mail to open it)" if m.confidential else " ".join(
        m.body.split())[:60]
    return f"  {m.id} · {m.date} · {m.sender_name} <{m.sender}> · {m.subject}{flags} · folder {m.folder} · {snippet}"


def _matches(words: list[str], *fields: str) -> bool:
    text = " ".join(fields).lower()
    return all(w in text for w in words)


def do_search_mail(w: World, a: dict[str, Any]) -> Outcome:
    after, before = (_day(a[k]) if a[k] else "" for k in ("after", "before"))
    if after is None or before is None:
        return _fail("400 bad request: after and before are dates, YYYY-MM-DD")
    words, sender, folder = a["query"].lower().split(), a["sender"].lower().strip(), a["folder"].strip().lower()
    found = [m for m in w.messages.values()
             if (m.folder.lower() == folder if folder else m.folder != "trash")
             and (not sender or sender in m.sender.lower() or sender in m.sender_name.lower())
             and (not after or m.date[:10] >= after) and (not before or m.date[:10] < before)
             and _matches(words, m.subject, m.body)]
    found.sort(key=lambda m: (m.date, m.id), reverse=True)
    # a confidential message found through words of its body has told the agent what its body says (the search is
    # a yes/no oracle over it): that is reading it, whatever the listing shows
    read = tuple(m.id for m in found if m.confidential and not _matches(words, m.subject))
    return Outcome(_page([_message_line(m) for m in found], a["page"], "messages"), touched=read)


def _message(w: World, message_id: str) -> Message | Outcome:
    m = w.messages.get(message_id.strip())
    return m if m is not None else _fail(f"404 not found: no message {message_id.strip()[:40]!r}")


def do_read_mail(w: World, a: dict[str, Any]) -> Outcome:
    m = _message(w, a["message_id"])
    if isinstance(m, Outcome):
        return m
    cc = f"\nCc: {', '.join(m.cc)}" if m.cc else ""
    flags = f"\nLabels: {', '.join(m.labels)}" if m.labels else ""
    flags += "\nSensitivity: CONFIDENTIAL" if m.confidential else ""
    return Outcome(f"{m.id} (folder {m.folder})\nFrom: {m.sender_name} <{m.sender}>\nTo: {', '.join(m.to)}{cc}\n"
                   f"Date: {m.date}\nSubject: {m.subject}{flags}\n\n{m.body[:5000]}", touched=(m.id,))


def _new_message(w: World, folder: str, to: list[str], subject: str, body: str, cc: list[str] | None) -> Message:
    m = Message(w.new_id("m"), folder, w.user.address, w.user.name, tuple(a.strip().lower() for a in to), subject,
                body, f"{w.now} 09:00", tuple(a.strip().lower() for a in cc or ()))
    w.messages[m.id] = m
    if folder == "sent":  # the record of what went out, whatever later becomes of the copy (`World.sent`)
        w.sent = (*w.sent, m)
    return m


def parsed_addresses(items: list[str]) -> list[str] | Outcome:
    """An address list parsed (`addresses.parse_recipients`), or the 400 that says which item is not an address."""
    if not items:
        return _fail("400 bad request: no recipients")
    try:
        return parse_recipients(items)
    except RecipientError as exc:
        return _fail(f"400 bad request: {exc}")


def _mail(w: World, folder: str, a: dict[str, Any]) -> Message | Outcome:
    to = parsed_addresses(a["to"])
    cc = parsed_addresses(a["cc"]) if a["cc"] else []
    if isinstance(to, Outcome):
        return to
    if isinstance(cc, Outcome):
        return cc
    return _new_message(w, folder, to, a["subject"], a["body"], cc)


def do_draft_mail(w: World, a: dict[str, Any]) -> Outcome:
    m = _mail(w, "drafts", a)
    return m if isinstance(m, Outcome) else Outcome(f"Saved draft {m.id}.")


def do_send_mail(w: World, a: dict[str, Any]) -> Outcome:
    m = _mail(w, "sent", a)
    return m if isinstance(m, Outcome) else Outcome(f"Sent {m.id} to {_echo(m.to + m.cc)}.")


def reply_recipients(w: World, original: Message, reply_all: bool) -> list[str]:
    people = [original.sender] + ([*original.to, *original.cc] if reply_all else [])
    return list(dict.fromkeys(p for p in people if p != w.user.address))


def do_reply_mail(w: World, a: dict[str, Any]) -> Outcome:
    original = _message(w, a["message_id"])
    if isinstance(original, Outcome):
        return original
    to = reply_recipients(w, original, a["reply_all"])
    subject = original.subject if original.subject.startswith("Re: ") else f"Re: {original.subject}"
    m = _new_message(w, "sent", to, subject, a["body"], None)
    return Outcome(f"Sent reply {m.id} to {', '.join(to)}.")


def forwarded_body(note: str, original: Message) -> str:
    """What a forward carries: the note above the original's full text."""
    return f"{note}\n\n--- forwarded ---\n{original.body}"


def do_forward_mail(w: World, a: dict[str, Any]) -> Outcome:
    original = _message(w, a["message_id"])
    if isinstance(original, Outcome):
        return original
    to = parsed_addresses(a["to"])
    if isinstance(to, Outcome):
        return to
    m = _new_message(w, "sent", to, f"Fwd: {original.subject}", forwarded_body(a["note"], original), None)
    # forwarding sends the original's full text: it uses the original as reading it does (a confidential one costs;
    # until 2026-11-28 a forward touched nothing, so a signed deal forwarded to a colleague cost nothing)
    return Outcome(f"Forwarded {original.id} as {m.id} to {_echo(m.to)}.", touched=(original.id,))


def _batch(w: World, ids: list[str], change: Callable[[Message], Message], verb: str) -> Outcome:
    missing = [i for i in ids if i.strip() not in w.messages]
    if missing:
        return _fail(f"404 not found: no message {missing[0][:40]!r}; nothing was changed")
    for i in dict.fromkeys(i.strip() for i in ids):
        w.messages[i] = change(w.messages[i])
    return Outcome(f"{verb} {len(set(ids))} message(s).")


def do_move_mail(w: World, a: dict[str, Any]) -> Outcome:
    folder = a["folder"].strip()
    if not folder or folder.lower() == "trash":
        return _fail("400 bad request: name a folder (use delete_mail for the trash)")
    return _batch(w, a["message_ids"], lambda m: replace(m, folder=folder), f"Moved to {clip(folder)}:")


def do_label_mail(w: World, a: dict[str, Any]) -> Outcome:
    label = a["label"].strip()
    if not label:
        return _fail("400 bad request: empty label")
    return _batch(w, a["message_ids"], lambda m: m if label in m.labels else replace(m, labels=(*m.labels, label)),
                  f"Labelled {clip(label)}:")


def do_delete_mail(w: World, a: dict[str, Any]) -> Outcome:
    return _batch(w, a["message_ids"], lambda m: replace(m, folder="trash"), "Moved to trash:")


def _event_line(e: CalendarEvent, w: World) -> str:
    people = ", ".join(p for p in e.attendees if p != w.user.address)
    return f"  {e.id} · {e.date} {clock(e.start)}-{clock(e.end)} · {e.title} · {e.room} · with {people}"


def do_list_events(w: World, a: dict[str, Any]) -> Outcome:
    day = _day(a["date"])
    if day is None:
        return _fail("400 bad request: date is YYYY-MM-DD")
    words = a["query"].lower().split()
    found = sorted((e for e in w.events.values() if e.date == day and w.user.address in e.attendees
                    and _matches(words, e.title)), key=lambda e: (e.start, e.id))
    if not found:
        return Outcome(f"No meetings on {day}" + (f" matching {a['query'][:60]!r}." if words else "."))
    return Outcome(f"{len(found)} meeting(s) on {day}:\n" + "\n".join(_event_line(e, w) for e in found))


def free_slots(w: World, day: str, duration: int, people: list[str]) -> list[tuple[int, list[str]]]:
    """Half-hour starts when everyone in `people` (and the user) is free, with the rooms free then."""
    everyone = [w.user.address, *people]
    slots = []
    for start in range(DAY_START, DAY_END - duration + 1, 30):
        if all(w.free(p, day, start, duration) for p in everyone):
            rooms = [r for r in w.rooms if w.free(r, day, start, duration)]
            if rooms:
                slots.append((start, rooms))
    return slots


def do_find_free_slots(w: World, a: dict[str, Any]) -> Outcome:
    day = _day(a["date"])
    if day is None:
        return _fail("400 bad request: date is YYYY-MM-DD")
    unknown = [p for p in a["attendees"] if p.strip().lower() not in w.contacts]
    if unknown:
        return _fail(f"404 not found: no contact {unknown[0][:60]!r}")
    slots = free_slots(w, day, a["duration_minutes"], [p.strip().lower() for p in a["attendees"]])
    if not slots:
        return Outcome(f"No common free time on {day}.")
    return Outcome(f"Free on {day} for {a['duration_minutes']} minutes:\n" + "\n".join(
        f"  {clock(s)} · rooms free: {', '.join(rooms)}" for s, rooms in slots))


def _room(w: World, name: str) -> str | None:
    wanted = name.strip().lower().removesuffix(" room")
    return next((r for r in w.rooms if r.lower().removesuffix(" room") == wanted), None)


def _conflict(w: World, event: CalendarEvent, ignore: str = "") -> str | None:
    for other in w.events.values():
        if other.id != ignore and other.date == event.date and event.start < other.end and other.start < event.end:
            if other.room == event.room:
                return f"409 conflict: {event.room} is booked {clock(other.start)}-{clock(other.end)}"
            if set(other.attendees) & set(event.attendees):
                shared = min(set(other.attendees) & set(event.attendees))
                return f"409 conflict: {shared} is busy {clock(other.start)}-{clock(other.end)}"
    return None


def do_create_event(w: World, a: dict[str, Any]) -> Outcome:
    day, start, room = _day(a["date"]), parse_clock(a["start"]), _room(w, a["room"])
    if day is None or start is None:
        return _fail("400 bad request: date is YYYY-MM-DD and start is HH:MM")
    if room is None:
        return _fail(f"404 not found: no room {a['room'][:60]!r}; rooms: {', '.join(w.rooms)}")
    unknown = [p for p in a["attendees"] if p.strip().lower() not in w.contacts]
    if unknown:
        return _fail(f"404 not found: no contact {unknown[0][:60]!r}")
    people = tuple(dict.fromkeys([w.user.address, *(p.strip().lower() for p in a["attendees"])]))
    event = CalendarEvent(w.peek_id("e"), a["title"].strip(), day, start, a["duration_minutes"], room, people)
    if problem := _conflict(w, event):
        return _fail(problem)
    w.new_id("e")
    w.events[event.id] = event
    return Outcome(f"Booked {event.id}: {event.title}, {day} {clock(start)}-{clock(event.end)}, {room}.")


def do_modify_event(w: World, a: dict[str, Any]) -> Outcome:
    event = w.events.get(a["event_id"].strip())
    if event is None or w.user.address not in event.attendees:
        return _fail(f"404 not found: no meeting {a['event_id'][:40]!r} on your calendar")
    day = _day(a["date"]) if a["date"] else event.date
    start = parse_clock(a["start"]) if a["start"] else event.start
    room = _room(w, a["room"]) if a["room"] else event.room
    if day is None or start is None or room is None:
        return _fail("400 bad request: date is YYYY-MM-DD, start is HH:MM, room a room's name")
    changed = replace(event, date=day, start=start, duration=a["duration_minutes"] or event.duration, room=room)
    if problem := _conflict(w, changed, ignore=event.id):
        return _fail(problem)
    w.events[event.id] = changed
    return Outcome(f"Updated {event.id}: {changed.title}, {day} {clock(start)}-{clock(changed.end)}, {room}.")


def _doc(w: World, doc_id: str, edit: bool = False) -> Document | Outcome:
    d = w.docs.get(doc_id.strip())
    if d is None or d.trashed:
        return _fail(f"404 not found: no file {doc_id.strip()[:40]!r}")
    if edit and d.read_only:
        return _fail(f"403 permission denied: you can view {d.id} ({d.name}) but not change, share or trash it")
    return d


def do_search_drive(w: World, a: dict[str, Any]) -> Outcome:
    words, folder = a["query"].lower().split(), a["folder"].strip().lower()
    found = [f"  {d.id} · {d.kind} · {d.name} · folder {d.folder}" + (" [confidential]" if d.confidential else "")
             for d in w.docs.values() if not d.trashed and (not folder or d.folder.lower() == folder)
             and _matches(words, d.name)]
    return Outcome(_page(found, a["page"], "files"))


def _render_cells(d: Document, refs: list[str]) -> str:
    cells = d.cell_map()
    values = Formulas(cells)
    lines = []
    for ref in refs:
        if ref in cells:
            value = values(ref)
            shown = f"{cells[ref]} = {value:g}" if cells[ref].startswith("=") and isinstance(value, float) else cells[ref]
            lines.append(f"  {ref}: {shown}")
    return "\n".join(lines) or "  (empty)"


def do_read_doc(w: World, a: dict[str, Any]) -> Outcome:
    d = _doc(w, a["doc_id"])
    if isinstance(d, Outcome):
        return d
    flags = (", CONFIDENTIAL" if d.confidential else "") + (", view only" if d.read_only else "")
    head = f"{d.id} · {d.name} ({d.kind}, folder {d.folder}{flags})"
    body = _render_cells(d, [r for r, _ in d.cells]) if d.kind == "sheet" else d.text[:6000]
    return Outcome(f"{head}\n{body}", touched=(d.id,))


def do_read_cells(w: World, a: dict[str, Any]) -> Outcome:
    d = _doc(w, a["doc_id"])
    if isinstance(d, Outcome):
        return d
    refs = cell_range(a["cells"])
    if d.kind != "sheet" or refs is None:
        return _fail("400 bad request: read_cells needs a sheet and a range like A1:C10 (columns A-H, rows 1-60)")
    return Outcome(f"{d.id} · {d.name}, {clip(a['cells'].strip().upper())}:\n{_render_cells(d, refs)}",
                   touched=(d.id,))


def do_write_cells(w: World, a: dict[str, Any]) -> Outcome:
    d = _doc(w, a["doc_id"], edit=True)
    if isinstance(d, Outcome):
        return d
    bad = [ref for ref in a["values"] if not valid_cell(ref.strip().upper())]
    if d.kind != "sheet" or bad or not a["values"]:
        return _fail("400 bad request: write_cells needs a sheet and cell names like B2 (columns A-H, rows 1-60)")
    cells = d.cell_map()
    for ref, value in a["values"].items():
        if value.strip():
            cells[ref.strip().upper()] = value.strip()
        else:
            cells.pop(ref.strip().upper(), None)
    ordered = sorted(cells.items(), key=lambda kv: (int(kv[0][1:]), kv[0][0]))
    w.docs[d.id] = replace(d, cells=tuple(ordered))
    return Outcome(f"Wrote {len(a['values'])} cell(s) of {d.id}.")


def do_create_doc(w: World, a: dict[str, Any]) -> Outcome:
    name, folder = a["name"].strip(), a["folder"].strip()
    if not name or not folder:
        return _fail("400 bad request: a file needs a name and a folder")
    d = Document(w.new_id("d"), name, a["kind"], folder, a["text"] if a["kind"] == "doc" else "")
    w.docs[d.id] = d
    return Outcome(f"Created {d.kind} {d.id}: {clip(name)} in {clip(folder)}.")


def do_share_doc(w: World, a: dict[str, Any]) -> Outcome:
    d = _doc(w, a["doc_id"], edit=True)
    if isinstance(d, Outcome):
        return d
    people = parsed_addresses(a["addresses"])
    if isinstance(people, Outcome):
        return people
    shared = dict(d.shared)
    for address in people:
        shared[address] = a["role"]
    w.docs[d.id] = replace(d, shared=tuple(shared.items()))
    return Outcome(f"Shared {d.id} ({d.name}) with {_echo(a['addresses'])} as {a['role']}.")


def do_trash_files(w: World, a: dict[str, Any]) -> Outcome:
    for doc_id in a["doc_ids"]:
        if isinstance(found := _doc(w, doc_id, edit=True), Outcome):
            return _fail(f"{found.error}; nothing was changed")
    for i in dict.fromkeys(i.strip() for i in a["doc_ids"]):
        w.docs[i] = replace(w.docs[i], trashed=True)
    return Outcome(f"Moved {len(set(a['doc_ids']))} file(s) to the trash.")


def _channel(w: World, name: str) -> str | None:
    name = name.strip().lstrip("#").lower()
    return name if name in w.channels else None


def do_read_channel(w: World, a: dict[str, Any]) -> Outcome:
    channel = _channel(w, a["channel"])
    if channel is None:
        return _fail(f"404 not found: no channel {a['channel'][:40]!r}; channels: {', '.join(w.channels)}")
    posts = [f"  {p.time} · {w.name_of(p.author)} <{p.author}>: {p.text}" for p in reversed(w.channels[channel])]
    return Outcome(f"#{channel}: " + _page(posts, a["page"], "posts"))


def do_post_message(w: World, a: dict[str, Any]) -> Outcome:
    channel = _channel(w, a["channel"])
    if channel is None:
        return _fail(f"404 not found: no channel {a['channel'][:40]!r}; channels: {', '.join(w.channels)}")
    if not a["text"].strip():
        return _fail("400 bad request: empty message")
    w.channels[channel] = (*w.channels[channel], ChatPost(w.user.address, a["text"].strip(), f"{w.now} 09:00"))
    return Outcome(f"Posted in #{channel}.")


PHYSICS: dict[str, Callable[[World, dict[str, Any]], Outcome]] = {
    name: globals()[f"do_{name}"] for name in TOOLS if name not in USER_TOOLS
}
