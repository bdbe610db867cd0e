"""Inbox teachers: scripted demonstrators for SFT that write more than the baselines do.

* `QuotingReader` — the `reader` baseline's calls, each after a ReAct thought: the kind of answer the question
  asks for, and before an answer the line of the mail that states it (`quote`). ReAct SFT
  (`drill train inbox --react`) trains on the thought and the call, so the model is taught to quote the line,
  then copy a span of its own quote. `experiments/inbox_extractive_sft.py --quote` trains on it; what that gave
  is in experiments/LOG.md.

Like the reader, a teacher reads the task's ground truth, so it is a demonstrator, never a baseline to compare
against.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from drill.core.policy import PolicyInput
from drill.core.types import Action, PolicyInfo
from drill.envs.inbox.baselines import ReaderPolicy
from drill.envs.inbox.questions import is_abstention
from drill.models.policy import render_react

__all__ = ["KINDS", "QuotingReader", "quote"]

KINDS = {"date": "a date", "place": "a place", "amount": "an amount", "name": "a name", "code": "a code"}
"""How a thought names the kind of answer a question asks for, by `InboxQuestion.kind`."""


def quote(mail: str, forms: Sequence[str], width: int = 40) -> str:
    """The line of `mail`'s body that states the answer, cut at words about `width` characters either side of it:
    the first line that holds one of `forms` (the answer as written, then its aliases), else the first of the lines
    that hold most of their words ("Monday the 30th" for September 30). What the teacher's thought quotes."""
    body = [line.lstrip("> ").strip() for line in mail.split("\n\n", 1)[-1].splitlines()
            if not line.startswith("Tool calls left")]
    for form in forms:
        for text in body:
            at = text.lower().find(form.lower())
            if at >= 0:
                return _around(text, at, at + len(form), width)
    words = {w for form in forms for w in re.findall(r"[a-z0-9]+", form.lower())}

    def stated(text: str) -> list[re.Match]:  # the answer's words in the line ("7" in "7th" counts)
        return [m for m in re.finditer(r"[a-z0-9]+", text.lower())
                if any(m.group().startswith(w) and m.group()[len(w):] in ("", "st", "nd", "rd", "th") for w in words)]
    hits, best = max(((stated(text), text) for text in body), key=lambda pair: len({m.group() for m in pair[0]}))
    if not hits:
        raise ValueError(f"no line of the mail the teacher answers from states any of {list(forms)}")
    longest = max(hits, key=lambda m: len(m.group()))
    return _around(best, longest.start(), longest.end(), width)


def _around(text: str, start: int, end: int, width: int) -> str:
    """text[start:end] with about `width` characters either side, cut at spaces, "..." where it was cut."""
    left = text.rfind(" ", 0, max(0, start - width)) + 1 if start > width else 0
    right = text.find(" ", end + width) if len(text) > end + width else -1
    return ("..." if left else "") + text[left:right if right >= 0 else len(text)] + ("..." if right >= 0 else "")


class QuotingReader:
    """The reader (`ReaderPolicy`) with a ReAct thought before each call: the kind of answer the question asks
    for, and before an answer the line of the mail that states it, so the model quotes first and then copies a
    span of its own quote. The thought is in `Action.raw`, which ReAct SFT trains on."""

    info = PolicyInfo(name="reader-quoting")

    def __init__(self) -> None:
        self.reader = ReaderPolicy()

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self.with_thought(item, action) for item, action in zip(inputs, self.reader.act(inputs), strict=True)]

    @staticmethod
    def with_thought(item: PolicyInput, action: Action) -> Action:
        kind = KINDS.get(item.task.kind, "the answer")
        reads = sum(t.action.tool == "read_email" for t in item.own_turns())
        if action.tool == "search_emails":
            thought = f"The question asks for {kind}. I will search the inbox."
        elif action.tool == "read_email":
            thought = (f"The question asks for {kind}. I will read the first result." if not reads else
                       f"That mail does not state {kind} for this question. I will read the next result.")
        elif is_abstention(str(action.arguments["answer"])):
            thought = f"No mail I read states {kind} for this question."
        else:
            source = f"Message-ID: {action.arguments['sources'][0]}"
            seen = [item.observation.content, *(t.observation.content for t in reversed(item.own_turns()))]
            mail = next((text for text in seen if source in text), None)
            if mail is None:
                raise ValueError(f"task {item.task.id}: the reader cites {source}, which it has not read")
            forms = (action.arguments["answer"], *item.task.aliases)
            thought = f"The question asks for {kind}. The mail says: \"{quote(mail, forms)}\""
        return action.model_copy(update={"raw": render_react(thought, action.tool, action.arguments)})
