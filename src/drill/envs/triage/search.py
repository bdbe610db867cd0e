"""BM25 search over the triage corpus (articles, historical tickets, incidents), using bm25s.

Indexes are built once per process and data folder. Ranking is deterministic: every document is
scored, and ties are broken by corpus order, so the same query gives the same hits in any process.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from drill.envs.triage.corpus import Article, Corpus, Incident, Ticket, load_corpus
from drill.envs.triage.text import content_terms

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Hit:
    id: str
    score: float


class SearchIndex:
    """BM25 over one collection of documents."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        self.ids: tuple[str, ...] = tuple(ids)
        self._position = {doc_id: i for i, doc_id in enumerate(self.ids)}
        import bm25s  # imported on first use, so that `drill --help` stays fast

        self._bm25 = bm25s.BM25()
        self._bm25.index([content_terms(t) for t in texts], show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for `query`, in corpus order (all zero for an empty query)."""
        import numpy as np

        terms = content_terms(query)
        if not terms or not self.ids:
            return np.zeros(len(self.ids), dtype=np.float64)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float64)

    def score_of(self, query: str, doc_ids: Sequence[str]) -> dict[str, float]:
        scores = self.scores(query)
        return {d: float(scores[self._position[d]]) for d in doc_ids}

    def search(self, query: str, k: int, exclude: Collection[str] = ()) -> list[Hit]:
        """The top `k` documents with a positive score, best first; ties go to the earlier document."""
        import numpy as np

        scores = self.scores(query)
        order = np.lexsort((np.arange(len(scores)), -scores))
        hits: list[Hit] = []
        for i in order:
            if scores[i] <= 0 or len(hits) >= k:
                break
            if self.ids[i] not in exclude:
                hits.append(Hit(self.ids[i], round(float(scores[i]), 4)))
        return hits


def article_text(article: Article) -> str:
    return " ".join([article.title, *article.symptoms, article.cause, *article.resolution, " ".join(article.tags)])


def ticket_text(ticket: Ticket) -> str:
    return " ".join([ticket.title, ticket.body, ticket.resolution_note])


def incident_text(incident: Incident) -> str:
    return " ".join([incident.title, incident.summary, incident.root_cause])


@dataclass(frozen=True)
class KnowledgeSearch:
    corpus: Corpus
    articles: SearchIndex
    tickets: SearchIndex
    incidents: SearchIndex


@functools.lru_cache(maxsize=8)
def _build(resolved_dir: str) -> KnowledgeSearch:
    corpus = load_corpus(resolved_dir)
    return KnowledgeSearch(
        corpus=corpus,
        articles=SearchIndex(list(corpus.articles), [article_text(a) for a in corpus.articles.values()]),
        tickets=SearchIndex(list(corpus.tickets), [ticket_text(t) for t in corpus.tickets.values()]),
        incidents=SearchIndex(list(corpus.incidents), [incident_text(i) for i in corpus.incidents.values()]),
    )


def knowledge_search(data_dir: str | Path | None = None) -> KnowledgeSearch:
    """The corpus in `data_dir` (default: the shipped one) with its three BM25 indexes, built once per process."""
    return _build(str(load_corpus(data_dir).data_dir))
