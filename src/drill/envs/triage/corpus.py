"""The triage corpus: KB articles, historical tickets, incidents and the task set, read from a data folder.

The shipped corpus lives in `data/` next to this module (built by `tools/build_triage_corpus.py`);
any folder with the same four JSON files can stand in for it (tests point at a small fixture).
Loading validates the cross-references (every cited article exists, answerable tasks have gold
articles), so a broken corpus fails at load time with the file and id at fault, never mid-episode.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from drill.core.types import Task
from drill.envs.triage.text import content_terms, step_head

DEFAULT_DATA_DIR = Path(__file__).parent / "data"
CORPUS_FILES = ("articles.json", "tickets.json", "incidents.json", "tasks.json")
ID_PATTERN = re.compile(r"^(KB-[A-Z]{2,5}-\d{3,6}|TCK-\d{3,7}|INC-\d{3,6})$")
"""What a citable id looks like: a KB article, a historical ticket or an incident."""


class CorpusError(ValueError):
    """The data folder is missing a file or holds inconsistent records."""


class CorpusRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Article(CorpusRecord):
    id: str
    area: str
    title: str
    symptoms: list[str]
    cause: str
    resolution: list[str]
    escalate_when: str
    tags: list[str]


class Ticket(CorpusRecord):
    id: str
    title: str
    body: str
    resolution_note: str
    article_ids: list[str]
    opened: str
    status: str


class Incident(CorpusRecord):
    id: str
    title: str
    summary: str
    root_cause: str
    article_ids: list[str]
    severity: str
    date: str


class TriageTask(Task):
    """One ticket to resolve. Everything but `id`, `split` and `ticket` is ground truth."""

    ticket: str
    gold_resolution: str
    gold_article_ids: list[str]
    should_escalate: bool
    answerable: bool
    area: str
    key_terms: list[str] = []
    """The gold resolution's content terms that few answers of the corpus use (`with_key_terms`): what sets this
    answer apart from another ticket's. Derived when the corpus loads; empty means every gold term counts."""
    ruled_out_steps: list[int] = []
    """An answerable escalation ticket's gold article steps, by index, that its gold forbids or says will not help
    here (T-0219's gold "do not raise the limit" against the article's "If legitimate, raise the limit"): an answer
    that orders one is wrong (`drill.envs.triage.rubric.orders_a_ruled_out_step`)."""
    ruled_out: list[str] = []
    """Those steps' heads (`step_head`: what the reader prompt shows of a step). Derived when the corpus loads."""
    foreign_terms: list[str] = []
    """Terms that name another ticket's specifics (`with_foreign_terms`): the key terms of the other tickets that
    share a gold article, which neither this ticket, its gold nor its gold articles use ("prometheus", "exporter" in
    a neighbour's answer to a throttled cloud-custodian). Derived when the corpus loads."""


@dataclass(frozen=True)
class Corpus:
    data_dir: Path
    articles: dict[str, Article]
    tickets: dict[str, Ticket]
    incidents: dict[str, Incident]
    tasks: tuple[TriageTask, ...]

    def record(self, record_id: str) -> Article | Ticket | Incident | None:
        return self.articles.get(record_id) or self.tickets.get(record_id) or self.incidents.get(record_id)


def _read_records(path: Path, model: type[CorpusRecord] | type[TriageTask]) -> list[Any]:
    if not path.is_file():
        raise CorpusError(f"triage corpus file {path} does not exist")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise CorpusError(f"{path} must hold a JSON list of records, got {type(raw).__name__}")
    records = []
    for i, item in enumerate(raw):
        try:
            records.append(model.model_validate(item))
        except ValidationError as exc:
            where = item.get("id", f"#{i}") if isinstance(item, dict) else f"#{i}"
            raise CorpusError(f"{path.name} record {where}: {exc}") from None
    return records


def _by_id(records: list[Any], file: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for record in records:
        if record.id in out:
            raise CorpusError(f"{file}: duplicate id {record.id!r}")
        out[record.id] = record
    return out


def _check_references(corpus: Corpus) -> None:
    problems: list[str] = []
    for file, records in (("tickets.json", corpus.tickets.values()), ("incidents.json", corpus.incidents.values())):
        for record in records:
            problems += [f"{file} {record.id}: unknown article {a!r}" for a in record.article_ids
                         if a not in corpus.articles]
    for task in corpus.tasks:
        problems += [f"tasks.json {task.id}: unknown gold article {a!r}" for a in task.gold_article_ids
                     if a not in corpus.articles]
        if task.ruled_out_steps and not (task.answerable and task.should_escalate):
            problems.append(f"tasks.json {task.id}: ruled_out_steps on a ticket that is not an answerable escalation")
        if task.ruled_out_steps and (not task.gold_article_ids or task.gold_article_ids[0] not in corpus.articles
                                     or not all(0 <= i < len(corpus.articles[task.gold_article_ids[0]].resolution)
                                                for i in task.ruled_out_steps)):
            problems.append(f"tasks.json {task.id}: ruled_out_steps {task.ruled_out_steps} are not steps of its "
                            "first gold article")
        if task.answerable != bool(task.gold_article_ids):
            problems.append(f"tasks.json {task.id}: answerable={task.answerable} but "
                            f"{len(task.gold_article_ids)} gold articles")
    task_ids = [t.id for t in corpus.tasks]
    if len(set(task_ids)) != len(task_ids):
        problems.append("tasks.json: duplicate task ids")
    if problems:
        raise CorpusError(f"triage corpus in {corpus.data_dir} is inconsistent:\n  " + "\n  ".join(problems[:20]))


KEY_TERM_SHARE = 0.05
"""A gold term is a key term when at most this share of the corpus's answerable tickets use it in their gold
resolutions ("escalate", "on-call", "check" are not; "swanctl", "KSK", "registrar" are)."""


def with_key_terms(tasks: Sequence[TriageTask]) -> tuple[TriageTask, ...]:
    """The answerable tasks with `key_terms` set from the document frequency of terms over their golds (an
    unanswerable task is never correct, so it needs none)."""
    answerable = [t for t in tasks if t.answerable]
    frequency = Counter(term for t in answerable for term in set(content_terms(t.gold_resolution)))
    limit = KEY_TERM_SHARE * len(answerable)
    return tuple(t.model_copy(update={"key_terms": sorted(
        term for term in set(content_terms(t.gold_resolution)) if frequency[term] <= limit)}) if t.answerable else t
        for t in tasks)


def with_foreign_terms(tasks: Sequence[TriageTask], articles: Mapping[str, Article]) -> tuple[TriageTask, ...]:
    """The answerable tasks with `foreign_terms` set: a neighbouring ticket's answer (the same gold article, another
    host or service) was judged correct on 29 of 32 validation pairs, word overlap being all the judge reads (an
    outside red team, experiments/LOG.md, 2026-11-27)."""
    siblings: dict[str, list[TriageTask]] = defaultdict(list)
    for t in tasks:
        if t.answerable:
            for article in t.gold_article_ids:
                siblings[article].append(t)

    def article_terms(article: Article) -> set[str]:
        texts = [article.title, *article.symptoms, article.cause, *article.resolution, article.escalate_when]
        return {term for text in texts for term in content_terms(text)}

    out = []
    for t in tasks:
        if not t.answerable:
            out.append(t)
            continue
        own = set(content_terms(t.gold_resolution)) | set(content_terms(t.ticket))
        own |= {term for a in t.gold_article_ids if a in articles for term in article_terms(articles[a])}
        # a neighbour's specifics are the key terms of its gold that its own ticket names too (its host, its
        # service): words such as "team", "risk" or "would" are not, and an honest closing sentence may use them
        other = {term for a in t.gold_article_ids for s in siblings[a] if s.id != t.id
                 for term in set(s.key_terms) & set(content_terms(s.ticket))}
        out.append(t.model_copy(update={"foreign_terms": sorted(other - own)}))
    return tuple(out)


def with_ruled_out(tasks: Sequence[TriageTask], articles: Mapping[str, Article]) -> tuple[TriageTask, ...]:
    """The tasks with `ruled_out` set: the heads of their first gold article's `ruled_out_steps` (an index out of
    range is left for `_check_references` to name)."""
    out = []
    for t in tasks:
        steps = articles[t.gold_article_ids[0]].resolution if t.gold_article_ids and t.gold_article_ids[0] in articles \
            else []
        heads = [step_head(steps[i]) for i in t.ruled_out_steps if 0 <= i < len(steps)]
        out.append(t.model_copy(update={"ruled_out": heads}) if heads else t)
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _load(resolved_dir: str) -> Corpus:
    folder = Path(resolved_dir)
    articles = _by_id(_read_records(folder / "articles.json", Article), "articles.json")
    corpus = Corpus(
        data_dir=folder,
        articles=articles,
        tickets=_by_id(_read_records(folder / "tickets.json", Ticket), "tickets.json"),
        incidents=_by_id(_read_records(folder / "incidents.json", Incident), "incidents.json"),
        tasks=with_ruled_out(with_foreign_terms(with_key_terms(_read_records(folder / "tasks.json", TriageTask)),
                                                articles), articles),
    )
    _check_references(corpus)
    return corpus


def load_corpus(data_dir: str | Path | None = None) -> Corpus:
    """The corpus in `data_dir` (default: the shipped one), read once per process."""
    return _load(str(Path(data_dir or DEFAULT_DATA_DIR).resolve()))
