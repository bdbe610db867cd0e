"""The inbox env's tools on a real-mail store written here: read_email pages through long bodies, search filters
take names in any order and dates with offsets, and odd strings never escape env.step."""

from __future__ import annotations

from pathlib import Path

import pytest

from drill.core import Action
from drill.envs.inbox import InboxEnv, InboxQuestion
from drill.envs.inbox.env import MAX_BODY_CHARS
from drill.envs.inbox.questions import write_questions
from drill.envs.inbox.store import MailRecord, MailStore, Recipient

LONG_BODY = "".join(f"Paragraph {n}: routine status, nothing new this week.\n" for n in range(160))
LONG_BODY = LONG_BODY[:9000] + "The locker combination is 31-07-44. " + LONG_BODY[9000:]


@pytest.fixture
def env(tmp_path: Path) -> InboxEnv:
    store = MailStore(tmp_path / "mail.db")
    store.add("helen", [
        MailRecord(message_id="long@x.org", subject="Weekly log", sender="okafor@x.org", sender_name="Okafor, Helen",
                   date="2024-03-14 07:30:00", body=LONG_BODY, attachments=(), source_hash="1",
                   recipients=(Recipient("tim@x.org", "Tim Belden", "to"),)),
        MailRecord(message_id="later@x.org", subject="Weekly log 2", sender="okafor@x.org", sender_name="",
                   date="2024-03-14 08:30:00", body="Another routine status.", attachments=(), source_hash="2",
                   recipients=(), sender_aliases=("Helen Okafor",)),
    ])
    store.close()
    question = InboxQuestion(id="q1", inbox="helen", question="What is the locker combination?",
                             asked_at="2024-12-31 00:00:00", answer="31-07-44", sources=("long@x.org",), kind="code")
    write_questions(tmp_path / "q.jsonl", [question])
    env = InboxEnv(db=str(tmp_path / "mail.db"), questions=str(tmp_path / "q.jsonl"))
    env.reset(question, seed=0)
    return env


def step(env: InboxEnv, tool: str, **arguments: object) -> str:
    return env.step(Action.call(tool, **arguments)).observation.content


def test_read_email_pages_through_a_long_body(env: InboxEnv) -> None:
    first = step(env, "read_email", message_id="long@x.org")
    assert "31-07-44" not in first and f"call read_email with offset={MAX_BODY_CHARS}" in first
    assert f"characters 0-{MAX_BODY_CHARS} of {len(LONG_BODY)} shown; {len(LONG_BODY) - MAX_BODY_CHARS} more" in first
    second = step(env, "read_email", message_id="long@x.org", offset=MAX_BODY_CHARS)
    assert "The locker combination is 31-07-44." in second and "end of message" in second
    past = step(env, "read_email", message_id="long@x.org", offset=10**6)
    assert "past the end of the body" in past
    negative = env.step(Action.call("read_email", message_id="long@x.org", offset=-1))
    assert negative.observation.error is not None and negative.events[0].name == "invalid_action"


def test_search_filters_take_names_in_any_order_and_offsets(env: InboxEnv) -> None:
    both = step(env, "search_emails", keywords="routine status", from_addr="Helen Okafor")
    assert "long@x.org" in both and "later@x.org" in both  # one has the name only as an alias (X-From)
    display = step(env, "search_emails", keywords="", from_addr="Okafor, Helen <okafor@x.org>")
    assert "2 results" in display
    cut = step(env, "search_emails", keywords="routine", sent_before="2024-03-14T09:00:00+01:00")
    assert "long@x.org" in cut and "later@x.org" not in cut  # 09:00+01:00 is 08:00 UTC
    odd = env.step(Action.call("search_emails", keywords="\ud800", from_addr="\ud800", to_addr="%"))
    assert odd.events[0].name == "invalid_action" and "lone surrogate" in (odd.observation.error or "")  # the base
    wildcard = env.step(Action.call("search_emails", keywords="", to_addr="%"))
    assert "No messages match" in wildcard.observation.content  # % is a character, not a LIKE wildcard
    missing = env.step(Action.call("read_email", message_id="\ud800"))
    assert missing.events[0].name == "invalid_action"
