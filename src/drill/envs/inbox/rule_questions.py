"""Questions for any ingested inbox, made by rules from its messages: no model, no server, deterministic.

Each question is about one message, named by its subject, and its gold answer is read from that message:

* `name` — 'Who sent the email "Q3 forecast numbers"?': the sender's display name, with its address (and the
  name without middle initials) as aliases; the address alone when the message has no name;
* `date` — 'On what date was the email "Q3 forecast numbers" sent?': the UTC day (`read_email` shows dates in UTC),
  as "May 14, 2001" with "2001-05-14" as an alias;
* `amount` — 'What amount of money does the email "Q3 forecast numbers" mention?': only for a
  message whose subject and body state exactly one amount of money (`$18,400`, `USD 48,500`, `1740 dollars`,
  repeated or not).

A message is asked about only when its subject names it alone: at least MIN_SUBJECT_WORDS words once reply and
forward prefixes ("Re:", "Fwd:", "AW:") are stripped, and no other message of the inbox, dated or not, has the
same subject (compared as lower-case words, prefixes stripped). So a thread's replies, a mail sent twice or a
subject such as "Meeting" never make the gold ambiguous. A question that states its own answer (a subject holding
the date, the amount or the sender's name) is skipped, and every question is checked with the inbox's answer judge
before it is kept: its gold and aliases are judged correct, "I don't know" is not, and the gold listed beside
another value of its kind is wrong (so a list of every sender earns nothing).

About NO_ANSWER_SHARE of the questions have no answer: the question is asked one to fourteen days before its
message was sent, when the inbox holds no mail with that subject, and "I don't know" is the right reply. An
answerable question is asked one hour to fourteen days after its message. Each message is asked about once, of the
kind asked least so far that it can answer, so the kinds stay about even as far as the mail allows. Same store,
inbox, count and seed: the same questions, byte for byte. The split is `generated_split` (a hash of the text: one
in five to test, one in eight of the rest to validation), as for model-written questions. `RuleReport` counts
every message not asked about, by reason.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from drill.core.judge import agree, claims
from drill.envs.inbox.questions import IDK, InboxQuestion, generated_split, lexicon_of, match_verdict, normalize_answer
from drill.envs.inbox.store import MailStore, StoredMessage

__all__ = ["DEFAULT_COUNT", "KINDS", "NO_ANSWER_SHARE", "RuleReport", "generate_rule_questions", "subject_key"]

KINDS = ("amount", "name", "date")
"""In the order a message is asked about them when the kinds are even so far (an amount is the rarest)."""
DEFAULT_COUNT = 200
NO_ANSWER_SHARE = 0.15
MIN_SUBJECT_WORDS = 3
MAX_SUBJECT_CHARS = 100
_STAMP = "%Y-%m-%d %H:%M:%S"
_PREFIX = re.compile(r"^\s*(?:(?:re|fw|fwd|aw|sv|tr|wg)\s*(?:\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_CURRENCY_CODES = "USD|US\\$|EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR"
_NUMBER = r"\d(?:[\d,]*\d)?(?:\.\d+)?"
_MONEY = re.compile(
    rf"(?:[$€£¥₹]|\b(?:{_CURRENCY_CODES})\s?)\s?{_NUMBER}(?:\s?(?:k|thousand|million|m|bn|billion)\b)?"
    rf"|\b{_NUMBER}\s?(?:dollars|euros|pounds|yen|francs|rupees|{_CURRENCY_CODES})\b", re.IGNORECASE)
"""Amounts of money in any currency: a message is asked about its amount only when all of these agree."""


@dataclass
class RuleReport:
    messages: int = 0
    eligible: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def written(self) -> int:
        return sum(self.kinds.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.kinds.items()))
        line = f"{self.written} questions ({kinds or 'none'}) from {self.messages} messages, {self.eligible} eligible"
        if self.skipped:
            line += "; not asked about: " + ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return line


@dataclass(frozen=True)
class _Fact:
    """What one message can be asked: its gold per kind (answer, aliases)."""

    message: StoredMessage
    subject: str
    golds: dict[str, tuple[str, tuple[str, ...]]]


def subject_key(subject: str) -> str:
    """The subject as lower-case words, reply and forward prefixes stripped: two subjects with the same key name
    the same thread."""
    return " ".join(normalize_answer(_PREFIX.sub("", subject)))


def _sender(message: StoredMessage) -> tuple[str, tuple[str, ...]] | None:
    """(gold, aliases) for who sent `message`: the display name, or the address when there is no name."""
    name = " ".join(message.sender_name.split())
    address = message.sender.strip()
    if not re.search(r"[^\W\d_]", name) or "@" in name:
        return (address, ()) if address else None
    short = " ".join(w for w in name.split() if len(w.strip(".")) > 1)
    aliases = [a for a in (short, address) if a and a.casefold() != name.casefold()]
    return name, tuple(dict.fromkeys(aliases))


def _amount(message: StoredMessage) -> tuple[str, tuple[str, ...]] | None:
    """The one amount of money `message` states (however often), or None when it states none or several."""
    found = [m.group().strip() for m in _MONEY.finditer(f"{message.subject}\n{message.body}")]
    values = set()
    for text in found:
        read = claims(text, "amount")
        if len(read) != 1:
            return None
        values.add(read[0].value)
    return (found[0], ()) if len(values) == 1 else None


def _fact(message: StoredMessage, subjects: Counter[str]) -> _Fact | str:
    """What `message` can be asked, or why it is not asked about."""
    subject = " ".join(message.subject.split()).replace('"', "'")
    key = subject_key(subject)
    if len(key.split()) < MIN_SUBJECT_WORDS or len(subject) > MAX_SUBJECT_CHARS:
        return "subject too short or too long to name one message"
    if subjects[key] > 1:
        return "subject shared with another message"
    try:
        day = datetime.strptime(message.date or "", _STAMP)
    except ValueError:
        return "date not in the store's form"
    if not 1900 <= day.year <= 2100:
        return "implausible date"
    golds = {"date": (f"{day:%B} {day.day}, {day.year}", (f"{day:%Y-%m-%d}",))}
    sender = _sender(message)
    if sender is None:
        return "no sender"
    golds["name"] = sender
    amount = _amount(message)
    if amount is not None:
        golds["amount"] = amount
    return _Fact(message, subject, golds)


def _question_text(kind: str, fact: _Fact) -> str:
    """The question: the subject alone names the message (it is unique), so the sender's name is left out, which
    keyword searches would look for in the subject and body, where it often is not."""
    if kind == "name":
        return f'Who sent the email "{fact.subject}"?'
    if kind == "date":
        return f'On what date was the email "{fact.subject}" sent?'
    return f'What amount of money does the email "{fact.subject}" mention?'


def _other_value(kind: str, gold: str) -> str:
    """A value of `kind` that is not `gold`, for checking that a list holding the gold is judged wrong."""
    if kind == "date":
        return "2001-01-01" if "2001-01-01" not in gold else "2002-02-02"
    if kind == "amount":
        return "$7,777,777" if "7,777,777" not in gold else "$8,888,888"
    return "Jordan Avery" if gold != "Jordan Avery" else "Morgan Ellis"


def _checks(question: InboxQuestion, lexicon: dict[str, tuple[str, ...]]) -> str | None:
    """Why the answer judge cannot score `question` exactly, or None when it can."""
    gold, forms = question.answer, question.aliases
    try:
        if gold is None:
            return None if match_verdict(question, IDK, lexicon).verdict == "correct" else "no-answer check failed"
        if any(match_verdict(question, form, lexicon).verdict != "correct" for form in (gold, *forms)):
            return "the judge does not accept its gold"
        if match_verdict(question, IDK, lexicon).verdict != "abstained":
            return "the judge takes 'I don't know' for an answer"
        listed = f"{gold}, {_other_value(question.kind, gold)}"
        if match_verdict(question, listed, lexicon).verdict != "wrong":
            return "the judge accepts a list holding its gold"
    except ValueError:
        return "the judge cannot read its gold"
    return None


def _states_own_answer(text: str, kind: str, gold: tuple[str, tuple[str, ...]]) -> bool:
    if kind == "name":
        asked = set(normalize_answer(text))
        return any(set(normalize_answer(form)) <= asked for form in (gold[0], *gold[1]))
    targets = [c for form in (gold[0], *gold[1]) for c in claims(form, kind)]
    return any(agree(c, t) for c in claims(text, kind) for t in targets)


def _make(inbox: str, kind: str, fact: _Fact, answerable: bool, rng: random.Random) -> InboxQuestion:
    sent = datetime.strptime(fact.message.date or "", _STAMP)
    shift = timedelta(hours=rng.randint(1, 14 * 24)) if answerable else -timedelta(hours=rng.randint(24, 14 * 24))
    asked_at = (sent + shift).strftime(_STAMP)
    text = _question_text(kind, fact)
    answer, aliases = fact.golds[kind]
    ident = hashlib.sha256(f"{inbox}\n{fact.message.message_id}\n{kind}\n{asked_at}".encode()).hexdigest()
    return InboxQuestion(
        id=f"r{ident[:12]}", split=generated_split(inbox, text), inbox=inbox,
        question=text, asked_at=asked_at, answer=answer if answerable else None,
        aliases=aliases if answerable else (), sources=(fact.message.message_id,) if answerable else (), kind=kind,
    )


def generate_rule_questions(store: MailStore, inbox: str, count: int, seed: int = 0
                            ) -> tuple[list[InboxQuestion], RuleReport]:
    """Up to `count` checked questions about `inbox` of `store` (module docstring), and the report of what was
    skipped. Fewer when the inbox has fewer eligible messages; `report.written` says how many."""
    if inbox not in store.inboxes():
        known = ", ".join(store.inboxes()[:10]) or "none"
        raise ValueError(f"no inbox {inbox!r} in {store.path}; inboxes: {known}")
    if count < 1:
        raise ValueError(f"the question count must be at least 1, got {count}")
    report = RuleReport()
    subjects = Counter(subject_key(s) for s in store.subjects(inbox))
    facts: list[_Fact] = []
    for message in store.dated_messages(inbox):
        report.messages += 1
        fact = _fact(message, subjects)
        if isinstance(fact, str):
            report.skipped[fact] += 1
        else:
            facts.append(fact)
    report.eligible = len(facts)
    rng = random.Random(seed)
    rng.shuffle(facts)
    none_left = round(min(count, len(facts)) * NO_ANSWER_SHARE)
    made: list[InboxQuestion] = []
    asked: Counter[str] = Counter()
    for index, fact in enumerate(facts):
        if len(made) == count:
            break
        slots = min(count - len(made), len(facts) - index)
        answerable = rng.random() >= none_left / slots
        kinds = [k for k in sorted(fact.golds, key=lambda k: (asked[k], KINDS.index(k)))
                 if not _states_own_answer(_question_text(k, fact), k, fact.golds[k])]
        if not kinds:
            report.skipped["the question would state its answer"] += 1
            continue
        made.append(_make(inbox, kinds[0], fact, answerable, rng))
        asked[kinds[0]] += 1
        none_left -= not answerable
    lexicon = lexicon_of(made)
    kept = []
    for question in made:
        problem = _checks(question, lexicon)
        if problem is not None:
            report.skipped[problem] += 1
            continue
        kept.append(question)
        report.kinds["no answer" if question.answer is None else question.kind] += 1
    return kept, report
