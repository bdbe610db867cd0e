"""InboxEnv: answer a question about one person's email by searching and reading it.

One role, `assistant`. Each task is an `InboxQuestion` asked at a moment (`asked_at`); the agent has
`max_turns` tool calls and sees only mail sent up to that moment:

* `search_emails(keywords, from_addr, to_addr, sent_after, sent_before, max_results)` — up to 10 hits,
  each an id, date, sender, subject and a snippet;
* `read_email(message_id, offset=0)` — one message, 6,000 body characters from `offset` (it says how much is
  left and the offset to read on from); an id that is unknown or dated after the question reads
  as "not found", the same either way;
* `return_final_answer(answer, sources)` — ends the episode. The answer is judged by the rubric, never here
  (normalized match or an LLM judge, see `drill.envs.inbox.rubric`), so an episode can be re-judged without
  replaying it.

Events: `search` (keywords, results, ids), `read` (message_id, found), `answered` (answer: its first 500
characters, answer_chars, sources, cited),
`invalid_action` (the canonical payload), `out_of_turns`. Running out of turns ends the episode.
Options are JSON-serializable so `check_env` can rebuild the env in another process; with no `db`, the env
uses the synthetic company inbox for `seed`, built on first use into the cache folder.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from drill.core.env import Env, check_split
from drill.core.tools import Tool
from drill.core.types import Event, Observation, StepResult
from drill.envs.inbox.query import utc_cutoff
from drill.envs.inbox.questions import IDK, InboxQuestion, is_abstention, load_questions
from drill.envs.inbox.store import MailStore, SearchHit, StoredMessage, StoreError, normalize_message_id
from drill.envs.inbox.synthetic import DEFAULT_MESSAGES, synthetic_inbox

__all__ = ["InboxEnv", "TOOLS"]

MAX_BODY_CHARS = 6000
"""Body characters shown by one read_email call; `offset` pages on."""


def search_emails(keywords: str, from_addr: str | None = None, to_addr: str | None = None,
                  sent_after: str | None = None, sent_before: str | None = None,
                  max_results: Annotated[int, Field(ge=1, le=10)] = 10) -> None:
    """Search the inbox. Every keyword must appear in the subject or body; results are best match first.

    Args:
        keywords: Words to look for, separated by spaces (punctuation is ignored). Empty lists the newest mail.
        from_addr: Only mail from this sender: a full address, or part of a name or address.
        to_addr: Only mail to, cc or bcc this recipient: a full address, or part of a name or address.
        sent_after: Only mail sent on or after this date, YYYY-MM-DD (UTC), or an ISO time with an offset.
        sent_before: Only mail sent before this date, YYYY-MM-DD (UTC), or an ISO time with an offset.
        max_results: How many results to return, 1 to 10.
    """


def read_email(message_id: str, offset: Annotated[int, Field(ge=0)] = 0) -> None:
    """Read one email: headers and up to 6,000 characters of the body, from `offset` on.

    Args:
        message_id: The id of the message, as shown in search results.
        offset: Where to start reading the body (0 is the start); a long body says the offset to read on from.
    """


def return_final_answer(answer: str, sources: list[str]) -> None:
    """Give your final answer and end the task. Answer "I don't know" if the inbox does not say.

    Args:
        answer: A short answer (a date, a name, a place, an amount, a code), or "I don't know".
        sources: The ids of the messages that state the answer; empty if you don't know.
    """


TOOLS: dict[str, Tool] = {t.name: t for t in map(Tool.from_function, (search_emails, read_email, return_final_answer))}

INSTRUCTIONS = """You are an email research assistant for {user}. Answer the question using only the emails in \
their inbox, which you can search and read with your tools. The inbox shows mail up to the moment the question is \
asked. When you know the answer, call return_final_answer with a short answer and the ids of the messages that \
state it. If the inbox does not contain the answer, answer exactly "{idk}": a wrong answer is worse than saying you \
don't know. You have {turns} tool calls in total."""


@functools.lru_cache(maxsize=8)
def _store(path: str) -> MailStore:
    return MailStore(Path(path), read_only=True)


@functools.lru_cache(maxsize=8)
def _questions(path: str, mtime_ns: int) -> tuple[InboxQuestion, ...]:
    return tuple(load_questions(Path(path)))


def _when(text: str, argument: str) -> str:
    return utc_cutoff(text, argument)  # zero-padded UTC text; an offset in the argument is honoured


class InboxEnv(Env[InboxQuestion]):
    name = "inbox"
    roles = ("assistant",)
    task_type = InboxQuestion

    def __init__(self, seed: int = 0, messages: int = DEFAULT_MESSAGES, db: str | None = None,
                 questions: str | None = None, cache_dir: str | None = None, max_turns: int = 10) -> None:
        super().__init__(seed=seed, messages=messages, db=db, questions=questions, cache_dir=cache_dir,
                         max_turns=max_turns)
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if db is None:
            if questions is not None:
                raise ValueError("a question file needs its mail store: pass db as well")
            db_path, questions_path = synthetic_inbox(seed, messages, cache_dir)
        else:
            if questions is None:
                raise ValueError(f"the mail store {db} needs a question file: pass questions as well "
                                 "(write one with `drill inbox generate-questions`)")
            db_path, questions_path = Path(db), Path(questions)
        try:
            self.store = _store(str(db_path.resolve()))
        except StoreError as exc:  # a bad --db is the user's option: the commands print it as one line
            raise ValueError(str(exc)) from exc
        self._all = _questions(str(questions_path.resolve()), questions_path.stat().st_mtime_ns)
        known = set(self.store.inboxes())
        strangers = sorted({q.inbox for q in self._all} - known)
        if strangers:
            raise ValueError(f"{questions_path}: questions about inboxes not in {db_path}: {', '.join(strangers[:5])}")
        self.max_turns = max_turns
        self.question: InboxQuestion | None = None
        self.turn = 0

    def tasks(self, split: str = "test") -> list[InboxQuestion]:
        check_split(split)
        return [q for q in self._all if q.split == split]

    def task(self, task_id: str) -> InboxQuestion:
        for question in self._all:
            if question.id == task_id:
                return question
        raise KeyError(f"inbox: no question with id {task_id!r}")

    # -- episode -------------------------------------------------------------------------------------

    def _reset(self, task: InboxQuestion, seed: int) -> Observation:
        self.question = task
        self.turn = 0
        content = (f"Question: {task.question}\nAsked on: {task.asked_at} UTC (mail sent later is not visible)\n"
                   f"Inbox of: {task.inbox}\nTool calls left: {self.max_turns}")
        return self._observation(content)

    def _observation(self, content: str, error: str | None = None) -> Observation:
        assert self.question is not None
        return Observation(role="assistant", content=content, step=self.turn, error=error,
                           tools=[t.spec for t in TOOLS.values()],
                           instructions=INSTRUCTIONS.format(user=self.question.inbox, idk=IDK, turns=self.max_turns))

    def _tools(self) -> Mapping[str, Tool]:
        return TOOLS

    def _finish_turn(self, content: str, events: list[Event], error: str | None = None,
                     answered: bool = False) -> StepResult:
        self.turn += 1
        done = answered or self.turn >= self.max_turns
        if done and not answered:
            events.append(Event(name="out_of_turns", step=self.turn, role="assistant", data={"turns": self.turn}))
            content += "\n\nYou are out of tool calls; the task ended without an answer."
        elif not done:
            content += f"\n\nTool calls left: {self.max_turns - self.turn}"
        return StepResult(observation=self._observation(content, error), events=events, done=done)

    def _acting(self) -> tuple[str, int]:
        return "assistant", self.turn

    def _reject(self, message: str, event: Event) -> StepResult:
        return self._finish_turn(f"Your last action was invalid: {message}", [event], error=message)

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        assert self.question is not None
        if tool == "search_emails":
            return self._search(arguments)
        if tool == "read_email":
            return self._read(arguments["message_id"], arguments["offset"])
        return self._answer(arguments["answer"], arguments["sources"])

    def _search(self, arguments: dict[str, Any]) -> StepResult:
        assert self.question is not None
        try:
            after = _when(arguments["sent_after"], "sent_after") if arguments["sent_after"] else None
            before = _when(arguments["sent_before"], "sent_before") if arguments["sent_before"] else None
        except ValueError as exc:
            return self.invalid(str(exc), "bad_arguments", "search_emails")
        hits = self.store.search(self.question.inbox, arguments["keywords"], arguments["from_addr"],
                                 arguments["to_addr"], after, before, self.question.asked_at, arguments["max_results"])
        event = Event(name="search", step=self.turn, role="assistant",
                      data={"keywords": arguments["keywords"][:200], "results": len(hits),
                            "ids": [h.message_id for h in hits]})
        return self._finish_turn(_render_hits(arguments["keywords"], hits), [event])

    def _read(self, message_id: str, offset: int = 0) -> StepResult:
        assert self.question is not None
        message = self.store.read(self.question.inbox, message_id, self.question.asked_at)
        event = Event(name="read", step=self.turn, role="assistant",
                      data={"message_id": normalize_message_id(message_id)[:300], "found": message is not None})
        if message is None:
            return self._finish_turn(f"No message with id {message_id[:200]!r} in this inbox.", [event])
        return self._finish_turn(_render_message(message, offset), [event])

    def _answer(self, answer: str, sources: list[str]) -> StepResult:
        assert self.question is not None
        cited = list(dict.fromkeys(i for s in sources for i in _cited_ids(s)))
        event = Event(name="answered", step=self.turn, role="assistant",
                      data={"answer": answer[:500], "answer_chars": len(answer), "sources": cited[:50],
                            "cited": len(cited)})
        return self._finish_turn("Your answer has been recorded.", [event], answered=True)


_BRACKETED = re.compile(r"<([^<>]+)>")
_BETWEEN_IDS = re.compile(r"[\s,;]+")


def _cited_ids(text: str) -> list[str]:
    """The message ids one `sources` entry names: each id in angle brackets, or else each word (a Message-ID holds no
    space, comma or semicolon). Until 2026-11-29 an entry naming two ids ("id1, id2", "<id1> <id2>") was one unknown
    id, so an oracle citing its sources so earned no source credit on a question with several (1.183 against 1.286
    on validation; eighth red team). The ids are as many as the list's, so citing everything still dilutes. An entry
    that says there is none ("none", "N/A", "I don't know"; never an id, which holds an "@") cites nothing: it was an
    unknown id, so a right "I don't know" citing it lost the 0.2 an empty list earns (the heuristic so: 0.603 against
    0.645 on validation)."""
    if "@" not in text and is_abstention(text):
        return []
    found = _BRACKETED.findall(text) or _BETWEEN_IDS.split(text)
    return [normalize_message_id(i) for i in found if normalize_message_id(i)]


def _render_hits(keywords: str, hits: list[SearchHit]) -> str:
    if not hits:
        return f"No messages match {keywords!r} with those filters."
    lines = [f"{len(hits)} result{'s' if len(hits) != 1 else ''}:"]
    for number, hit in enumerate(hits, start=1):
        lines.append(f"{number}. id: {hit.message_id}\n   date: {hit.date[:16]}  from: {hit.sender}\n"
                     f"   subject: {hit.subject}\n   snippet: {hit.snippet}")
    return "\n".join(lines)


def _render_message(message: StoredMessage, offset: int = 0) -> str:
    def people(kind: str) -> str:
        return ", ".join(f"{r.name} <{r.address}>" if r.name else r.address
                         for r in message.recipients if r.kind == kind)

    sender = f"{message.sender_name} <{message.sender}>" if message.sender_name else message.sender
    lines = [f"Message-ID: {message.message_id}", f"Date: {(message.date or 'unknown')[:16]} UTC", f"From: {sender}"]
    for kind in ("to", "cc", "bcc"):
        if people(kind):
            lines.append(f"{kind.capitalize()}: {people(kind)}")
    lines.append(f"Subject: {message.subject}")
    if message.attachments:
        lines.append(f"Attachments: {', '.join(message.attachments)}")
    total = len(message.body)
    end = min(total, offset + MAX_BODY_CHARS)
    body = message.body[offset:end]
    if offset >= total and offset > 0:
        body = f"[offset {offset} is past the end of the body, which has {total} characters]"
    elif end < total:
        body += (f"\n[characters {offset}-{end} of {total} shown; {total - end} more: "
                 f"call read_email with offset={end} to read on]")
    elif offset > 0:
        body += f"\n[characters {offset}-{end} of {total} shown; end of message]"
    return "\n".join(lines) + "\n\n" + body
