"""Scripted inbox policies: random, heuristic (search, read, extract a span) and the oracle.

All three are stateless: what they did so far is read back from `PolicyInput.history`.

* `random` — a uniformly random tool with schema-random arguments (ids it has seen when it reads).
* `heuristic` — searches for the question's names and codes (then its content words), reads the top hit,
  and extracts a span of the type the question asks for (a date for "when", an amount for "how much",
  a capitalised name after "by"/"to" for "who", ...) from the sentence that shares most words with the
  question. If the message does not mention every name in the question, or nothing fits, it answers
  "I don't know" — it would rather abstain than guess.
* `oracle` — reads a gold source and answers with the gold answer and that source; "I don't know" at once
  when the inbox has no answer.
* `reader` — a demonstrator for SFT, and DAgger's expert: it searches like the heuristic (at most two
  searches when they find nothing) and reads the hits in rank order (at most three reads); once it has read
  a mail that states the answer (a gold source), it answers with the gold answer as that mail writes it and
  cites it; when no mail it read does, "I don't know". It acts from any state, also one another policy
  reached (its own searches, reads out of order).

Only the oracle and the reader read the task's ground truth; the reader only to tell whether a mail it has
read states the answer, and which span does.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from drill.core.policy import Policy, PolicyInput
from drill.core.tools import random_arguments
from drill.core.types import Action, PolicyInfo
from drill.envs.inbox.env import TOOLS
from drill.envs.inbox.questions import IDK, InboxQuestion

__all__ = ["HeuristicPolicy", "OraclePolicy", "RandomPolicy", "ReaderPolicy", "baselines", "extract_answer",
           "search_keywords", "stated_span"]

_RESULT_ID = re.compile(r"^\d+\. id: (\S+)", re.MULTILINE)
_MESSAGE_ID = re.compile(r"^Message-ID: (\S+)", re.MULTILINE)
_STOP = frozenset("""a an the is are was were be been being of to in on at for with by from and or as it its this that
these those what which who whom whose when where why how much many does do did will would should could can may might
has have had i you he she they we our your their his her them me my about into over under up down out off than then
there here also just not no yes any all some each whats date day""".split())
_GENERIC = frozenset({"When", "What", "Which", "Who", "How", "Where", "Project", "Kestrel", "PO", "QBR"})
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATE = re.compile(rf"\b{_MONTH} \d{{1,2}}\b(?:, \d{{4}})?")
_AMOUNT = re.compile(r"\$\d[\d,]*(?:\.\d\d)?")
_CAPS = r"[A-Z][\w'&-]*(?: (?:&|of|de) [A-Z][\w'-]*| [A-Z][\w'-]*)*"
_PLACE = re.compile(rf"\b(?:at|in) (?:the |our )?({_CAPS})")
_VENDOR = re.compile(rf"\b(?:selected|from|to) ({_CAPS})")
_PERSON_BY = re.compile(r"\bby ([A-Z][\w'-]+ [A-Z][\w'-]+)")
_PERSON_TO = re.compile(r"\bto ([A-Z][\w'-]+ [A-Z][\w'-]+)")
_HOTEL = re.compile(rf"\bstaying at (?:the )?({_CAPS})")
_PO = re.compile(r"\bPO-\d+-\d+\b")
_FLIGHT = re.compile(r"\b[A-Z]{2}\d{3,4}\b")
_CODE = re.compile(r"[Cc]onfirmation code:? ([A-Z0-9]{6})\b")


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", re.sub(r"['’]s\b", "", text))


def _entities(question: str) -> list[str]:
    """Names and codes in the question: capitalised words after the first, and words with digits."""
    words = _words(question)
    return [w for i, w in enumerate(words)
            if (i > 0 and w[0].isupper() and w not in _GENERIC) or any(c.isdigit() for c in w)]


def search_keywords(question: str) -> tuple[str, str]:
    """(first search, fallback search): names plus content words, then names (or content words) alone."""
    entities = _entities(question)
    content = [w for w in _words(question) if w.lower() not in _STOP and w not in entities and w not in _GENERIC]
    first = entities + content if len(entities) < 2 else entities + [w for w in _words(question)
                                                                     if w in ("QBR", "PO")]
    fallback = entities or content[:3]
    return " ".join(first), " ".join(fallback)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _span_pattern(question: str) -> tuple[re.Pattern[str], int]:
    """The pattern (and its group) for the kind of span `question` asks for."""
    lower = question.lower()
    if "confirmation code" in lower:
        return _CODE, 1
    if "po number" in lower:
        return _PO, 0
    if "flight" in lower:
        return _FLIGHT, 0
    if lower.startswith("when") or "what date" in lower:
        return _DATE, 0
    if lower.startswith("how much") or any(w in lower for w in ("cost", "budget", "amount")):
        return _AMOUNT, 0
    if lower.startswith("who"):
        return (_PERSON_TO if lower.rstrip("?").endswith(" to") else _PERSON_BY), 1
    if "vendor" in lower:
        return _VENDOR, 1
    if "hotel" in lower:
        return _HOTEL, 1
    return _PLACE, 1


def extract_answer(question: str, message: str) -> str | None:
    """A span of `message` of the type `question` asks for, from the sentence sharing most words with the
    question; None if no sentence offers one."""
    body = message.split("\n\n", 1)[-1]
    body = "\n".join(line.lstrip("> ") for line in body.splitlines())
    pattern, group = _span_pattern(question)
    asked = {w.lower() for w in _words(question) if w.lower() not in _STOP}
    ranked = sorted(_sentences(body), key=lambda s: -len(asked & {w.lower() for w in _words(s)}))
    for sentence in ranked:
        for match in pattern.finditer(sentence):
            span = match.group(group)
            if span not in question:
                return span
    return None


def _results(history: Sequence[tuple[Action, str]]) -> tuple[list[str], int, int]:
    """(ids of the last search with results, searches made, reads made)."""
    ids: list[str] = []
    searches = reads = 0
    for action, seen in history:
        if action.tool == "search_emails":
            searches += 1
            found = _RESULT_ID.findall(seen)
            if found:
                ids = found
        elif action.tool == "read_email":
            reads += 1
    return ids, searches, reads


def _exchanges(item: PolicyInput) -> list[tuple[Action, str]]:
    """Each earlier action of this role with the observation it produced."""
    turns = item.own_turns()
    seen = [t.observation.content for t in turns[1:]] + [item.observation.content]
    return [(t.action, s) for t, s in zip(turns, seen)]


class HeuristicPolicy:
    info = PolicyInfo(name="heuristic")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._one(item) for item in inputs]

    def _one(self, item: PolicyInput) -> Action:
        question = item.task.question if isinstance(item.task, InboxQuestion) else ""
        history = _exchanges(item)
        first, fallback = search_keywords(question)
        if not history:
            return Action.call("search_emails", keywords=first)
        action, seen = history[-1]
        ids, searches, reads = _results(history)
        if action.tool == "search_emails":
            if not ids and searches == 1 and fallback != first:
                return Action.call("search_emails", keywords=fallback)
            if not ids:
                return Action.call("return_final_answer", answer=IDK, sources=[])
            return Action.call("read_email", message_id=ids[0])
        if action.tool == "read_email":
            message_id = action.arguments.get("message_id", "") if isinstance(action.arguments, dict) else ""
            answer = extract_answer(question, seen)
            names = _entities(question)
            if answer and all(n.lower() in seen.lower() for n in names):
                return Action.call("return_final_answer", answer=answer, sources=[message_id])
            if reads < 2 and len(ids) > reads:
                return Action.call("read_email", message_id=ids[reads])
        return Action.call("return_final_answer", answer=IDK, sources=[])


class OraclePolicy:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            task = item.task
            if not isinstance(task, InboxQuestion):
                raise TypeError(f"the inbox oracle needs InboxQuestion tasks, got {type(task).__name__}")
            if task.answer is None or not task.sources:
                actions.append(Action.call("return_final_answer", answer=IDK, sources=[]))
            elif not item.own_turns():
                actions.append(Action.call("read_email", message_id=task.sources[0]))
            else:
                actions.append(Action.call("return_final_answer", answer=task.answer, sources=[task.sources[0]]))
        return actions


def stated_span(task: InboxQuestion, mail: str) -> str:
    """The gold answer as `mail` writes it: the first of the answer and its aliases found verbatim (then
    ignoring case, with the mail's casing); the answer itself if none is."""
    if task.answer is None:
        raise ValueError(f"question {task.id} has no answer to find in a mail")
    forms = (task.answer, *task.aliases)
    for form in forms:
        if form in mail:
            return form
    lowered = mail.lower()
    for form in forms:
        at = lowered.find(form.lower())
        if at >= 0:
            return mail[at:at + len(form)]
    return task.answer


class ReaderPolicy:
    """The heuristic's searches, reads in rank order, the gold span once a gold source is read (module docstring)."""

    info = PolicyInfo(name="reader")
    max_reads = 3
    max_searches = 2
    """Searches that find nothing before it gives up, its own or another policy's (as the heuristic does)."""

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._one(item) for item in inputs]

    def _one(self, item: PolicyInput) -> Action:
        task = item.task
        if not isinstance(task, InboxQuestion):
            raise TypeError(f"the inbox reader needs InboxQuestion tasks, got {type(task).__name__}")
        history = _exchanges(item)
        first, fallback = search_keywords(task.question)
        if not history:
            return Action.call("search_emails", keywords=first)
        read = [(str(a.arguments.get("message_id", "")), seen) for a, seen in history
                if a.tool == "read_email" and isinstance(a.arguments, dict)]
        gold = [(message_id, seen) for message_id, seen in read if message_id in task.sources]
        if task.answer is not None and gold:
            message_id, seen = gold[0]
            return Action.call("return_final_answer", answer=stated_span(task, seen), sources=[message_id])
        ids, searches, reads = _results(history)
        action = history[-1][0]
        if action.tool == "search_emails" and not _RESULT_ID.search(history[-1][1]):
            searched = {str(a.arguments.get("keywords", "")) for a, _ in history
                        if a.tool == "search_emails" and isinstance(a.arguments, dict)}
            untried = [k for k in dict.fromkeys((first, fallback)) if k not in searched]
            if untried and reads == 0 and searches < self.max_searches:
                return Action.call("search_emails", keywords=untried[0])
            if not ids:
                return Action.call("return_final_answer", answer=IDK, sources=[])
        opened = {message_id for message_id, _ in read}
        unread = [i for i in ids if i not in opened]
        if reads < self.max_reads and unread:
            return Action.call("read_email", message_id=unread[0])
        return Action.call("return_final_answer", answer=IDK, sources=[])


class RandomPolicy:
    info = PolicyInfo(name="random")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            rng = random.Random(f"inbox-random:{item.task.id}:{item.seed}:{len(item.history)}")
            spec = TOOLS[rng.choice(sorted(TOOLS))].spec
            arguments = random_arguments(spec, rng)
            seen = [i for _, s in _exchanges(item) for i in _RESULT_ID.findall(s) + _MESSAGE_ID.findall(s)]
            if spec.name == "read_email" and seen:
                arguments["message_id"] = rng.choice(seen)
            actions.append(Action(tool=spec.name, arguments=arguments))
        return actions


baselines: dict[str, Callable[[], Policy]] = {
    "random": RandomPolicy,
    "heuristic": HeuristicPolicy,
    "oracle": OraclePolicy,
    "reader": ReaderPolicy,
}
