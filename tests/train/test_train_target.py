"""The training target comes from the environment's registry spec with the run's options, so the rubric and the
baselines always match the environment that is trained on (two bugs of the per-env target it replaced)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drill.core import Action, PolicyInfo, run_episodes
from drill.envs.triage import HeuristicPolicy
from drill.train.target import load_target

FIXTURE = Path(__file__).parents[1] / "envs" / "triage" / "fixture_data"


class SearchTwiceThenAnswer:
    info = PolicyInfo(name="scripted")

    def act(self, inputs):  # type: ignore[no-untyped-def]
        out = []
        for item in inputs:
            if len(item.history) < 2:
                out.append(Action.call("search_emails", keywords="budget"))
            else:
                task = item.task
                out.append(Action.call("return_final_answer", answer=task.answer or "I don't know",
                                       sources=list(task.sources)))
        return out


def test_inbox_max_turns_reaches_the_rubric(tmp_path: Path) -> None:
    target = load_target("inbox", {"max_turns": 4, "cache_dir": str(tmp_path)})
    task = next(t for t in target.tasks("test") if t.answer is not None)  # type: ignore[attr-defined]
    [episode] = run_episodes(target.make_env, [(task, 0)], SearchTwiceThenAnswer(), target.rubric({}))
    assert episode.score is not None and episode.score.components["correct"] == 1.0
    assert episode.score.components["efficiency"] == pytest.approx(1 - 2 / 4)  # was scored against 10 turns


def test_triage_baselines_read_the_runs_corpus() -> None:
    target = load_target("triage", {"data_dir": str(FIXTURE), "k": 2})
    heuristic = target.baselines["heuristic"]()
    fixture_ids = {a["id"] for a in json.loads((FIXTURE / "articles.json").read_text())}
    assert set(heuristic.search.corpus.articles) == fixture_ids  # type: ignore[attr-defined]
    assert set(HeuristicPolicy().search.corpus.articles) != fixture_ids  # the shipped corpus, which it used before
    tasks = target.tasks("test")
    played = run_episodes(target.make_env, [(t, 0) for t in tasks], heuristic, target.rubric({}))
    cited = {c for e in played for ev in e.events_named("submitted") for c in ev.data["citations"]}  # type: ignore[union-attr]
    assert cited and cited <= fixture_ids


def test_bad_options_name_the_known_ones() -> None:
    with pytest.raises(ValueError, match="triage has no option turnbudget; its options: mode, k, turn_budget"):
        load_target("triage", {"turnbudget": 3})
    with pytest.raises(ValueError, match="option k must be integer, got 'two'"):
        load_target("triage", {"k": "two"})
    with pytest.raises(ValueError, match="unknown environment 'tri'"):
        load_target("tri", {})
