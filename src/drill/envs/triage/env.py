"""The IT triage environment: resolve a user's ticket from a knowledge base, in one of two modes.

* **reader** (single turn): the observation holds the ticket and k KB articles (the gold ones plus
  BM25 distractors), shuffled per seed; the agent answers with one `submit_resolution` call.
  Whatever it does, the episode ends after that one action. This is the GRPO training target.
* **agent** (multi-turn): the agent searches articles, past tickets and incidents, opens records,
  and submits within a turn budget. Running out of turns ends the episode with no submission.

The environment only records what happened (`submitted`, `searched`, `opened`, `not_found`,
`invalid_action`, `no_submission` events); `drill.envs.triage.rubric` scores it. The `submitted`
event carries the answer and the ids the agent had seen, which is what citation grounding checks.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr

from drill.core.env import Env, check_split
from drill.core.tools import Tool
from drill.core.types import Event, Observation, StepResult
from drill.envs.triage.corpus import Article, Incident, Ticket, TriageTask
from drill.envs.triage.search import Hit, knowledge_search
from drill.envs.triage.text import step_head

Mode = Literal["reader", "agent"]
MODES: tuple[str, ...] = ("reader", "agent")


# -- tools: the functions are the schema the model reads ---------------------------------------------


def search_kb(query: Annotated[str, Field(strict=True)],
              max_results: Annotated[int, Field(ge=1, le=10, strict=True)] = 5) -> None:
    """Search the knowledge base articles (runbooks) by keywords; returns ids, BM25 scores and titles.

    Args:
        query: Keywords, e.g. the symptom or error message.
        max_results: How many hits to return (1-10).
    """


def search_tickets(query: Annotated[str, Field(strict=True)],
                   max_results: Annotated[int, Field(ge=1, le=10, strict=True)] = 5) -> None:
    """Search past support tickets by keywords; returns ids, scores, status and titles.

    Args:
        query: Keywords, e.g. the symptom or error message.
        max_results: How many hits to return (1-10).
    """


def search_incidents(query: Annotated[str, Field(strict=True)],
                     max_results: Annotated[int, Field(ge=1, le=10, strict=True)] = 5) -> None:
    """Search past incidents by keywords; returns ids, scores, severity and titles.

    Args:
        query: Keywords, e.g. the symptom or error message.
        max_results: How many hits to return (1-10).
    """


def get_article(article_id: Annotated[str, Field(strict=True)]) -> None:
    """Read one knowledge base article in full.

    Args:
        article_id: The article id, e.g. KB-NET-0012.
    """


def get_ticket(ticket_id: Annotated[str, Field(strict=True)]) -> None:
    """Read one past ticket in full, with its resolution note and linked articles.

    Args:
        ticket_id: The ticket id, e.g. TCK-10001.
    """


def get_incident(incident_id: Annotated[str, Field(strict=True)]) -> None:
    """Read one past incident in full, with its root cause and linked articles.

    Args:
        incident_id: The incident id, e.g. INC-2001.
    """


def submit_resolution(
    resolution: Annotated[str, Field(strict=True, pattern=r"\S")],
    citations: Annotated[list[StrictStr], Field(strict=True)],
    confidence: Annotated[float, Field(ge=0.0, le=1.0, strict=True)],
    escalate: Annotated[bool, Field(strict=True)],
) -> None:
    """Answer the ticket; ends the episode.

    Args:
        resolution: The fix, in short steps.
        citations: Ids of the articles used.
        confidence: Chance (0-1) the fix works.
        escalate: Hand the ticket to a human team.
    """


SUBMIT = Tool.from_function(submit_resolution)
AGENT_TOOLS: dict[str, Tool] = {
    t.name: t for t in (Tool.from_function(f) for f in (search_kb, search_tickets, search_incidents,
                                                          get_article, get_ticket, get_incident))
} | {SUBMIT.name: SUBMIT}
READER_TOOLS: dict[str, Tool] = {SUBMIT.name: SUBMIT}

READER_INSTRUCTIONS = (
    "Resolve the IT ticket with one submit_resolution call, using only the articles below: cite the ones you "
    "used, and escalate if none fits or its escalation condition is met."
)
AGENT_INSTRUCTIONS = (
    "You are an IT support engineer resolving a user's ticket. Search the knowledge base, past tickets and "
    "incidents, read what looks relevant, then call submit_resolution once: the fix in a few short steps, the "
    "ids of the records you used, your confidence (0 to 1) that the fix works, and escalate=true when a human "
    "team must take over. You have {budget} turns; if they run out before you submit, the ticket is lost."
)


# -- rendering --------------------------------------------------------------------------------------

TICKET_OPEN, TICKET_CLOSE = "<ticket>", "</ticket>"


def render_ticket(text: str) -> str:
    return f"{TICKET_OPEN}\n{text.strip()}\n{TICKET_CLOSE}"


def ticket_from_observation(content: str) -> str:
    """The ticket text inside an observation rendered by this environment (for scripted policies)."""
    start, end = content.find(TICKET_OPEN), content.find(TICKET_CLOSE)
    if start < 0 or end < start:
        raise ValueError("the observation holds no <ticket> block")
    return content[start + len(TICKET_OPEN):end].strip()


def article_steps(article: Article) -> str:
    """An article's step heads, joined: what the reader prompt shows of its procedure."""
    return "; ".join(step_head(step) for step in article.resolution)


def render_reader_article(article: Article) -> str:
    """An article as the reader prompt shows it: title, step heads and the escalation condition. Compact,
    because the GRPO trainer trains a 135M model on this prompt on CPU (about 100 tokens per article)."""
    return f"[{article.id}] {article.title}\nSteps: {article_steps(article)}.\nEscalate when: {article.escalate_when}"


def render_article(article: Article) -> str:
    lines = [f"[{article.id}] {article.title} ({article.area})", "Symptoms:"]
    lines += [f"- {s}" for s in article.symptoms]
    lines += [f"Cause: {article.cause}", "Resolution:"]
    lines += [f"{i}. {step}" for i, step in enumerate(article.resolution, 1)]
    lines += [f"Escalate when: {article.escalate_when}", f"Tags: {', '.join(article.tags)}"]
    return "\n".join(lines)


def render_ticket_record(ticket: Ticket) -> str:
    linked = ", ".join(ticket.article_ids) or "none"
    return (f"[{ticket.id}] {ticket.title} ({ticket.status}, opened {ticket.opened})\n{ticket.body}\n"
            f"Resolution note: {ticket.resolution_note}\nLinked articles: {linked}")


def render_incident(incident: Incident) -> str:
    linked = ", ".join(incident.article_ids) or "none"
    return (f"[{incident.id}] {incident.title} ({incident.severity}, {incident.date})\n{incident.summary}\n"
            f"Root cause: {incident.root_cause}\nLinked articles: {linked}")


# -- the environment --------------------------------------------------------------------------------


class TriageEnv(Env[TriageTask]):
    """IT ticket triage over a knowledge base. Options: mode, k (reader), turn_budget (agent), data_dir."""

    name = "triage"
    roles = ("agent",)
    task_type = TriageTask

    def __init__(self, mode: str = "reader", k: int = 3, turn_budget: int = 8, data_dir: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown triage mode {mode!r}; choose from {', '.join(MODES)}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if isinstance(turn_budget, bool) or not isinstance(turn_budget, int) or turn_budget < 1:
            raise ValueError(f"turn_budget must be a positive integer, got {turn_budget!r}")
        data_dir = None if data_dir is None else str(Path(data_dir))
        super().__init__(mode=mode, k=k, turn_budget=turn_budget, data_dir=data_dir)
        self.mode, self.k, self.turn_budget = mode, k, turn_budget
        self.search = knowledge_search(data_dir)
        self.corpus = self.search.corpus
        self._turn = 0
        self._seen: dict[str, None] = {}
        self._withheld: frozenset[str] = frozenset()

    # -- tasks and reader context ------------------------------------------------------------------

    def tasks(self, split: str = "test") -> list[TriageTask]:
        check_split(split)
        return [t for t in self.corpus.tasks if t.split == split]

    def task(self, task_id: str) -> TriageTask:
        for task in self.corpus.tasks:
            if task.id == task_id:
                return task
        raise KeyError(f"{self.name}: no task with id {task_id!r}")

    def reader_context(self, task: TriageTask, seed: int) -> list[Article]:
        """The articles the reader sees: every gold article plus the best BM25 distractors up to k, shuffled."""
        ids = list(dict.fromkeys(task.gold_article_ids))
        want = max(self.k, len(ids))
        for hit in self.search.articles.search(task.ticket, k=want, exclude=ids):
            if len(ids) < want:
                ids.append(hit.id)
        for article_id in self.corpus.articles:  # a ticket with too few BM25 hits: fill in corpus order
            if len(ids) >= want:
                break
            if article_id not in ids:
                ids.append(article_id)
        random.Random(f"triage-reader:{task.id}:{seed}").shuffle(ids)
        return [self.corpus.articles[i] for i in ids]

    # -- Env hooks ---------------------------------------------------------------------------------

    def _observation(self, content: str, error: str | None = None, done: bool = False) -> Observation:
        tools = [] if done else [t.spec for t in self._tools().values()]
        instructions = READER_INSTRUCTIONS if self.mode == "reader" else \
            AGENT_INSTRUCTIONS.format(budget=self.turn_budget)
        return Observation(role="agent", content=content, step=self._turn, tools=tools,
                           instructions=instructions, error=error)

    def withheld(self, task: TriageTask) -> frozenset[str]:
        """The past tickets the agent's tools leave out: those whose resolution note holds the task's gold resolution
        (an earlier ticket on the same host and article, closed with the very answer the task wants). 99 of the 101
        answerable test tasks had one, and searching the tickets with the ticket, opening the top hit and copying its
        note scored 0.901 in total and 0.853 success on test against the heuristic's 0.645 / 0.603 (an eighth red
        team, 2026-11-28): the answer was looked up, not worked out. A past ticket on another host is still there."""
        if not task.answerable:
            return frozenset()
        return frozenset(t.id for t in self.corpus.tickets.values() if task.gold_resolution in t.resolution_note)

    def _reset(self, task: TriageTask, seed: int) -> Observation:
        self._turn, self._seen, self._withheld = 0, {}, self.withheld(task)
        if self.mode == "reader":
            articles = self.reader_context(task, seed)
            self._seen = dict.fromkeys(a.id for a in articles)
            body = "\n\n".join(render_reader_article(a) for a in articles)
            content = f"{render_ticket(task.ticket)}\n\nArticles:\n{body}"
        else:
            content = (f"{render_ticket(task.ticket)}\n\nYou have {self.turn_budget} turns. Search, read, "
                       "then call submit_resolution.")
        return self._observation(content)

    def _tools(self) -> Mapping[str, Tool]:
        return READER_TOOLS if self.mode == "reader" else AGENT_TOOLS

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        self._turn += 1
        if tool == SUBMIT.name:
            return self._submit(arguments)
        if tool.startswith("search_"):
            content, events = self._search(tool, arguments["query"], arguments["max_results"])
            return self._continue(content, events)
        record_id = arguments[f"{tool.removeprefix('get_')}_id"]
        record = self._records(tool).get(record_id)
        if record is None or record.id in self._withheld:
            kind = tool.removeprefix("get_")
            error = f"{tool}: there is no {kind} with id {record_id[:80]!r}; use an id from a search result"
            event = Event(name="not_found", step=self._turn, role="agent", data={"tool": tool, "id": record_id[:80]})
            return self._continue(f"No {kind} {record_id[:80]!r}.", [event], error)
        self._seen[record.id] = None
        rendered = (render_article(record) if isinstance(record, Article) else
                    render_ticket_record(record) if isinstance(record, Ticket) else render_incident(record))
        event = Event(name="opened", step=self._turn, role="agent", data={"tool": tool, "id": record.id})
        return self._continue(rendered, [event])

    def _acting(self) -> tuple[str, int]:
        return "agent", self._turn + 1  # events carry the turn they end, numbered from 1

    def _reject(self, message: str, event: Event) -> StepResult:
        self._turn += 1
        if self.mode == "reader":
            return self._end_without_submission([event], "your answer was not a valid submit_resolution call",
                                                error=message)
        return self._continue("Your last action was rejected.", [event], message)

    # -- helpers -----------------------------------------------------------------------------------

    def _records(self, tool: str) -> Mapping[str, Article | Ticket | Incident]:
        if tool == "get_article":
            return self.corpus.articles
        return self.corpus.tickets if tool == "get_ticket" else self.corpus.incidents

    def _search(self, tool: str, query: str, max_results: int) -> tuple[str, list[Event]]:
        index = {"search_kb": self.search.articles, "search_tickets": self.search.tickets,
                 "search_incidents": self.search.incidents}[tool]
        hits = index.search(query, k=max_results, exclude=self._withheld)
        self._seen.update(dict.fromkeys(h.id for h in hits))
        lines = [f"{tool} {query[:200]!r}: {len(hits)} hit{'s' if len(hits) != 1 else ''}"]
        lines += [self._hit_line(tool, h) for h in hits]
        event = Event(name="searched", step=self._turn, role="agent",
                      data={"tool": tool, "query": query[:200], "hits": [h.id for h in hits]})
        return "\n".join(lines), [event]

    def _hit_line(self, tool: str, hit: Hit) -> str:
        if tool == "search_kb":
            return f"{hit.id} ({hit.score:.2f}) {self.corpus.articles[hit.id].title}"
        if tool == "search_tickets":
            ticket = self.corpus.tickets[hit.id]
            return f"{hit.id} ({hit.score:.2f}) [{ticket.status}] {ticket.title}"
        incident = self.corpus.incidents[hit.id]
        return f"{hit.id} ({hit.score:.2f}) [{incident.severity} {incident.date}] {incident.title}"

    def _continue(self, content: str, events: list[Event], error: str | None = None) -> StepResult:
        """Answer a non-final action; in agent mode, end the episode when the turn budget is spent."""
        if self._turn >= self.turn_budget:
            return self._end_without_submission(events, f"the turn budget of {self.turn_budget} turns ran out",
                                                error=error, content=content)
        left = self.turn_budget - self._turn
        return StepResult(observation=self._observation(f"{content}\n\n({left} turn{'s' if left != 1 else ''} left)",
                                                        error=error), events=events)

    def _end_without_submission(self, events: list[Event], reason: str, error: str | None = None,
                                content: str = "") -> StepResult:
        end = Event(name="no_submission", step=self._turn, role="agent", data={"reason": reason})
        text = f"{content}\n\n" if content else ""
        return StepResult(observation=self._observation(f"{text}Episode over: {reason}; nothing was submitted.",
                                                        error=error, done=True),
                          events=[*events, end], done=True)

    def _submit(self, arguments: dict[str, Any]) -> StepResult:
        articles = [i for i in self._seen if i in self.corpus.articles]
        event = Event(name="submitted", step=self._turn, role="agent", data={
            "resolution": arguments["resolution"],
            "citations": list(arguments["citations"]),
            "confidence": float(arguments["confidence"]),
            "escalate": arguments["escalate"],
            "seen_ids": list(self._seen),
            # what each article seen had to copy (its step heads, as the reader prompt shows them): the rubric tells
            # an answer from a list of the seen articles' steps by it
            "seen_articles": articles,
            "seen_steps": [article_steps(self.corpus.articles[i]) for i in articles],
        })
        return StepResult(observation=self._observation("Episode over: resolution submitted.", done=True),
                          events=[event], done=True)
