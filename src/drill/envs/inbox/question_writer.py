"""Questions for a real inbox, written by any OpenAI-compatible model from batches of about 20 emails.

For each batch (consecutive dated messages of one inbox, batches picked with a seed) the model is shown
the emails with their ids and asked for question / answer / source-id triples as JSON. Every proposal is
checked before it is kept:

* the source ids exist in the store and were in the batch;
* the question is 15–250 characters and ends with "?"; the answer is 1–80 characters, at most 12 words;
* the answer appears in a source email (normalized, whole words), and not in the question;
* the question does not copy 8 or more consecutive words from a source (realistic questions paraphrase);
* no duplicate questions.

A kept question is asked at the date of the newest email in its batch, so its sources are visible and
later mail is not. The split is fixed by a hash of the question text (one in five goes to test, then one in eight of
the rest to validation: `validation_or_train`). The summary counts every rejection by reason; a reply that is not
JSON counts as a rejected batch.
Answers to generated questions are free text: evaluate them with an LLM judge (`--judge openai:MODEL`)
rather than `match`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.progress import Progress

from drill.envs.inbox.questions import InboxQuestion, generated_split, normalize_answer, write_questions
from drill.envs.inbox.store import MailStore, StoredMessage, normalize_message_id

__all__ = ["BATCHES", "BATCH_SIZE", "PER_BATCH", "QuestionWriter", "WriterReport", "check_draft"]

MAX_BODY_CHARS = 1500
COPY_WINDOW = 8
BATCHES = 20
BATCH_SIZE = 20
PER_BATCH = 5
"""Defaults: batches of emails shown to the model, emails per batch, questions asked for per batch."""

_SYSTEM = """You write realistic questions that {user} might ask an assistant about their own email, with answers \
taken from the emails shown. Rules:
- Each question must be answerable from the emails shown, and specific enough that only one answer fits.
- The answer is short: a date, a name, a place, an amount, a code or a few words, copied from an email.
- Ask the way a busy person would, in your own words; do not copy sentences from the emails.
- Do not ask about email metadata (who sent which email, when it was sent).
- source_ids lists the ids of the emails that state the answer.
Reply with JSON only, in this form:
{{"questions": [{{"question": "...", "answer": "...", "source_ids": ["..."]}}]}}
Write up to {count} questions."""


class DraftQuestion(BaseModel):
    model_config = ConfigDict(extra="ignore")
    question: str
    answer: str
    source_ids: list[str]


@dataclass
class WriterReport:
    batches: int = 0
    proposed: int = 0
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        line = f"{self.batches} batches, {self.proposed} proposed, {self.kept} kept"
        if self.rejected:
            line += "; rejected: " + ", ".join(f"{n} {reason}" for reason, n in sorted(self.rejected.items()))
        return line


def _render(message: StoredMessage) -> str:
    to = ", ".join(r.address for r in message.recipients if r.kind in ("to", "cc"))
    body = message.body[:MAX_BODY_CHARS] + (" [...]" if len(message.body) > MAX_BODY_CHARS else "")
    return (f"<email id=\"{message.message_id}\">\nDate: {message.date}\nFrom: {message.sender}\nTo: {to}\n"
            f"Subject: {message.subject}\n\n{body}\n</email>")


def _parse_reply(text: str) -> list[object]:
    """The list of proposals in a model reply (JSON, possibly inside a ``` fence). Raises ValueError."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start = min((i for i in (cleaned.find("{"), cleaned.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON in the reply")
    payload, _ = json.JSONDecoder().raw_decode(cleaned[start:])
    items = payload.get("questions") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ValueError("the JSON has no list of questions")
    return items


def _contains(words: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return n > 0 and any(words[i:i + n] == phrase for i in range(len(words) - n + 1))


def check_draft(draft: DraftQuestion, batch: dict[str, StoredMessage]) -> str | None:
    """The reason to reject `draft` given the batch it was written from, or None to keep it."""
    sources = [normalize_message_id(s) for s in draft.source_ids]
    if not sources:
        return "no sources"
    if any(s not in batch for s in sources):
        return "unknown source id"
    question, answer = draft.question.strip(), draft.answer.strip()
    if not 15 <= len(question) <= 250 or not question.endswith("?"):
        return "question length or form"
    answer_words = normalize_answer(answer)
    if not 1 <= len(answer) <= 80 or not 1 <= len(answer_words) <= 12:
        return "answer length"
    texts = [normalize_answer(f"{batch[s].subject}\n{batch[s].body}") for s in sources]
    if not any(_contains(text, answer_words) for text in texts):
        return "answer not in sources"
    question_words = normalize_answer(question)
    if _contains(question_words, answer_words):
        return "question gives the answer away"
    windows = {tuple(question_words[i:i + COPY_WINDOW]) for i in range(len(question_words) - COPY_WINDOW + 1)}
    if any(tuple(text[i:i + COPY_WINDOW]) in windows for text in texts for i in range(len(text) - COPY_WINDOW + 1)):
        return "copied from the email"
    return None


class QuestionWriter:
    """Writes a questions JSONL for one inbox of a store with a model at an OpenAI-compatible `base_url`."""

    def __init__(self, store: MailStore, inbox: str, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY",
                 batch_size: int = BATCH_SIZE, per_batch: int = PER_BATCH, temperature: float = 0.7) -> None:
        from openai import OpenAI

        if inbox not in store.inboxes():
            known = ", ".join(store.inboxes()[:10]) or "none"
            raise ValueError(f"no inbox {inbox!r} in {store.path}; inboxes: {known}")
        if batch_size < 1 or per_batch < 1:
            raise ValueError("batch size and questions per batch must be at least 1")
        self.store, self.inbox, self.model = store, inbox, model
        self.batch_size, self.per_batch, self.temperature = batch_size, per_batch, temperature
        self.client = OpenAI(base_url=base_url, api_key=os.environ.get(api_key_env, "not-needed"))

    def batches(self, count: int, seed: int) -> list[list[StoredMessage]]:
        """`count` batches of consecutive dated messages with a body, chosen with `seed`, oldest first."""
        messages = [m for m in self.store.dated_messages(self.inbox) if len(m.body.strip()) >= 40]
        windows = [messages[i:i + self.batch_size] for i in range(0, len(messages), self.batch_size)]
        chosen = sorted(random.Random(seed).sample(range(len(windows)), min(count, len(windows))))
        return [windows[i] for i in chosen]

    def ask(self, batch: list[StoredMessage]) -> str:
        reply = self.client.chat.completions.create(
            model=self.model, temperature=self.temperature,
            messages=[{"role": "system", "content": _SYSTEM.format(user=self.inbox, count=self.per_batch)},
                      {"role": "user", "content": "\n\n".join(_render(m) for m in batch)}],
        )
        return reply.choices[0].message.content or ""

    def write(self, out: Path, batches: int = BATCHES, seed: int = 0, progress: Progress | None = None) -> WriterReport:
        report = WriterReport()
        kept: list[InboxQuestion] = []
        seen: set[str] = set()
        chosen = self.batches(batches, seed)
        bar = progress.add_task("write questions", total=len(chosen)) if progress is not None else None
        for batch in chosen:
            report.batches += 1
            by_id = {m.message_id: m for m in batch}
            asked_at = max(m.date for m in batch if m.date)
            try:
                proposals = _parse_reply(self.ask(batch))
            except ValueError as exc:
                report.rejected[f"unreadable reply ({exc})"] += 1
                proposals = []
            for item in proposals:
                report.proposed += 1
                try:
                    draft = DraftQuestion.model_validate(item)
                except ValidationError:
                    report.rejected["bad shape"] += 1
                    continue
                reason = check_draft(draft, by_id)
                key = " ".join(normalize_answer(draft.question))
                if reason is None and key in seen:
                    reason = "duplicate question"
                if reason is None:
                    sources = tuple(dict.fromkeys(normalize_message_id(s) for s in draft.source_ids))
                    if self.store.existing_ids(self.inbox, sources) != set(sources):
                        reason = "unknown source id"
                if reason is not None:
                    report.rejected[reason] += 1
                    continue
                seen.add(key)
                digest = hashlib.sha256(f"{self.inbox}\n{key}".encode()).hexdigest()
                kept.append(InboxQuestion(
                    id=f"g{digest[:12]}",
                    split=generated_split(self.inbox, draft.question),
                    inbox=self.inbox, question=draft.question.strip(), asked_at=str(asked_at),
                    answer=draft.answer.strip(), sources=sources, kind="generated",
                ))
            if progress is not None and bar is not None:
                progress.advance(bar)
        report.kept = len(kept)
        write_questions(out, kept)
        return report
