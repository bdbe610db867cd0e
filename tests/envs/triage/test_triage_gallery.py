"""The degenerate gallery on the shipped corpus: every way of gaming one component scores far below the
oracle and below the heuristic, in total and on the component it games. Also: padding never pays.

Each degenerate plays like the heuristic (the same searches in agent mode) and then rewrites the
heuristic's submission in one way, so any difference in score comes from that one rewrite.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import pytest

from drill.core import Action, Episode, Policy, PolicyInfo, PolicyInput, check_env, run_episodes
from drill.envs import triage
from drill.envs.triage import TriageTask
from drill.envs.triage.env import ticket_from_observation
from drill.envs.triage.rubric import parsimony_score
from drill.envs.triage.text import content_terms, split_sentences

FILM = ("Star Wars is a 1977 American epic space opera film written and directed by George Lucas. It was the "
        "first film in the original trilogy and became a worldwide pop culture phenomenon. The production "
        "suffered from bad weather in Tunisia, malfunctioning droids and studio doubts, yet the premiere in May "
        "drew lines around the block. John Williams composed the score, which the London Symphony Orchestra "
        "recorded in eight sessions. Industrial Light and Magic was founded to create its visual effects, and the "
        "film won six Academy Awards, including best original score and best visual effects.")
Rewrite = Callable[[dict[str, Any], PolicyInput], Action]


def _filler(n_words: int) -> str:
    film = FILM.split()
    return " ".join(film[i % len(film)] for i in range(n_words))


def _submit(args: dict[str, Any], **changes: Any) -> Action:
    return Action(tool="submit_resolution", arguments={**args, **changes})


def _shown_ids(inp: PolicyInput) -> list[str]:
    """Every id the episode has shown so far, in order."""
    text = "\n".join([*(t.observation.content for t in inp.history), inp.observation.content])
    return list(dict.fromkeys(re.findall(r"\b(?:KB-[A-Z]+-\d+|TCK-\d+|INC-\d+)\b", text)))


def _wrong_answer(args: dict[str, Any], inp: PolicyInput) -> Action:
    """A non-gold article's steps, cited, with full confidence: wrong by construction."""
    task = inp.task
    assert isinstance(task, TriageTask)
    corpus = triage.load_corpus()
    other = next(i for i in [*_shown_ids(inp), *corpus.articles] if i in corpus.articles
                 and i not in task.gold_article_ids)
    return _submit(args, resolution=" ".join(corpus.articles[other].resolution), citations=[other],
                   confidence=1.0, escalate=False)


GALLERY: dict[str, tuple[str, Rewrite]] = {
    "empty output": ("parsimony", lambda a, i: Action.unparseable(raw="", error="the reply is empty")),
    "empty resolution": ("parsimony", lambda a, i: _submit(a, resolution="", citations=[])),
    "filler, 6 words": ("parsimony", lambda a, i: _submit(a, resolution=_filler(6))),
    "filler, 40 words": ("parsimony", lambda a, i: _submit(a, resolution=_filler(40))),
    "filler, 500 words": ("parsimony", lambda a, i: _submit(a, resolution=_filler(500))),
    "film history paragraph": ("parsimony", lambda a, i: _submit(a, resolution=FILM)),
    "answer + film history": ("parsimony", lambda a, i: _submit(a, resolution=f"{a['resolution']} {FILM}")),
    "copy of the ticket": ("resolution", lambda a, i: _submit(
        a, resolution=ticket_from_observation((i.history[0].observation if i.history else i.observation).content))),
    "every shown record cited": ("grounding", lambda a, i: _submit(a, citations=_shown_ids(i))),
    "every KB article cited": ("grounding", lambda a, i: _submit(a, citations=list(triage.load_corpus().articles))),
    "one citation x30": ("grounding", lambda a, i: _submit(a, citations=(a["citations"] or _shown_ids(i)[:1]) * 30)),
    "confidence 1.0 on a wrong answer": ("calibration", _wrong_answer),
    "always escalating": ("calibration", lambda a, i: _submit(a, escalate=True)),
    "always escalating, zero confidence": ("calibration", lambda a, i: _submit(a, escalate=True, confidence=0.0)),
}


class Degenerate:
    def __init__(self, name: str, rewrite: Rewrite) -> None:
        self.info = PolicyInfo(name=name)
        self.rewrite = rewrite
        self.heuristic = triage.HeuristicPolicy()

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self.rewrite(dict(a.arguments), inp) if a.tool == "submit_resolution" else a
                for a, inp in zip(self.heuristic.act(inputs), inputs, strict=True)]


@cache
def _play(mode: str, name: str) -> tuple[Episode, ...]:
    policy: Policy = (triage.HeuristicPolicy() if name == "heuristic" else triage.OraclePolicy() if name == "oracle"
                      else Degenerate(name, GALLERY[name][1]))
    jobs = [(t, 0) for t in triage.load(mode=mode).tasks("test")]
    return tuple(run_episodes(lambda: triage.load(mode=mode), jobs, policy, triage.rubric()))


def _mean(episodes: Sequence[Episode], component: str | None = None) -> float:
    return statistics.fmean((e.score.components[component] if component else e.score.total)  # type: ignore[union-attr]
                            for e in episodes)


@pytest.mark.parametrize("mode", ["reader", "agent"])
def test_the_shipped_corpus_passes_check_env(mode: str) -> None:
    check_env(triage.load(mode=mode), n_tasks=2)


@pytest.mark.parametrize("mode", ["reader", "agent"])
def test_baselines_are_ordered(mode: str) -> None:
    oracle, heuristic = _play(mode, "oracle"), _play(mode, "heuristic")
    assert _mean(oracle) == pytest.approx(1.0)
    assert 0.3 < _mean(heuristic) < 0.85


@pytest.mark.parametrize("mode", ["reader", "agent"])
@pytest.mark.parametrize("name", list(GALLERY))
def test_degenerate_output_scores_far_below_oracle_and_below_heuristic(mode: str, name: str) -> None:
    gamed = GALLERY[name][0]
    degenerate, heuristic, oracle = _play(mode, name), _play(mode, "heuristic"), _play(mode, "oracle")
    assert _mean(degenerate) < _mean(heuristic), f"{name}: total not below the heuristic"
    assert _mean(degenerate) < _mean(oracle) - 0.3, f"{name}: total not far below the oracle"
    assert _mean(degenerate, gamed) < _mean(heuristic, gamed), f"{name}: {gamed} not below the heuristic"
    assert _mean(degenerate, gamed) < _mean(oracle, gamed) - 0.2, f"{name}: {gamed} not far below the oracle"
    for episode in degenerate:  # no episode outscores the oracle, and every component stays in [0, 1]
        assert episode.score is not None and episode.score.total <= 1.0 + 1e-9
        assert all(0.0 <= v <= 1.0 for v in episode.score.components.values())


def _padded(episode: Episode, resolution: str) -> Episode:
    submitted = episode.events_named("submitted")[0]
    data = dict(submitted.data, resolution=resolution)
    return episode.model_copy(update={"events": [submitted.model_copy(update={"data": data})]})


def _cuts(n: int) -> list[int]:
    """1, 2, 3, 5, 8, 13, ... up to n, and n: every scale of padding without scoring every length."""
    cuts, a, b = [], 1, 2
    while a < n:
        cuts.append(a)
        a, b = b, a + b
    return [*cuts, n]


def test_appending_anything_never_raises_parsimony_on_any_task() -> None:
    """The inverted-branch bug class: once an answer has begun, no appended text (film history, another
    ticket's gold, the gold itself, a repeat) pays parsimony. One exception, by design: the gold's own terms
    appended to an answer that lacked them raise its substance (`substance`), which is saying more of the answer,
    not padding; appended to the gold, which has them all, they do not."""
    env = triage.load()
    tasks = env.tasks("test")
    for episode in _play("reader", "heuristic"):
        task = env.task(episode.task_id)
        other_gold = tasks[(tasks.index(task) + 1) % len(tasks)].gold_resolution
        own = str(episode.events_named("submitted")[0].data["resolution"])
        for answer in (own, task.gold_resolution):
            # The guarantee holds once the answer has finished a sentence; a one-sentence answer without a
            # final stop could still be continued by the padding, so that one is padded on a new line.
            finished = len(split_sentences(answer)) > 1 or answer.rstrip()[-1] in ".!?;"
            base = parsimony_score(_padded(episode, answer), task)
            for padding in (FILM, other_gold, *([task.gold_resolution] if answer is not own else []), answer):
                padding_words = padding.split()
                for cut in _cuts(len(padding_words)):
                    padded = _padded(episode, answer + (" " if finished else "\n") + " ".join(padding_words[:cut]))
                    assert parsimony_score(padded, task) <= base + 1e-12, (task.id, cut)


def test_irrelevant_filler_never_raises_any_component_or_the_total_on_any_task() -> None:
    """Film history without the words that share a content term with the gold (its resolution, or the steps of a
    gold article the agent was shown: grounding pays an answer as far as it says them, since 2026-11-28), appended in
    growing amounts (up to three copies, so repeated sentences too), to the heuristic's answer, the gold and a ticket
    copy."""
    scorer, env = triage.rubric(), triage.load()
    for episode in (*_play("reader", "heuristic"), *_play("reader", "oracle")):
        task = env.task(episode.task_id)
        data = episode.events_named("submitted")[0].data
        shown = dict(zip(data["seen_articles"], data["seen_steps"], strict=True))
        gold = set(content_terms(" ".join([task.gold_resolution, *(shown.get(i, "") for i in task.gold_article_ids)])))
        filler = [w for w in FILM.split() if not set(content_terms(w)) & gold] * 3
        answers = [str(episode.events_named("submitted")[0].data["resolution"])]
        if episode.policies["agent"].name == "heuristic":
            answers.append(task.ticket)
        for answer in answers:
            previous = scorer.score(_padded(episode, answer), task)
            for cut in _cuts(len(filler)):
                score = scorer.score(_padded(episode, f"{answer} {' '.join(filler[:cut])}"), task)
                for name, value in score.components.items():
                    assert value <= previous.components[name] + 1e-12, (task.id, name, cut)
                assert score.total <= previous.total + 1e-12, (task.id, cut)
                previous = score
