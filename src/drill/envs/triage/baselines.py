"""Scripted triage policies: random (a floor), heuristic (top BM25 article), oracle (the gold answer).

All three are stateless: each action follows from the task id, the seed, the observation and the
history. Only the oracle reads ground truth from the task. In agent mode the heuristic and the
oracle go through the tools (search, open, submit) like any agent would.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from drill.core.policy import PolicyInput
from drill.core.tools import random_arguments
from drill.core.types import Action, PolicyInfo
from drill.envs.triage.corpus import Article, TriageTask
from drill.envs.triage.env import ticket_from_observation
from drill.envs.triage.search import knowledge_search
from drill.envs.triage.text import content_terms

_ID_IN_TEXT = re.compile(r"\b(KB-[A-Z]{2,5}-\d{3,6}|TCK-\d{3,7}|INC-\d{3,6})\b")
_READER_ARTICLE = re.compile(r"^\[(KB-[A-Z]{2,5}-\d{3,6})\] ", re.MULTILINE)
WEAK_MATCH = 4.85
"""A top BM25 score below this is a weak match: the lowest fifth of the train split, where 63% of tickets need
escalation (most have no knowledge-base answer), against 8-20% above it."""
CONFIDENCE_BY_MARGIN = ((0.125, 0.11), (0.29, 0.53), (0.49, 0.71), (float("inf"), 0.92))
"""(margin below, confidence): the heuristic's confidence from the top article's BM25 lead over the runner-up,
the share of its answers that are correct in each margin quartile of the train split. The earlier linear guess
(0.2 + 0.8 x margin) sat below those rates, so forcing confidence 1 beat the heuristic (`drill audit triage`)."""
CONDITION_CONFIDENCE = 0.22
"""The heuristic's confidence, at most, when the ticket meets the top article's escalation condition: the share of its
answers so escalated on the train split that are correct (4 of 18 at the default k=3). The condition says the
article's routine fix is not what the ticket needs, and since 2026-11-28 the rubric refuses the steps the gold rules
out on such a ticket (`TriageTask.ruled_out`), so the copied steps are mostly wrong there; at the margin's confidence
(up to 0.92) forcing "never escalate" beat the heuristic on test (`tests/audit/test_fixes.py`)."""
NO_MATCH_ANSWER = "No knowledge base article matches this ticket; escalating to the owning team for diagnosis."


def _is_reader(inp: PolicyInput) -> bool:
    return [t.name for t in inp.observation.tools] == ["submit_resolution"]


def _first_content(inp: PolicyInput) -> str:
    return inp.history[0].observation.content if inp.history else inp.observation.content


def _tools_used(inp: PolicyInput) -> list[str]:
    return [t.action.tool for t in inp.own_turns()]


class RandomPolicy:
    """Random tool calls; citations and opened ids are drawn from the ids the episode has shown."""

    info = PolicyInfo(name="random")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        rng = random.Random(f"triage-random:{inp.task.id}:{inp.seed}:{len(inp.history)}")
        shown = "\n".join([*(t.observation.content for t in inp.history), inp.observation.content])
        visible = list(dict.fromkeys(_ID_IN_TEXT.findall(shown)))
        spec = inp.observation.tools[rng.randrange(len(inp.observation.tools))]
        arguments: dict[str, Any] = random_arguments(spec, rng)
        if spec.name == "submit_resolution":
            lines = [line for line in shown.splitlines() if line.strip()]
            arguments["resolution"] = rng.choice(lines)
            arguments["citations"] = rng.sample(visible, k=min(len(visible), rng.randint(0, 2)))
        elif spec.name.startswith("get_") and visible:
            arguments = {next(iter(arguments)): rng.choice(visible)}
        return Action(tool=spec.name, arguments=arguments)


def escalation_condition_met(article: Article, ticket: str) -> bool:
    """The ticket mentions at least two words of the article's escalation condition that its title does not use."""
    condition = set(content_terms(article.escalate_when)) - set(content_terms(article.title))
    return len(condition & set(content_terms(ticket))) >= 2


class HeuristicPolicy:
    """Answer with the top BM25 article's resolution steps; confidence from its margin over the runner-up
    (calibrated on the train split); escalate on a weak match or when the ticket meets the article's escalation
    condition."""

    info = PolicyInfo(name="heuristic")

    def __init__(self, data_dir: str | Path | None = None) -> None:
        self.search = knowledge_search(data_dir)

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._reader(inp) if _is_reader(inp) else self._agent(inp) for inp in inputs]

    def _reader(self, inp: PolicyInput) -> Action:
        ticket = ticket_from_observation(inp.observation.content)
        shown = [i for i in _READER_ARTICLE.findall(inp.observation.content) if i in self.search.corpus.articles]
        scores = self.search.articles.score_of(ticket, shown)
        ranked = sorted(shown, key=lambda i: (-scores[i], shown.index(i)))
        return self.submission(ticket, [(i, scores[i]) for i in ranked])

    def _agent(self, inp: PolicyInput) -> Action:
        ticket = ticket_from_observation(_first_content(inp))
        used = _tools_used(inp)
        hits = self.search.articles.search(ticket, k=5)
        if "search_kb" not in used:
            return Action.call("search_kb", query=ticket, max_results=5)
        if "get_article" not in used and hits:
            return Action.call("get_article", article_id=hits[0].id)
        return self.submission(ticket, [(h.id, h.score) for h in hits])

    def submission(self, ticket: str, ranked: list[tuple[str, float]]) -> Action:
        if not ranked or ranked[0][1] <= 0:
            return Action.call("submit_resolution", resolution=NO_MATCH_ANSWER, citations=[], confidence=0.1,
                               escalate=True)
        top_id, top = ranked[0]
        runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
        margin = (top - runner_up) / top
        article = self.search.corpus.articles[top_id]
        # Escalate when the best article matches weakly (most such train tickets have no KB answer) or the ticket
        # meets the article's escalation condition. Escalating on a low margin instead was wrong more often than
        # right, so "never escalate" beat the heuristic (`drill audit triage`).
        unmatched = top < WEAK_MATCH
        condition = escalation_condition_met(article, ticket)
        confidence = CONFIDENCE_BY_MARGIN[0][1] if unmatched else next(
            c for below, c in CONFIDENCE_BY_MARGIN if margin < below)
        if condition:
            confidence = min(confidence, CONDITION_CONFIDENCE)
        escalate = unmatched or condition
        return Action.call("submit_resolution", resolution=" ".join(article.resolution), citations=[top_id],
                           confidence=confidence, escalate=escalate)


class OraclePolicy:
    """The gold answer with the gold citations and a calibrated confidence; in agent mode it opens the gold first."""

    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    @staticmethod
    def answer(task: TriageTask) -> Action:
        return Action.call("submit_resolution", resolution=task.gold_resolution,
                           citations=list(task.gold_article_ids), confidence=1.0 if task.answerable else 0.0,
                           escalate=task.should_escalate)

    def _act(self, inp: PolicyInput) -> Action:
        task = inp.task
        if not isinstance(task, TriageTask):
            raise TypeError(f"the triage oracle needs a TriageTask, got {type(task).__name__}")
        if _is_reader(inp):
            return self.answer(task)
        plan = [Action.call("search_kb", query=task.ticket, max_results=5)]
        plan += [Action.call("get_article", article_id=a) for a in task.gold_article_ids]
        step = len(inp.own_turns())
        return plan[step] if step < len(plan) else self.answer(task)
