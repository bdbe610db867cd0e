"""The triage environment on a small fixture corpus: both modes, tools, budget, bad input, search, corpus checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from drill.core import Action, check_env, run_episodes
from drill.envs import triage
from drill.envs.triage import CorpusError, TriageEnv, load_corpus
from drill.envs.triage.search import SearchIndex, knowledge_search

FIXTURE = Path(__file__).parent / "fixture_data"


def env(mode: str, **options: object) -> TriageEnv:
    return triage.load(mode=mode, data_dir=FIXTURE, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["reader", "agent"])
def test_check_env_passes(mode: str) -> None:
    check_env(env(mode))


def test_options_are_validated_and_json_serializable() -> None:
    assert json.loads(json.dumps(env("agent", turn_budget=4).options)) == {
        "mode": "agent", "k": 3, "turn_budget": 4, "data_dir": str(FIXTURE)}
    with pytest.raises(ValueError, match="unknown triage mode 'writer'"):
        env("writer")
    with pytest.raises(ValueError, match="k must be a positive integer"):
        env("reader", k=0)
    with pytest.raises(ValueError, match="turn_budget"):
        env("agent", turn_budget=0)
    with pytest.raises(ValueError, match="unknown split"):
        env("reader").tasks("dev")


def test_splits_are_disjoint() -> None:
    e = env("reader")
    assert [t.id for t in e.tasks("test")] == ["T-0001", "T-0002", "T-0003", "T-0004"]
    assert [t.id for t in e.tasks("train")] == ["T-0005", "T-0006"]


def test_reader_prompt_holds_ticket_gold_and_distractors_shuffled_per_seed() -> None:
    e = env("reader", k=3)
    task = e.task("T-0001")
    first = e.reset(task, 0)
    assert task.ticket in first.content
    assert [t.name for t in first.tools] == ["submit_resolution"]
    shown = [a.id for a in e.reader_context(task, 0)]
    assert len(shown) == 3 and "KB-NET-0002" in shown and all(f"[{i}]" in first.content for i in shown)
    assert task.gold_resolution not in first.content
    orders = {tuple(a.id for a in e.reader_context(task, seed)) for seed in range(8)}
    assert len(orders) > 1 and all(set(o) == set(shown) for o in orders)
    assert env("reader", k=3).reset(task, 0) == first  # same task and seed, same prompt, in a fresh env
    unanswerable = e.task("T-0003")
    assert len(e.reader_context(unanswerable, 0)) == 3  # distractors only


def test_reader_is_single_turn_even_for_bad_output() -> None:
    e = env("reader")
    e.reset(e.task("T-0001"), 0)
    result = e.step(Action.unparseable(raw="I think the VPN is broken", error="no tool call found"))
    assert result.done and result.observation.error == "could not parse your tool call: no tool call found"
    assert [ev.name for ev in result.events] == ["invalid_action", "no_submission"]
    with pytest.raises(RuntimeError):
        e.step(Action.call("submit_resolution", resolution="x", citations=[], confidence=0.5, escalate=False))


def test_submit_schema_is_strict() -> None:
    e = env("reader")
    for bad in ({"resolution": "   ", "citations": [], "confidence": 0.5, "escalate": False},
                {"resolution": "x", "citations": [], "confidence": 1.5, "escalate": False},
                {"resolution": "x", "citations": [], "confidence": "0.9", "escalate": False},
                {"resolution": "x", "citations": "KB-NET-0002", "confidence": 0.9, "escalate": False},
                {"resolution": "x", "citations": [], "confidence": 0.9, "escalate": "no"}):
        e.reset(e.task("T-0001"), 0)
        result = e.step(Action(tool="submit_resolution", arguments=bad))
        assert result.observation.error and result.events[0].data["tool"] == "submit_resolution", bad


def test_agent_tools_search_open_and_unknown_ids() -> None:
    e = env("agent", turn_budget=6)
    task = e.task("T-0002")
    first = e.reset(task, 0)
    assert {t.name for t in first.tools} == {"search_kb", "search_tickets", "search_incidents", "get_article",
                                             "get_ticket", "get_incident", "submit_resolution"}
    found = e.step(Action.call("search_kb", query="AccessDenied PutObject bucket", max_results=2))
    assert found.observation.content.splitlines()[1].startswith("KB-CLD-0001 (")
    assert found.events[0].data["hits"][0] == "KB-CLD-0001"
    missing = e.step(Action.call("get_article", article_id="KB-CLD-9999"))
    assert missing.observation.error and "no article with id 'KB-CLD-9999'" in missing.observation.error
    assert [ev.name for ev in missing.events] == ["not_found"] and not missing.done
    ticket = e.step(Action.call("get_ticket", ticket_id="TCK-10002"))
    assert "Linked articles: KB-CLD-0001" in ticket.observation.content
    wrong_kind = e.step(Action.call("get_incident", incident_id="TCK-10002"))
    assert wrong_kind.observation.error
    done = e.step(Action.call("submit_resolution", resolution="Add PutObject to the role.",
                              citations=["KB-CLD-0001", "TCK-10002"], confidence=0.7, escalate=False))
    assert done.done
    seen = done.events[0].data["seen_ids"]
    assert seen[0] == "KB-CLD-0001" and "TCK-10002" in seen and "KB-CLD-9999" not in seen


def test_agent_budget_runs_out_without_submission() -> None:
    e = env("agent", turn_budget=2)
    e.reset(e.task("T-0001"), 0)
    assert not e.step(Action.call("search_incidents", query="vpn")).done
    last = e.step(Action(tool="delete_everything"))
    assert last.done and [ev.name for ev in last.events] == ["invalid_action", "no_submission"]
    assert "turn budget of 2 turns ran out" in last.observation.content


def test_scripted_agents_use_the_tools() -> None:
    tasks = [(t, 0) for t in env("agent").tasks("test")]
    for policy in (triage.HeuristicPolicy(FIXTURE), triage.OraclePolicy()):
        for episode in run_episodes(lambda: env("agent"), tasks, policy, triage.rubric()):
            tools = [turn.action.tool for turn in episode.turns]
            assert tools[0] == "search_kb" and tools[-1] == "submit_resolution", tools
    oracle = run_episodes(lambda: env("agent"), tasks, triage.OraclePolicy(), triage.rubric())
    assert all(e.score is not None and e.score.total == pytest.approx(1.0) for e in oracle)


def test_random_policy_is_seeded_and_stateless() -> None:
    tasks = [(t, s) for t in env("agent").tasks("test") for s in (0, 1)]
    one = run_episodes(lambda: env("agent"), tasks, triage.RandomPolicy())
    two = run_episodes(lambda: env("agent"), list(reversed(tasks)), triage.RandomPolicy())
    assert [e.model_dump() for e in one] == [e.model_dump() for e in reversed(two)]


def test_search_ranking_is_deterministic_with_stable_ties() -> None:
    index = SearchIndex(["a", "b", "c", "d"], ["disk full on web", "vpn dns", "disk full on web", "disk"])
    hits = index.search("disk full", k=4)
    assert [h.id for h in hits] == ["a", "c", "d"] and hits[0].score == hits[1].score
    assert index.search("", k=3) == [] and index.search("zzzz", k=3) == []
    assert [h.id for h in index.search("disk full", k=4, exclude={"a"})] == ["c", "d"]
    assert knowledge_search(FIXTURE) is knowledge_search(str(FIXTURE))  # built once per process


def _corrupt(tmp_path: Path, file: str, edit: object) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(FIXTURE, folder)
    records = json.loads((folder / file).read_text())
    edit(records)  # type: ignore[operator]
    (folder / file).write_text(json.dumps(records))
    return folder


@pytest.mark.parametrize(("file", "edit", "message"), [
    ("tickets.json", lambda r: r[0].update(article_ids=["KB-NET-0404"]), "unknown article 'KB-NET-0404'"),
    ("tasks.json", lambda r: r[0].update(gold_article_ids=[]), "answerable=True but 0 gold articles"),
    ("articles.json", lambda r: r.append(dict(r[0])), "duplicate id 'KB-NET-0001'"),
    ("tasks.json", lambda r: r[0].update(split="dev"), "T-0001"),
    ("incidents.json", lambda r: r[0].pop("root_cause"), "root_cause"),
])
def test_inconsistent_corpus_fails_at_load(tmp_path: Path, file: str, edit: object, message: str) -> None:
    with pytest.raises(CorpusError, match=message):
        load_corpus(_corrupt(tmp_path, file, edit))


def test_missing_corpus_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    shutil.copytree(FIXTURE, folder)
    (folder / "tickets.json").unlink()
    with pytest.raises(CorpusError, match=r"tickets\.json does not exist"):
        load_corpus(folder)
