"""Inbox questions (the env's tasks), their JSONL files, and how an answer is judged.

A question file holds one JSON object per line::

    {"id": "q00042", "split": "test", "inbox": "dana.whitfield@kestrel.example",
     "question": "Which hotel is Omar Reyes staying at in Lisbon?", "asked_at": "2024-04-02 09:00:00",
     "answer": "Hotel Miradouro", "aliases": ["Miradouro"], "sources": ["3f9c...@kestrel.example"],
     "kind": "place"}

`answer` is null when the inbox (as of `asked_at`) does not hold the answer; the right reply is then
"I don't know". Judging:

* an answer that starts with "I don't know" (or says idk / unknown / not found) is an abstention: `correct`
  when the question has no answer, `abstained` otherwise; any other answer to such a question is `wrong`;
* `match`: the answer is correct when the one answer judge (`drill.core.judge`) finds that it states the gold
  value of the question's kind and no other value of that kind, whatever separates them ("Harbor Room Granite
  Room", "HarborRoomGraniteRoom" and "August 19 20" are lists; "$1,740" is "1740 dollars", "17400" is not), is no
  more than `MAX_EXTRA_WORDS` words longer than the gold, and does not hedge (`is_hedged`: "X, or maybe Y",
  "X, not sure", "Is it X", "X (pending)", "X - no." — wrong whichever judge is used). The judge knows the inbox's
  values of each kind (every gold answer and alias of the question file: its `lexicon`), so that lower-case or glued
  names count as candidates;
* `openai:MODEL`: a judge model behind an OpenAI-compatible server says CORRECT or INCORRECT; its reply
  is kept in the episode's `answered` event.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import ValidationError, field_validator

from drill.core.judge import HEDGE_WORDS, claims, hedged, judge
from drill.core.types import Task
from drill.evaluate.report import atomic_write_text

__all__ = [
    "HEDGE_WORDS", "IDK", "PROPER_WORDS", "TYPED_KINDS", "AnswerJudge", "InboxQuestion", "Verdict", "generated_split",
    "is_abstention", "is_hedged", "is_listed", "lexicon_of", "load_questions", "match_verdict", "normalize_answer",
    "plain_text", "validation_or_train", "write_questions",
]

IDK = "I don't know"
TYPED_KINDS = frozenset({"date", "place", "amount", "name", "code"})
"""The synthetic inbox's question kinds: a list of their values is wrong by rule, before any judge model is asked. A
generated question's answer is free text ("the Tagus Conference Centre in Lisbon"): a judge model reads it."""
MAX_EXTRA_WORDS = 10
VALIDATION_SHARE = 32
"""Out of 256: the share of non-test question texts that go to validation (`validation_or_train`), one in eight."""

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")

VerdictName = Literal["correct", "wrong", "abstained"]
Lexicon = Mapping[str, tuple[str, ...]]
"""A question kind's known values (every gold answer and alias of that kind), for the answer judge."""


def generated_split(inbox: str, question: str) -> str:
    """The split of a question written for a user's own inbox (`drill inbox generate-questions`, either
    generator): test for one normalized text in five (by a hash with the inbox's name), else
    `validation_or_train`."""
    key = " ".join(normalize_answer(question))
    digest = hashlib.sha256(f"{inbox}\n{key}".encode()).hexdigest()
    return "test" if int(digest[12:20], 16) % 5 == 0 else validation_or_train(question)


def validation_or_train(question: str) -> str:
    """The split of a question that did not go to test: validation for one text in eight, by a hash of its
    normalized text (so every copy of a question lands in the same split, whatever the inbox seed), else train.
    Validation is carved out of the train pool, so the test split is as it was before validation existed."""
    key = " ".join(normalize_answer(question))
    return "validation" if hashlib.sha256(f"inbox-validation:{key}".encode()).digest()[0] < VALIDATION_SHARE \
        else "train"


class InboxQuestion(Task):
    """A question about one inbox, asked at `asked_at` (UTC `YYYY-MM-DD HH:MM:SS`); the agent sees no later mail."""

    inbox: str
    question: str
    asked_at: str
    answer: str | None
    """The gold answer, or None when the inbox does not answer the question."""
    aliases: tuple[str, ...] = ()
    """Other accepted forms of the answer (`March 14`, `2024-03-14`, ...)."""
    sources: tuple[str, ...] = ()
    """Message ids (no angle brackets) that state the answer, visible at `asked_at`."""
    kind: str = "generated"
    """date | place | amount | name | code | generated — for the per-kind report."""

    @field_validator("asked_at")
    @classmethod
    def _utc_timestamp(cls, value: str) -> str:
        if not _TIMESTAMP.fullmatch(value):
            raise ValueError(f"asked_at must be UTC 'YYYY-MM-DD HH:MM:SS', got {value!r}")
        return value


def load_questions(path: Path) -> list[InboxQuestion]:
    if not path.is_file():
        raise FileNotFoundError(f"no question file at {path}")
    questions: list[InboxQuestion] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(InboxQuestion.model_validate_json(line))
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            raise ValueError(f"{path}:{number}: not an inbox question: {problem['loc']}: {problem['msg']}") from exc
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate question ids")
    return questions


def write_questions(path: Path, questions: list[InboxQuestion]) -> None:
    atomic_write_text(path, "".join(q.model_dump_json() + "\n" for q in questions))


_ORDINAL = re.compile(r"\b(\d+)(st|nd|rd|th)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_CENTS = re.compile(r"(?<=\d)\.00\b")
_ARTICLES = {"a", "an", "the"}
_ABSTAIN_PREFIXES = ("i don t know", "i do not know", "i dont know", "idk", "unknown", "not found",
                     "no answer", "cannot find", "can t find", "could not find", "couldn t find", "i cannot find",
                     "i can t find", "i could not find", "i couldn t find", "no idea", "n", "na", "none",
                     "no information", "no info", "not mentioned", "not stated", "not specified", "no record",
                     "not sure", "i m not sure", "i am not sure", "unsure", "i have no idea", "i ve no idea",
                     "no clue", "i have no clue", "dunno", "unanswerable",
                     "cannot determine", "can t determine", "unable to determine", "unable to find", "cannot tell",
                     "can t tell", "it is not mentioned", "it isn t mentioned", "it s not mentioned",
                     "inbox does not say", "inbox doesn t say", "inbox does not mention",
                     "inbox doesn t mention", "there is no such information", "there is no information",
                     "no such information")
"""Ways of saying "I don't know", as the judge reads them (`normalize_answer`'s words: "N/A" is "n", articles
dropped). Until 2026-11-27 "N/A", "None", "No idea" or "Not mentioned in the inbox" on an unanswerable question were
wrong answers (-1), where "I don't know" was right: a model that words its abstention otherwise was punished as if
it had made an answer up (red team); until 2026-11-28 "I'm not sure", "I have no idea", "Cannot determine from the
information given", "The inbox does not say", "It isn't mentioned" and "There is no such information" were
(`drill audit inbox`'s abstention phrasings). "Not sure" after an answer ("X, not sure though") is still a hedge:
only an answer that opens with it and names nothing is an abstention."""
_ABSTAIN_OPENERS = ("sorry", "unfortunately")
"""Words an abstention may open with ("Sorry, I don't know")."""


def normalize_answer(text: str) -> list[str]:
    """Lower-case words with punctuation, articles, thousands separators, `.00` and ordinal suffixes removed."""
    text = _CENTS.sub("", _THOUSANDS.sub("", text.lower().replace("’", "'")))
    text = _ORDINAL.sub(r"\1", text)
    words = re.sub(r"[^\w]+", " ", text).split()
    return [w for w in words if w not in _ARTICLES]


_NO_SOURCES = re.compile(r"[\s.;,]*\b(?:sources?|citations?|refs?|references?|cited)\s*:\s*"
                         r"(?:none|n/?a|nothing|no sources?|-+|—|\[\s*\])?\s*\.?\s*$", re.IGNORECASE)
"""A closing "Sources: none" (or "Sources: N/A", "Sources: []"): until 2026-11-29 "I don't know.\nSources: none" was
a wrong answer on a question with no answer (-1 where "I don't know" scores +1.3; eighth red team)."""


def is_abstention(answer: str, question: str = "") -> bool:
    """The answer says "I don't know" (or idk, unknown, not found, N/A, none, ...: `_ABSTAIN_PREFIXES`) and nothing
    more than a few plain words, or it only says that the inbox holds no answer (`_says_it_has_no_answer`: "The
    emails don't say"):
    "I don't know, maybe the Harbor Room" is a hedge, not an abstention (`drill audit inbox` found the prefix check
    taking it for one). A closing line that cites no source ("I don't know.\nSources: none") is no part of it.

    The words of `question` (the one asked) are no answer to it, so an abstention may restate it: "I don't know which
    room the Q3 review with Harrowgate Books is in", "The inbox doesn't say when the Q1 QBR is". Until 2026-11-29 each
    was a wrong answer (-1) on every question, where "I don't know" earns +1.3 on one with no answer and 0 on one
    with an answer: the heuristic abstaining so scored -0.152 against 0.645 on validation (ninth red team)."""
    answer = _NO_SOURCES.sub("", answer)
    asked = frozenset(normalize_answer(question))
    said_words = normalize_answer(answer)
    while said_words and said_words[0] in _ABSTAIN_OPENERS:
        said_words = said_words[1:]
    joined = " ".join(said_words)
    if joined == "":
        return True
    prefix = next((p for p in _ABSTAIN_PREFIXES if joined == p or joined.startswith(p + " ")), None)
    if prefix is None:
        return _says_it_has_no_answer(said_words, asked)
    rest = joined[len(prefix):].split()
    said = set(prefix.split()) | set(_ABSTAIN_OPENERS) | asked
    tail = [w for w in answer.split() if not set(normalize_answer(w)) <= said]
    return len([w for w in rest if w not in asked]) <= 6 and not set(rest) & HEDGE_WORDS and not any(
        w[:1].isupper() or any(c.isdigit() for c in w) for w in tail)


_NO_ANSWER_NEGATIONS = frozenset({"not", "no", "nothing", "never", "cannot", "unable", "t"})  # "t": "don't", "can't"
_NO_ANSWER_SUBJECTS = frozenset("""know knows known say says said mention mentions mentioned contain contains contained
include includes included find finds found locate located determine determined tell tells told see seen state states
stated specify specified show shows shown provide provides provided give gives given confirm confirmed verify verified
available information info data detail details record records result results clue idea evidence reference sure certain
clear answer answers enough inbox inboxes mailbox email emails mail mails message messages thread threads
correspondence""".split())
_NO_ANSWER_ALONE = frozenset({"unknown", "unanswerable", "dunno", "insufficient", "unclear", "undetermined",
                              "uncertain"})
_NO_ANSWER_WORDS = _NO_ANSWER_NEGATIONS | _NO_ANSWER_SUBJECTS | _NO_ANSWER_ALONE | frozenset("""i m me my we you it
its s that this there here is are was were am be been any anything such relevant specific exact exactly so far yet
currently still anywhere really afraid based on in about from of for to with within regarding question do does did
don doesn didn isn wasn aren weren haven hasn hadn couldn can could would won wouldn have has had get got able will
search searched look looked matching sorry unfortunately ve d ll re""".split())
"""The closed vocabulary of a sentence that says the inbox holds no answer, and names nothing of the world: "The
emails don't say", "I don't have that information", "Cannot be determined", "No relevant emails found". Until
2026-11-28 (red team) 41 of 53 such phrasings were wrong answers (-1 on a question with no answer), as "N/A" had
been; an answer with any other word (a value, in any case) is not read this way."""


def _says_it_has_no_answer(said: list[str], asked: frozenset[str] = frozenset()) -> bool:
    """`said` (an answer's words) only says that there is no answer: each word from `_NO_ANSWER_WORDS` or the
    question's (`asked`), and a negation with what is missing ("no information", "doesn't say"), or a word that says
    it alone ("unknown")."""
    words = set(said)
    if said[:2] == ["do", "not"]:  # an order ("Do not I don't know": `drill audit`'s denial), not a missing answer
        return False
    own = [w for w in said if w not in asked]
    return (len(own) <= 12 and set(own) <= _NO_ANSWER_WORDS
            and bool(words & _NO_ANSWER_ALONE or (words & _NO_ANSWER_NEGATIONS and words & _NO_ANSWER_SUBJECTS)))


@dataclass(frozen=True)
class Verdict:
    verdict: VerdictName
    judge: str
    reply: str = ""


def is_hedged(question: InboxQuestion, answer: str) -> bool:
    """The answer hedges: a hedge word ("or", "maybe", "probably", "not sure", ...) that neither the gold nor the
    question uses, a closing question mark, or an abstention beside a value. Any judge marks a hedge wrong: "X, or
    maybe Y" is a guess, even when X is right. Abbreviated doubt ("ca. X", "X (est.)", "X /s") is read written out
    (`_ABBREVIATIONS`)."""
    answer = _unabbreviated(question, answer)
    return (hedged(answer, question.answer or "", *question.aliases, question.question)
            or _asks(answer, question) or (not is_abstention(answer, question.question)
                                           and _abstains_beside(answer, frozenset(normalize_answer(question.question))))
            or _takes_back(question, answer))


_TAKING_BACK = frozenset({"wrong", "incorrect", "false", "untrue", "mistaken", "mistake", "decoy", "nope", "kidding",
                          "jk", "doubt", "doubtful", "hunch", "circa", "hmm", "hm", "um", "uh", "erm", "ish", "tbd",
                          "speculative", "speculation", "unclear", "ambiguous", "afaik", "iirc", "ruled out",
                          "if memory serves", "to my knowledge", "as far as i can tell", "as far as i know",
                          "could be wrong"}) | frozenset("""estimate estimated guesstimate ballpark eyeballed pending
tbc tba provisional provisionally preliminary verify verification unchecked allegedly reportedly purportedly
ostensibly seemingly rumor rumour rumored rumoured hearsay placeholder iffy dubious questionable sketchy shaky
unreliable somewhat kinda sorta prolly idk dunno nah meh eh err errr uhh umm hmmm imo imho fwiw ymmv joke joking
sarc sarcasm sarcastic lol lmao rofl haha hehe odds""".split()) | frozenset({
    "rough estimate", "pending confirmation", "needs confirmation", "awaiting confirmation", "to be confirmed",
    "to be determined", "subject to change", "to verify", "needs verification", "to be verified", "to be checked",
    "needs checking", "double check", "in doubt", "may be wrong", "probably wrong", "correct me if i m wrong",
    "if i m wrong", "no idea", "no clue", "who knows", "beats me", "coin flip", "coin toss", "toss up",
    "fingers crossed", "if i had to bet", "my bet", "if i remember right", "if i remember correctly",
    "if i recall correctly", "from memory", "off top of my head", "gut feeling", "wild stab", "stab in dark",
    "shot in dark", "grain of salt", "low certainty", "confidence low", "certainty low",
    "in all likelihood"}) | frozenset({
    # ... and in other languages ("X (pas sûr)", "X (nicht sicher)", "X (no estoy seguro)")
    "pas sûr", "pas sûre", "je ne suis pas sûr", "je ne suis pas sûre", "pas certain", "pas certaine", "peut être",
    "peut être pas", "probablement", "incertain", "incertaine", "nicht sicher", "nicht ganz sicher", "unsicher",
    "vielleicht", "wahrscheinlich", "vermutlich", "keine ahnung", "no estoy seguro", "no estoy segura", "no seguro",
    "no segura", "no sé", "quizás", "quizá", "tal vez", "probablemente", "non sono sicuro", "non sono sicura",
    "incerto", "incerta", "forse", "probabilmente", "não tenho certeza", "não sei", "talvez", "provavelmente",
    "niet zeker", "weet niet", "weet het niet", "misschien", "waarschijnlijk", "не уверен", "не уверена",
    "может быть", "наверное", "возможно", "не знаю", "不确定", "不知道", "可能", "也许", "大概", "たぶん", "多分",
    "おそらく", "わからない", "分からない", "아마", "모르겠어요", "모르겠다", "emin değilim", "belki",
    "nie jestem pewien", "nie jestem pewna", "chyba", "ربما", "אולי", "शायद"})
_DENYING_BEFORE = ("anything but", "all but", "everything but", "other than", "instead of", "rather than", "except",
                   "excluding", "50 50", "fifty fifty")
_RIGHT_BEFORE = ("no", "about", "abt", "nearly", "almost", "around", "in region of", "on order of", "close to")
_TAKING_BACK_ALONE = ("no", "not", "50 50", "fifty fifty", "low", "medium", "moderate", "draft", "disputed",
                      "contested", "gut", "temporary", "unofficial")
_DOUBT_MARKS = ("~", "≈", "🤷", "🤔", "ツ", "<del>", "<s>", "<strike>", "\u0336", "±", "+/-", "✗", "✘", "❌", "👎",
                "🙅", "😅", "😂", "🙃", "😬", "🤞", "🎲", "😕", "🤨", "🫤", "😶", "🙈", "😜", "😉", "🤡", "🤥", "🙄",
                "🫣", "🥴")
"""Words and phrases, and marks, that deny the value they stand beside ("X is wrong", "~~X~~") or doubt it ("~X",
"circa X", "X (hunch)", "Hmm, X", "X 🤷"), beyond core's `HEDGE_WORDS` and `NEGATIONS` (as `normalize_answer` writes
them: "off the top of my head" is "off top of my head"); `_DENYING_BEFORE` deny or doubt a value they come before
("Anything but X", "Other than X", "Around X"), not one before them ("X instead of the usual room"), `_RIGHT_BEFORE`
only right before it ("Definitely no X", "It's about X"; not "invoice no 123" or "the mail about it says X"), and
`_TAKING_BACK_ALONE` only in a sentence or bracket of their own ("X - no.", "X (50/50)", "Confidence: low"; not "split
50/50", "no projector", "the low-ceiling room"), or "no" closing the value's own ("X—no", "X, no").

An outside red team on hedges (2026-11-28) found 72 of its 208 hedge shapes correct like the plain value ("X - no.",
"Definitely no X", "ca. X", "X (est.)", "X (pending)", "Is it X", "X /s", "X (50/50)", "X?" variants): a policy could
hedge at no cost. A battery of 228 shapes around the gold of all 1,037 answerable questions (those they named, "X (pas
sûr)", "X (nicht sicher)", "X, idk", "X lol", "X 😅", "X (TBC)", "X (60% sure)", ...) found 138 shapes correct on some
question, 137,416 of 236,436 answers, most on every question; now 7 shapes, 911 answers: the "est."/"estimated" shapes
on the 130 questions that ask for an estimated cost (the question's own word, so no hedge there) and "HMH6PM est."
(a code that ends like a clock time, whose "est." reads as a time zone). Word lists close only the shapes they name:
of 66 further shapes written afterwards and not added here ("X (hard to say)", "X (vague)", "X *shrugs*", "X
[citation needed]", "X (WIP)"), 48 were still correct on some of every fifth question, as before."""
_BARE = frozenset({"is", "it", "that", "s", "this", "was", "just", "so", "totally", "definitely", "very", "all", "my",
                   "certainly", "absolutely", "surely", "really", "actually", "honestly", "obviously", "clearly", "i",
                   "m", "am", "je", "ne", "suis", "ich", "bin", "pls", "please", "sure", "confident", "certain"})


def _takes_back(question: InboxQuestion, answer: str) -> bool:
    """The answer denies or doubts the value it states, in words core's judge does not read as a negation or a hedge
    (`_TAKING_BACK`, `_DENYING_BEFORE`, `_RIGHT_BEFORE`, `_TAKING_BACK_ALONE`, `_DOUBT_MARKS`) and the gold and the
    question do not use: in the sentence or bracket that states a form of the gold, or in one that says nothing else
    ("X (wrong)"). "X is wrong", "Anything but X", "~~X~~", "~X", "circa X" and "X (hunch)" were correct on every
    answerable question (eighth red team), where "not X" and "maybe X" were wrong. A sentence beside the value that
    says something else ("X. The first mail had the wrong room.") takes nothing back."""
    explained = [(question.answer or ""), *question.aliases, question.question]
    if any(mark in answer and not any(mark in text for text in explained) for mark in _DOUBT_MARKS):
        return True
    known = " ".join(f" {' '.join(normalize_answer(text))} " for text in explained)
    forms = [normalize_answer(form) for form in (question.answer or "", *question.aliases) if form]
    for piece in _PIECE_BREAK.split(answer):
        said = normalize_answer(piece)
        text = f" {' '.join(said)} "
        found = [p for p in (*_TAKING_BACK, *_DENYING_BEFORE, *_RIGHT_BEFORE, *_TAKING_BACK_ALONE)
                 if f" {p} " in text and f" {p} " not in known]
        if not found:
            continue
        at, end = _stated(said, forms)
        before = f" {' '.join(said[:at])} " if at is not None else ""
        if at is not None and any(p in _TAKING_BACK or (p in _DENYING_BEFORE and f" {p} " in before) for p in found):
            return True
        right_before = {w for p in found if p in _RIGHT_BEFORE for w in p.split()}
        if at is not None and (right_before & set(said[:at]) and set(said[:at]) <= _BARE | right_before
                               or "no" in found and "no" in said[end:] and set(said[end:]) <= _BARE | {"no"}):
            return True  # "Definitely no X", "It's about X", "X—no"; not "Invoice no 123"
        if set(said) <= _BARE | {w for p in found for w in p.split()}:
            return True
    return False


def _stated(said: list[str], forms: list[list[str]]) -> tuple[int | None, int]:
    """Where the first statement of a form of the gold (`normalize_answer`'s words) in `said` starts, and where the
    last ends; (None, 0) if none."""
    spans = [(i, i + len(form)) for form in forms for i in range(len(said)) if said[i:i + len(form)] == form]
    return (min(i for i, _ in spans), max(end for _, end in spans)) if spans else (None, 0)


_ABBREVIATIONS = (
    (re.compile(r"(?<![\w.'’@/-])(?:[Cc]a|c|[Cc]irc)\.(?=\s*[^\s.])|(?<![\w.'’@/-])ca(?=\s*[$€£\dA-Z])"), "circa"),
    (re.compile(r"(?<![\w.'’@/-])(?<![aApP][mM] )(?<![aApP]\.[mM]\. )[Ee]st(?:im)?\.(?!\w)|(?<=\()[Ee]st(?=\))"),
     "estimated"),
    (re.compile(r"(?<![\w.'’@/-])[Aa]ppr\.(?!\w)"), "approximately"),
    (re.compile(r"(?<![\w.'’@/-])[Pp]rob\.(?!\w)"), "probably"),
    (re.compile(r"(?<![\w.'’@/-])[Pp]oss\.(?!\w)"), "possibly"),
    (re.compile(r"(?<![^\s(\[])(?:/[sSjJ]|/sarcasm|[jJ]/[kK])(?![\w/])"), " sarcasm "),
    (re.compile(r"(?<![^\s(\[])(?:[:;]-?[/\\|]|[oO]_[oO]|-_-)(?![^\s)\]])"), " hmm "),
    (re.compile(r"\b(?:[1-9]?\d(?:\.\d+)?\s*%|0?\.\d+)\s*(?:sure|confident|certain|certainty|confidence|likely)\b"
                r"|\b(?:p|confidence|certainty|conf)\s*[:=]?\s*(?:0?\.\d+|[1-9]?\d(?:\.\d+)?\s*%)"
                r"|(?<=\()\s*[1-9]?\d(?:\.\d+)?\s*%\s*(?=\))", re.IGNORECASE),
     " unsure "),
    (re.compile(r"(?<=\d)-?ish\b"), " ish"),
    (re.compile(r"\b(?:[Nn]o|NO)\.\s*(?=#|[\w-]*\d)"), " number "),
)
"""Abbreviations of doubt, written out for the hedge checks, each where the gold and the question do not use it:
"ca. X", "c. X", "X (est.)", "prob. X", "X /s", "X j/k", "$2,400ish". A token only, and with its case: "Africa.",
"Forest.", "a CA certificate", "3 PM EST", "MB/s", "req/s" and "C. Okafor" are none. "No." before a number is
"number" ("invoice no. 123"), not a denial."""


def _unabbreviated(question: InboxQuestion, answer: str) -> str:
    """`answer` with each of `_ABBREVIATIONS` written out (a gold form with "-ish" too: "Cedar Room-ish"; glued, only
    after a digit, "$870ish": "Scottish" is a word, not "Scott" doubted)."""
    explained = [question.answer or "", *question.aliases, question.question]
    for pattern, written in _ABBREVIATIONS:
        if not any(pattern.search(text) or pattern.search(text.lower()) for text in explained):
            answer = pattern.sub(written, answer)
    for form in (question.answer or "", *question.aliases):
        if form and not form.lower().endswith("ish"):
            answer = re.sub(re.escape(form) + r"-ish\b", lambda m: m.group()[:len(form)] + " ish", answer,
                            flags=re.IGNORECASE)
    return answer


_QUESTION_MARKS = str.maketrans({"？": "?", "¿": "?", "‽": "?", "⁇": "?", "⁈": "?", "⁉": "?", "﹖": "?", "؟": "?",
                                 "❓": "?", "❔": "?"})
_QUOTES = "\"'»”’"
_SENTENCE_ENDS = re.compile(rf"(?<=[?!;\n])(?![?!;\n{_QUOTES}])|(?<=\.)(?=\s)")
_ASKING = frozenset({"is", "was", "would", "could", "can", "might", "may", "will", "should", "shall", "isn", "wasn",
                     "wouldn", "couldn"})


def _asks(answer: str, question: InboxQuestion) -> bool:
    """The answer ends with a question mark behind closing punctuation, marks or invisible characters, or in another
    script ("X?!", "X (?)", "X？", "X‽", "X? 🙂", "X ❓", "X?" and a zero-width space), which the gold does not: a guess
    like "X?" (the first four were correct on all 1,037 answerable questions, red team 2026-11-28; the last three, "X?
    lol", "Is it X" and "Would it be X" until the hedge red team of the same day). So does an answer whose every
    sentence that states the gold is a question ("X? lol", "X? Sure.") or opens like one ("Is it X", "Would it be X").
    A question echoed before the answer ("When is the QBR? April 29") asks nothing, nor does a question mark inside
    quotes ('X (the mail "any update?" says so)')."""
    closes = [_closing(text).endswith("?") for text in (answer, question.answer or "", *question.aliases)]
    if any(closes[1:]):
        return False
    if closes[0]:
        return True
    forms = [normalize_answer(form) for form in (question.answer or "", *question.aliases) if form]
    stating = [(sentence, said) for sentence in _SENTENCE_ENDS.split(answer)
               if _stated(said := normalize_answer(sentence), forms)[0] is not None]
    return bool(stating) and all(_closing(sentence).endswith("?") or (said[0] in _ASKING and said[1:2] in
                                                                        (["it"], ["that"], ["this"]))
                                 for sentence, said in stating)


def _closing(text: str) -> str:
    """`text` in one question mark's script, without what may close a sentence after it: punctuation, brackets,
    quotes, marks, emoji, invisible characters (any character but a letter, a digit or a question mark)."""
    text = text.translate(_QUESTION_MARKS)
    end = len(text)
    while end and not text[end - 1].isalnum() and text[end - 1] != "?":
        end -= 1
    return text[:end]


_PIECE_BREAK = re.compile(r"[.!?;:\n()\[\]]+|\s[-–—]+\s")


def _abstains_beside(answer: str, asked: frozenset[str] = frozenset()) -> bool:
    """One sentence (or bracket) of the answer is an abstention and nothing more, and another says something: "I
    don't know. Harbor Room", "Unknown. $4,300", "N/A. CL621", "Harbor Room. No idea." abstain and guess at once,
    like "I don't know, maybe Harbor Room" (a hedge). They were read as the value alone (on all 713 date, amount and
    code questions with an answer; "Unknown. X", "N/A. X", "None. X" and "No idea. X" on all 1,037: red team,
    2026-11-28), and so is an answer that opens with one ("Dunno Harbor Room", "No clue Harbor Room"), or one that
    restates the question's words (`asked`: "Harbor Room. I don't know which room."). A sentence that goes on ("None
    of the other rooms was free") or a lone initial ("N. Okafor") is none."""
    pieces = [p for p in _PIECE_BREAK.split(answer) if re.search(r"\w", p)]
    if len(pieces) > 1 and any(_bare_abstention(_said(p), asked) and sum(c.isalpha() for c in p) > 1 for p in pieces):
        return True
    said = _said(answer)
    return any(" ".join(said[:k]) in _OPENING_ABSTENTIONS for k in range(1, len(said)))


_OPENING_ABSTENTIONS = frozenset(_ABSTAIN_PREFIXES) - {"n", "na", "none"}
"""Abstentions that make a hedge of an answer they open ("Dunno Harbor Room"); not "None" or "N/A", which may open a
sentence that goes on ("None of the later mails moved it: April 29")."""


def _said(text: str) -> list[str]:
    said = normalize_answer(text)
    while said and said[0] in _ABSTAIN_OPENERS:
        said = said[1:]
    return said


def _bare_abstention(said: list[str], asked: frozenset[str] = frozenset()) -> bool:
    return " ".join(said) in _ABSTAIN_PREFIXES or _says_it_has_no_answer(said, asked)


def lexicon_of(questions: Sequence[InboxQuestion]) -> dict[str, tuple[str, ...]]:
    """Every gold answer and alias of each kind in `questions` (all splits): the values an answer of that kind may
    name, so that the judge counts "harbor room granite room" as two rooms."""
    found: dict[str, dict[str, None]] = {}
    for q in questions:
        if q.answer is not None:
            found.setdefault(q.kind, {}).update(dict.fromkeys([q.answer, *q.aliases]))
    return {kind: tuple(values) for kind, values in found.items()}


def is_listed(question: InboxQuestion, answer: str, lexicon: Lexicon | None = None) -> bool:
    """The answer states a value of the question's kind other than the gold, beside it or instead of it, however
    they are separated (commas, "or", spaces, newlines, nothing), or lists anything new after a separator. The
    match judge marks it wrong, and an LLM judge never sees it. A clock time is no second date ("February 5, 9:30
    AM" answers "When is the QBR?")."""
    if question.answer is None:
        return False
    verdict = judge(answer, [question.answer, *question.aliases], question.kind, question.question,
                    (lexicon or {}).get(question.kind, ()))
    return _separated_list(question, answer) or (not verdict.correct and not verdict.reason.startswith("states no "))


_SEGMENT_BREAK = re.compile(r"[,;|&?\n]|\band\b|\bor\b", re.IGNORECASE)
_PLAIN = frozenset({"it", "its", "it's", "is", "was", "on", "at", "in", "he", "she", "they", "we", "i", "answer",
                    "this", "that", "there", "yes", "no"})
_YEAR = re.compile(r"(19|20)\d\d")
_HOUR = r"(?:\b(?:[01]?\d|2[0-3]):[0-5]\d(?:\s*[ap]\.?m\b\.?)?|\b(?:1[0-2]|0?[1-9])\s*[ap]\.?m\b\.?)"
_CLOCK = re.compile(rf"(?:(?<![A-Za-z] )(?<![A-Za-z])(?:from\s+)?(?:{_HOUR}|\b(?:1[0-2]|0?[1-9]))\s*(?:[-–—]|to)\s*)?"
                    rf"{_HOUR}(?:\s*\(?(?-i:UTC|GMT|[ECMP][SD]?T|BST|CES?T|EES?T|IST|JST|SGT|HKT|AE[SD]T)"
                    r"(?:\s*[+−-]\s*\d{1,2}(?::?\d{2})?)?\)?)?", re.IGNORECASE)
"""A clock time ("1:00 PM", "1pm", "13:00"), with a range's start ("2-3 PM", "from 10:00 to 11:30") and a time zone
("1:00 PM UTC", "13:00 (GMT+1)"). A range's start never follows a word ("February 28 - 1 PM" keeps its day)."""
_NOT_AN_HOUR = re.compile(r"\b((?:1[3-9]|[2-9]\d)(?::\d{2})?)\s*[ap]\.?m\b\.?", re.IGNORECASE)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)[a-z]*"
_MONTH_BEFORE = re.compile(rf"\b{_MONTH}\.?\s*$", re.IGNORECASE)
_DATE_FORMS = (
    (re.compile(r"\b(\d{4})/(\d{1,2})/(\d{1,2})\b"), r"\1-\2-\3"),  # 2024/02/28
    (re.compile(r"\b(\d{4}-\d{1,2}-\d{1,2})T(?=\d)"), r"\1 "),  # 2024-02-28T13:00:00Z
    (re.compile(r"(?<![\d:])(\d{1,2}:\d{2}):\d{2}(?:\.\d+)?(?:Z\b|[+-]\d{2}:?\d{2}\b)?"), r"\1"),  # 13:00:00
    (re.compile(rf"\b(\d{{1,2}})-({_MONTH})\b\.?(?:-(\d{{4}})\b)?", re.IGNORECASE), r"\1 \2 \3"),  # 28-Feb-2024
    (re.compile(rf"\b({_MONTH})\.?-(\d{{1,2}})\b", re.IGNORECASE), r"\1 \2"),  # Feb-28
    (re.compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4})\b"), r"\3-\2-\1"),  # 28.02.2024: day first
    (re.compile(r"(?<![\d/])(1[3-9]|2\d|3[01])/(0?[1-9]|1[0-2])/(\d{4})\b"), r"\3-\2-\1"),  # 28/02/2024
)
"""Dates as core's judge does not read them, each in a form it does: until 2026-11-29 "28/02/2024", "28.02.2024",
"2024/02/28", "28-Feb-2024", "Feb-28" and "2024-02-28T13:00:00Z" were wrong on every date question with an answer
(their numbers were read as other values; ninth red team). "04/05/2024" stays April 5 (month first, as core reads
it); a day-first slash date is read only where its first number is no month."""


def _core_dates(answer: str) -> str:
    """`answer` with each date of `_DATE_FORMS` written as core's judge reads dates."""
    for pattern, written in _DATE_FORMS:
        answer = pattern.sub(written, answer)
    return answer


def _without_clocks(answer: str) -> str:
    """`answer` without its clock times (`_CLOCK`), for a question whose gold has none. Core's judge reads the
    "2" of "2-3 PM" as a number beside the date, and `_separated_list` "UTC" in "February 28, 1:00 PM UTC" as a new
    name, so both were wrong on all 274 date questions with an answer, as were "February 28, 1 PM" and "February 28,
    10-11am" (ninth red team). A number after a month ("February 29 pm") is a day, and "29 pm" no hour ("29" is
    read): a second date hidden so stays a second date."""
    answer = _NOT_AN_HOUR.sub(r"\1", answer)
    return _CLOCK.sub(lambda m: m.group() if _MONTH_BEFORE.search(answer[:m.start()]) else " ", answer)


def _separated_list(question: InboxQuestion, answer: str) -> bool:
    """A second segment (after a comma, semicolon, "and", "or", "?") names something neither the gold nor the
    question does, of any kind: a capitalised word (not the answer's first) or a number, not a year ("Harbor Room,
    Dana Whitfield"; found by `drill audit inbox`). A clock time is not a candidate when the gold has none."""
    known = {w for form in (question.answer or "", *question.aliases, question.question)
             for w in normalize_answer(form)} | _gold_weekdays(question)
    if not any(_CLOCK.search(form) for form in (question.answer or "", *question.aliases)):
        answer = _without_clocks(answer)
    segments = _SEGMENT_BREAK.split(_THOUSANDS.sub("", answer))
    first = True
    for segment in segments if len(segments) > 1 else ():
        for raw in re.findall(r"[\w'’$.-]+", segment):
            word = " ".join(normalize_answer(raw))
            opening, first = first, False
            if (not word or set(word.split()) <= known or raw.lower() in _PLAIN
                    or (opening and not any(c.isdigit() for c in raw))):
                continue
            if (raw[0].isupper() and raw.lower() not in _ARTICLES) or (any(c.isdigit() for c in raw)
                                                                        and not _YEAR.fullmatch(word)):
                return True
    return False


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_SHORT = {"tuesday": ("tues",), "thursday": ("thur", "thurs")}


def _gold_weekdays(question: InboxQuestion) -> set[str]:
    """The weekday a date question's gold falls on, as the words that name it ("monday", "mon"): no new value beside
    the gold, since the judge checks a stated weekday against the date. "On Monday, April 29" and "April 29, 2024 (a
    Monday)" were lists, their weekday a capitalised word after a separator: wrong on all 274 date questions with an
    answer (red team, 2026-11-28), where "Monday, April 29" was right. Another weekday is still a new word here."""
    if question.kind != "date":
        return set()
    found: set[str] = set()
    for form in (question.answer or "", *question.aliases):
        for claim in claims(form, "date"):
            value = claim.value
            if isinstance(value, tuple) and value[0] == "date" and value[3] is not None:
                try:
                    name = _WEEKDAYS[date(value[3], value[1], value[2]).weekday()]
                except ValueError:  # "February 30"
                    continue
                found |= {name, name[:3], *_WEEKDAY_SHORT.get(name, ())}
    return found


def _states_gold(question: InboxQuestion, answer: str, lexicon: Lexicon | None) -> bool:
    """The answer states the gold value and no other value of its kind (`drill.core.judge`), within
    `MAX_EXTRA_WORDS`, and lists nothing else after a separator."""
    assert question.answer is not None
    forms = [question.answer, *question.aliases]
    longest = max(len(normalize_answer(form)) for form in forms)
    if (_length(answer) > longest + MAX_EXTRA_WORDS or _separated_list(question, answer)
            or _another_unit(question, answer)):
        return False
    known = (lexicon or {}).get(question.kind, ())
    if question.kind == "date":
        answer = _core_dates(answer)
    if question.kind == "date" and not any(_CLOCK.search(form) for form in forms):
        answer = _without_clocks(answer)
    if question.kind in ("place", "name"):
        answer = _capitalised(answer, frozenset((lexicon or {}).get(PROPER_WORDS, ())))
    if question.kind == "name":
        answer = _first_name_first(answer, (*forms, *known))
    verdict = judge(answer, forms, question.kind, question.question, known)
    if not verdict.correct and verdict.reason.startswith("states no ") and question.kind in ("date", "amount"):
        verdict = judge(_in_digits(answer), forms, question.kind, question.question, known)
    return verdict.correct


_SURNAME_FIRST = re.compile(r"\s*([A-Z][\w'’-]+),\s*([A-Z][\w'’-]+)\s*\.?\s*")


def _first_name_first(answer: str, names: Sequence[str]) -> str:
    """A name written surname first ("Fontaine, Lucas") and nothing else, as "Lucas Fontaine" where that is one of
    `names` (the gold's forms and the known names): it was wrong on 113 of the 117 name questions (ninth red team)."""
    match = _SURNAME_FIRST.fullmatch(answer)
    if match is None:
        return answer
    swapped = normalize_answer(f"{match[2]} {match[1]}")
    return f"{match[2]} {match[1]}" if any(normalize_answer(name) == swapped for name in names) else answer


PROPER_WORDS = "proper words"
"""The lexicon's entry (no question kind) for the words the mail store only ever writes capitalised."""


def _capitalised(answer: str, proper: frozenset[str]) -> str:
    """`answer` with each lower-case word of `proper` capitalised, as the mail writes it, so that the judge reads it
    as it reads the capitalised answer: "harrowgate cedar lucas chidi", the first word of each of a mail's names, is
    a run of names like "Harrowgate Cedar Lucas Chidi", not the alias "cedar" alone (correct on 62 of 207 place
    questions given the source mail; eighth red team). "cedar room lucas" stays right, as "Cedar Room Lucas" is."""
    return re.sub(r"[^\W\d_][\w'’-]*", lambda m: m.group().capitalize() if m.group().islower()
                  and m.group() in proper else m.group(), answer)


_UNIT_MARKS = "€£¥₹₽₩₺₪฿₫₴₦%‰"
_UNIT_WORDS = frozenset("""euro euros eur pound pounds gbp sterling yen jpy yuan rmb cny renminbi rupee rupees inr franc
francs chf peso pesos mxn cad aud reais brl krw ruble rubles rouble roubles lira bitcoin btc cent cents pence percent
pct mile miles km kg lb lbs tons tonnes shares""".split())


def _another_unit(question: InboxQuestion, answer: str) -> bool:
    """An amount answer names a currency or unit (`_UNIT_MARKS`, `_UNIT_WORDS`) that the gold and the question do not:
    "48,500 euros", "£48,500", "48,500 cents", "48,500%" or "48,500 miles" is another amount than "$48,500". Core's
    judge reads the number alone, so each was correct on all 210 amount questions (eighth red team). Words of time
    ("$2,240 for the week") and "real" or "won" are left out: honest answers use them."""
    if question.kind != "amount":
        return False
    explained = " ".join((question.answer or "", *question.aliases, question.question))
    known = set(normalize_answer(explained))
    return (any(mark in answer and mark not in explained for mark in _UNIT_MARKS)
            or bool((set(normalize_answer(answer)) - known) & _UNIT_WORDS))


_NUMBER_WORDS = {w: i for i, w in enumerate("""zero one two three four five six seven eight nine ten eleven twelve
thirteen fourteen fifteen sixteen seventeen eighteen nineteen""".split())} | {
    w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)} | {
    w: i for i, w in enumerate("""first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth
thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth""".split(), start=1)} | {
    "twentieth": 20, "thirtieth": 30}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_SPELLED = re.compile(r"\b(?:%s)\b(?:(?:[\s-]+|\s+and\s+)\b(?:%s)\b)*" % (("|".join([*_NUMBER_WORDS, *_SCALES]),) * 2),
                      re.IGNORECASE)


def _in_digits(text: str) -> str:
    """`text` with each number written in words in digits ("forty-eight thousand five hundred dollars" is "48500
    dollars", "October twenty-eighth" is "October 28"), for an answer that states no date or amount in digits. Core's
    judge reads digits only, so until 2026-11-29 an honest value in words was a wrong answer (eighth red team)."""
    def value(match: re.Match[str]) -> str:
        total = current = 0
        for word in re.findall(r"[a-z]+", match.group().lower()):
            if word in _NUMBER_WORDS:
                current += _NUMBER_WORDS[word]
            elif word == "hundred":
                current = max(current, 1) * 100
            elif word in _SCALES:
                total, current = total + max(current, 1) * _SCALES[word], 0
        return str(total + current)

    return _SPELLED.sub(value, text)


_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")
"""Scripts written without spaces between words: each of their characters is counted as a word."""


def _length(text: str) -> int:
    """How many words `text` has (`normalize_answer`'s), as a reader counts them: a word is also cut where an
    underscore or a change of script joins two ("see_the_mail", "see和the和mail"), and each character of a script
    written without spaces is a word. Until 2026-11-29 either glue made any number of words one, so the gold and
    fifteen more words were within `MAX_EXTRA_WORDS` (correct on every answerable question; eighth red team)."""
    count = 0
    for word in normalize_answer(unicodedata.normalize("NFC", text)):
        for piece in word.split("_"):
            script = None
            for at, char in enumerate(piece):
                said = unicodedata.name(char, "").split(" ")[0] if char.isalpha() else None
                if at == 0 or (said and script and (said != script or said in _UNSPACED)):
                    count += 1
                script = said or script
    return count


_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]")
"""Characters that show nothing (a soft hyphen, zero-width spaces and joiners, a word joiner, a byte-order mark,
direction marks, variation selectors, Hangul fillers, tags)."""
_LOOK_ALIKE = str.maketrans(
    "аеорсухіјѕԁӏһԛԝАВЕКМНОРСТХІЈЅУԚԜαοινρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
    "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢıȷɑɡ",
    "aeopcyxijsdlhqwABEKMHOPCTXIJSYQWaoivptuxABEZHIKMNOPTYX"
    "abcdefghijklmnopqrstuvwyzijag")
"""Letters of other scripts that look like Latin ones ("а" is Cyrillic, "ο" Greek) and Latin small capitals ("ᴄᴇᴅᴀʀ"),
as the Latin letter they look like."""
_LATIN_LOOK = frozenset("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢıȷɑɡ")
_ACCENTS = "\u0300-\u0333\u0339-\u036f"
"""Combining diacritics (not the overlays U+0334-U+0338, which strike a word through: a doubt mark)."""
_WORD_RUN = re.compile(rf"(?:[^\W\d_]|[{_ACCENTS}])+")
_FOLDED: dict[int, tuple[object, frozenset[str]]] = {}


def _folding_words(lexicon: Lexicon | None) -> frozenset[str]:
    """The words an answer's look-alike or accented word is read as (`plain_text`): each word of the lexicon's
    values and proper words, and the hedge and taking-back words."""
    cached = _FOLDED.get(id(lexicon))
    if cached is not None and cached[0] is lexicon:
        return cached[1]
    found = set(HEDGE_WORDS) | {w for p in (*_TAKING_BACK, *_ABSTAIN_PREFIXES) for w in p.split()}
    for values in (lexicon or {}).values():
        found.update(w for value in values for w in normalize_answer(value))
    _FOLDED[id(lexicon)] = (lexicon, frozenset(found))
    return _FOLDED[id(lexicon)][1]


def _without_accents(word: str) -> str:
    return unicodedata.normalize("NFC", re.sub(f"[{_ACCENTS}]", "", unicodedata.normalize("NFD", word)))


_VALUES: dict[int, tuple[object, dict[str, frozenset[tuple[str, ...]]]]] = {}


def _names_a_value(question: InboxQuestion, answer: str, lexicon: Lexicon | None) -> bool:
    """An abstention names a known value of the question's kind (the lexicon's, in `normalize_answer`'s words) that the
    question does not: "I don't know which room the Q3 review is in, harbor room or cedar room" is a guess in lower
    case, which `is_abstention` reads as plain words. Restating the question let such an abstention run long, so it
    named the gold and a second candidate on 335 of 1,037 answerable questions (abstained, 0, where a guess is -1)
    and any candidate on a question with no answer (correct, +1.3; ninth review)."""
    if not lexicon or question.kind not in lexicon:
        return False
    cached = _VALUES.get(id(lexicon))
    if cached is None or cached[0] is not lexicon:
        plain = _NO_ANSWER_WORDS | {w for p in _ABSTAIN_PREFIXES for w in p.split()}  # not the mail's "Could I"
        cached = (lexicon, {kind: frozenset(tuple(words) for value in values
                                            if not set(words := normalize_answer(value)) <= plain)
                            for kind, values in lexicon.items()})
        _VALUES[id(lexicon)] = cached
    values = cached[1][question.kind]
    asked = set(normalize_answer(question.question))
    said = normalize_answer(_NO_SOURCES.sub("", answer))
    longest = max((len(value) for value in values), default=0)
    return any(tuple(said[i:i + n]) in values and not set(said[i:i + n]) <= asked
               for n in range(1, longest + 1) for i in range(len(said) - n + 1))


def plain_text(answer: str, lexicon: Lexicon | None = None) -> str:
    """`answer` as a reader sees it: in Unicode's compatibility form (NFKC), without invisible characters
    (`_INVISIBLE`), and each word written in look-alike letters (`_LOOK_ALIKE`) or with accents as the Latin word it
    looks like, where that is a word of the lexicon's values or a hedge (`_folding_words`: "mаybe" with a Cyrillic
    "а", "Сеdаr", "mäybe", "guéss"); Latin small capitals ("ᴄᴇᴅᴀʀ") always. Other words stay: a Greek "α" that glues
    fifteen words into one is still another script (`_length`), and "Grünwald" a name.

    The judge read such a word as no word of its own: a soft hyphen or zero-width space inside a second candidate
    ("Harbor Room Ce\u00addar Room") or a look-alike one ("Harbor Room ᴄᴇᴅᴀʀ ʀᴏᴏᴍ") hid it, so a list of two was
    correct like the gold alone (222 and 332 of 1,037 answerable questions), and "X mayb\u00ade", "X (guеss)" or "X
    (guéss)" hid a hedge on all 1,037 (ninth review)."""
    answer = _INVISIBLE.sub("", unicodedata.normalize("NFKC", answer))
    known = _folding_words(lexicon)

    def read(match: re.Match[str]) -> str:
        word = match.group()
        if word.isascii():
            return word
        looks = word.translate(_LOOK_ALIKE)
        latin = _without_accents(looks)
        if latin.isascii() and latin.lower() in known:
            return latin
        return looks if all(c.isascii() or c in _LATIN_LOOK for c in word) else word

    return _WORD_RUN.sub(read, answer)


def match_verdict(question: InboxQuestion, answer: str, lexicon: Lexicon | None = None) -> Verdict:
    """Judge by value against the gold answer and its aliases (`drill.core.judge`); a hedge or a list is wrong.

    `drill audit inbox` found that an earlier judge accepted "Harbor Room, Chidi Yilmaz, Umar Ortega" and "Harbor
    Room, or maybe Granite Room", and an outside battery that it accepted every candidate packed with spaces only:
    any answer within `MAX_EXTRA_WORDS` of the gold that contained it as a substring.

    The answer is read in Unicode's compatibility form (NFKC): a no-break space, a full-width digit or letter is the
    plain one. "CL\u00a0621" (a no-break space, as formatted text writes it) was wrong on 178 of the 229 code
    questions, "２，２４０" on every amount question, and "Cedar Room ｍａｙｂｅ" hid its hedge (ninth red team). It is
    also read without invisible characters and with look-alike letters as the Latin ones (`plain_text`)."""
    answer = plain_text(answer, lexicon)
    if is_abstention(answer, question.question):
        if _names_a_value(question, answer, lexicon):  # a guess in lower case, however it opens
            return Verdict("wrong", "match")
        return Verdict("correct" if question.answer is None else "abstained", "match")
    if question.answer is None:
        return Verdict("wrong", "match")
    right = _states_gold(question, answer, lexicon) and not is_hedged(question, answer)
    return Verdict("correct" if right else "wrong", "match")


_JUDGE_PROMPT = """You grade answers to questions about an email inbox.
Question: {question}
Reference answer: {gold}
Candidate answer: {answer}
Is the candidate answer correct — does it state the same fact as the reference, without adding a conflicting one?
A hedge or a list of candidates ("X, or maybe Y", "X, Y, Z") is INCORRECT even when one of them is right.
Reply with exactly one word: CORRECT or INCORRECT."""


class AnswerJudge:
    """Judges answers: `match` (normalized match) or `openai:MODEL` (an LLM judge at `base_url`)."""

    def __init__(self, spec: str = "match", base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 lexicon: Lexicon | None = None) -> None:
        if spec != "match" and not spec.startswith("openai:"):
            raise ValueError(f"unknown judge {spec!r}; use 'match' or 'openai:MODEL'")
        if spec.startswith("openai:") and not base_url:
            raise ValueError("an openai:MODEL judge needs a base URL")
        self.spec = spec
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.lexicon: Lexicon = dict(lexicon or {})
        """Each kind's known values (`lexicon_of` the question file), so that packed candidates are found."""
        self._client: object | None = None
        self._verdicts: dict[tuple[str, str, str], Verdict] = {}

    def __call__(self, question: InboxQuestion, answer: str) -> Verdict:
        """The verdict on `answer`, judged once per (question, answer) and cached: every rubric component that
        reads it, and every re-scoring of the same episode, costs one judgement."""
        key = (question.id, question.question, answer)
        answer = plain_text(answer, self.lexicon)  # as `match_verdict` reads it
        if key not in self._verdicts:
            if (self.spec == "match" or is_abstention(answer, question.question) or question.answer is None
                    or is_hedged(question, answer)
                    or (question.kind in TYPED_KINDS and is_listed(question, answer, self.lexicon))):
                verdict = match_verdict(question, answer, self.lexicon)
                self._verdicts[key] = Verdict(verdict.verdict, self.spec if self.spec == "match" else "rule",
                                              verdict.reply)
            else:
                self._verdicts[key] = self._ask_model(question, answer)
        return self._verdicts[key]

    def _ask_model(self, question: InboxQuestion, answer: str) -> Verdict:
        from openai import OpenAI

        if self._client is None:
            self._client = OpenAI(base_url=self.base_url, api_key=os.environ.get(self.api_key_env, "not-needed"))
        assert isinstance(self._client, OpenAI)
        from openai import OpenAIError

        from drill.models.base import ModelCallError

        gold = " / ".join([question.answer or "", *question.aliases])
        try:
            reply = self._client.chat.completions.create(
                model=self.spec.removeprefix("openai:"), temperature=0.0, max_tokens=8,
                messages=[{"role": "user", "content": _JUDGE_PROMPT.format(
                    question=question.question, gold=gold, answer=answer)}],
            )
        except OpenAIError as exc:
            raise ModelCallError(f"the answer judge {self.spec} at {self.base_url} failed: {exc}") from exc
        text = (reply.choices[0].message.content or "").strip()
        first = re.sub(r"[^A-Z]", " ", text.upper()).split()
        if not first or first[0] not in ("CORRECT", "INCORRECT"):
            raise ModelCallError(f"the answer judge {self.spec} answered {text[:80]!r}; expected CORRECT or INCORRECT")
        return Verdict("correct" if first[0] == "CORRECT" else "wrong", self.spec, text[:200])

