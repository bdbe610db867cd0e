"""Tokenization shared by triage search and scoring, so BM25, ROUGE-L and the parsimony check count the same words.

Words are rouge-score's tokens (lowercased alphanumeric runs). Content terms drop English stop words
(bm25s's list) and are Porter-stemmed the way rouge-score stems, so "renewing" matches "renew".
"""

from __future__ import annotations

import functools
import re
from typing import Any

from rouge_score import tokenize as rouge_tokenize

from drill.core.text import as_read

_SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|\n+")


def words(text: str) -> list[str]:
    """Lowercased alphanumeric tokens, as rouge-score splits them, of the text as a reader sees it
    (`drill.core.text.as_read`: look-alike letters folded, zero-width characters and accents dropped)."""
    return list(_words(text))


def content_terms(text: str) -> list[str]:
    """Words without stop words, stemmed (only words longer than three letters, as rouge-score does)."""
    return list(_content_terms(text))


@functools.lru_cache(maxsize=65536)
def _words(text: str) -> tuple[str, ...]:
    return tuple(rouge_tokenize.tokenize(as_read(text), None))


@functools.lru_cache(maxsize=65536)
def _content_terms(text: str) -> tuple[str, ...]:
    """The gold texts and each answer's sentences are read many times an episode (each rule reads them again)."""
    stop = stop_words()
    return tuple(_stem(w) for w in _words(text) if w not in stop)


@functools.cache
def stop_words() -> frozenset[str]:
    """bm25s's extended English stop-word list (imported on first use: `drill --help` stays fast)."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS)


@functools.cache
def _porter() -> Any:
    from nltk.stem import porter

    return porter.PorterStemmer()


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _porter().stem(word) if len(word) > 3 else word


def split_sentences(text: str) -> list[str]:
    """The text cut after . ! ? or ; followed by whitespace, and at line breaks. Appending text never moves
    an earlier cut, as long as the text before it ends a sentence."""
    return _SENTENCE_BREAK.split(text)


def sentences(text: str) -> list[str]:
    """Sentences normalized for comparison: lowercased words without list numbering; empty ones dropped."""
    out = []
    for part in split_sentences(text):
        normalized = " ".join(w for w in words(part) if not w.isdigit())
        if normalized:
            out.append(normalized)
    return out


class ContentTokenizer:
    """The tokenizer rouge-score's RougeScorer uses here: content terms only."""

    def tokenize(self, text: str) -> list[str]:
        return content_terms(text)


_STEP_HEAD = re.compile(r":\s|`")
_FIRST_CODE_SPAN = re.compile(r"[^`]*`[^`]*`")


def step_head(step: str, max_words: int = 10) -> str:
    """A resolution step without its command details: the text before the first colon or code span
    (or up to the end of the first code span when that leaves fewer than three words), at most 10 words."""
    head = _STEP_HEAD.split(step, maxsplit=1)[0]
    if len(head.split()) < 3:
        match = _FIRST_CODE_SPAN.match(step)
        head = match.group(0) if match else step
    if head.count("(") > head.count(")"):  # cut inside a parenthesis: drop the open part
        head = head[:head.rfind("(")]
    return " ".join(head.split()[:max_words]).strip(" ,;:.")
