"""The inbox env over the synthetic company inbox: the generator's guarantees, the tools, the time limit, check_env."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from drill.core import Action, PolicyInfo, PolicyInput, check_env, run_episodes
from drill.envs.inbox import SPEC, InboxEnv, InboxQuestion, load, rubric
from drill.envs.inbox.questions import normalize_answer
from drill.envs.inbox.synthetic import generate


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.getbasetemp() / "inbox-cache")


@pytest.fixture(scope="session")
def env(cache: str) -> InboxEnv:
    return load(cache_dir=cache)


def _question(env: InboxEnv, predicate) -> InboxQuestion:  # type: ignore[no-untyped-def]
    for split in ("test", "train"):
        for task in env.tasks(split):
            assert isinstance(task, InboxQuestion)
            if predicate(task):
                return task
    raise AssertionError("no such question")


def test_synthetic_inbox_is_deterministic_and_big_enough() -> None:
    first, again, other = generate(0), generate(0), generate(1)
    assert [m.record() for m in first.mails] == [m.record() for m in again.mails]
    assert first.questions == again.questions
    assert [m.message_id for m in first.mails] != [m.message_id for m in other.mails]
    assert len(first.mails) >= 5000 and len(first.questions) >= 1000
    senders = {m.sender.address for m in first.mails if m.sender.address.endswith("@kestrel.example")}
    assert 35 <= len([s for s in senders if "." in s.split("@")[0]]) <= 60  # about forty people write
    splits = Counter(q.split for q in first.questions)
    assert splits["test"] >= 200 and splits["train"] >= 600
    unanswerable = [q for q in first.questions if q.answer is None]
    assert 0.08 <= len(unanswerable) / len(first.questions) <= 0.25
    kinds = Counter(q.kind for q in first.questions if q.answer is not None)
    assert set(kinds) == {"date", "place", "amount", "name", "code"}
    by_question: dict[str, set[str]] = {}
    for q in first.questions:  # a question text never sits in both splits
        by_question.setdefault(q.question, set()).add(q.split)
    assert all(len(s) == 1 for s in by_question.values())


_DIGEST = """
import hashlib
from drill.envs.inbox.synthetic import generate
inbox, digest = generate(0), hashlib.sha256()
for mail in inbox.mails:
    digest.update(mail.rfc822())
for question in inbox.questions:
    digest.update(question.model_dump_json().encode())
print(digest.hexdigest())
"""


def test_synthetic_inbox_is_the_same_in_another_process() -> None:
    here: dict[str, str] = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(_DIGEST, here)  # noqa: S102 (the same code, in this process)
    other = subprocess.run([sys.executable, "-c", _DIGEST], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert other.stdout == out.getvalue() and len(out.getvalue().strip()) == 64


def test_every_answer_is_stated_by_its_sources_before_the_question_is_asked() -> None:
    inbox = generate(0)
    mails = {m.message_id: m for m in inbox.mails}
    for q in inbox.questions:
        if q.answer is None:
            assert q.sources == ()
            continue
        assert q.sources, q.id
        for source in q.sources:
            mail = mails[source]
            assert mail.date.strftime("%Y-%m-%d %H:%M:%S") <= q.asked_at
        text = " ".join(normalize_answer(" ".join(f"{mails[s].subject}\n{mails[s].body}" for s in q.sources)))
        forms = [q.answer, *q.aliases]
        if q.kind == "date":  # "Wednesday the 6th" resolves against the mail's own date
            day = datetime.strptime(q.answer, "%B %d, %Y")
            forms.append(f"{day:%A} {day.day}")
        assert any(" ".join(normalize_answer(f)) in text for f in forms), (q.id, q.answer)


def test_questions_whose_answer_changed_have_different_answers_at_different_times() -> None:
    inbox = generate(0)
    answers: dict[str, set[str | None]] = {}
    for q in inbox.questions:
        answers.setdefault(q.question, set()).add(q.answer)
    changed = [text for text, seen in answers.items() if len(seen - {None}) > 1]
    assert len(changed) >= 10  # slipped launches, moved QBRs, changed hotels


def test_check_env_passes(env: InboxEnv) -> None:
    check_env(env)


def test_search_read_and_answer(env: InboxEnv) -> None:
    question = _question(env, lambda q: q.answer is not None and q.kind == "place")
    obs = env.reset(question, 0)
    assert question.question in obs.content and question.asked_at in obs.content
    assert {t.name for t in obs.tools} == {"search_emails", "read_email", "return_final_answer"}
    assert "I don't know" in obs.instructions
    result = env.step(Action.call("search_emails", keywords=question.question, max_results=3))
    assert [e.name for e in result.events] == ["search"] and not result.done
    result = env.step(Action.call("read_email", message_id=f"<{question.sources[0]}>"))  # brackets are fine
    assert result.events[0].data["found"] is True and f"Message-ID: {question.sources[0]}" in result.observation.content
    result = env.step(Action.call("return_final_answer", answer=question.answer, sources=list(question.sources[:1])))
    assert result.done and result.events[0].name == "answered"
    assert "verdict" not in result.events[0].data  # the rubric judges, never the env
    assert "correct" not in result.observation.content


@pytest.mark.parametrize("packed", [", ".join, " ".join, lambda ids: " ".join(f"<{i}>" for i in ids), "\n".join])
def test_ids_cited_in_one_field_are_each_cited(env: InboxEnv, packed) -> None:  # type: ignore[no-untyped-def]
    """A question's sources read and cited in one `sources` entry ("id1, id2") earn what the list earns: the entry
    was one unknown id, and the honest answer lost its source credit (eighth red team). Packing another id in with
    them dilutes the credit as a list would."""
    question = _question(env, lambda q: q.answer is not None and len(q.sources) >= 2)
    noise = next(q.sources[0] for q in env.tasks("test") if q.sources and q.sources[0] not in question.sources)
    plan = [Action.call("read_email", message_id=source) for source in question.sources]

    class Cites:
        info = PolicyInfo(name="cites")

        def __init__(self, cited: list[str]) -> None:
            self.cited = cited

        def act(self, inputs: list[PolicyInput]) -> list[Action]:
            done = len(inputs[0].own_turns())
            return [plan[done] if done < len(plan) else
                    Action.call("return_final_answer", answer=question.answer, sources=self.cited)]

    credit = []
    for cited in (list(question.sources), [packed(list(question.sources))], [packed([*question.sources, noise])]):
        episode = run_episodes(lambda: load(cache_dir=env.options["cache_dir"]), [(question, 0)], Cites(cited),
                               rubric())[0]
        assert episode.score is not None and episode.score.components["correct"] == 1
        credit.append(episode.score.components["sources"])
    assert credit[0] == credit[1] == 1.0 and credit[2] < 1.0, credit


@pytest.mark.parametrize("none", ["none", "N/A", "I don't know", "-"])
def test_a_source_that_says_there_is_none_cites_nothing(env: InboxEnv, none: str) -> None:
    """A right "I don't know" earns the source credit of an empty list when its one source says there is none: it
    was an unknown id, and cost the answer 0.2 (eighth red team)."""
    question = _question(env, lambda q: q.answer is None)
    env.reset(question, 0)
    result = env.step(Action.call("return_final_answer", answer="I don't know", sources=[none]))
    assert result.events[0].data["sources"] == [] and result.events[0].data["cited"] == 0


def test_the_agent_never_sees_mail_sent_after_the_question(env: InboxEnv) -> None:
    everything = env.tasks("test") + env.tasks("train")
    answered = {q.question: q for q in everything if isinstance(q, InboxQuestion) and q.answer is not None}
    # a question asked before its answer was mailed: the same question, asked later, has an answer
    question = _question(env, lambda q: q.answer is None and q.question in answered and q.kind == "date")
    later = answered[question.question].sources
    assert all(env.store.read(question.inbox, m).date > question.asked_at for m in later)  # type: ignore[union-attr]
    env.reset(question, 0)
    result = env.step(Action.call("search_emails", keywords="", max_results=10))
    dates = re.findall(r"date: (\S+ \S+)", result.observation.content)
    assert len(dates) == 10 and max(dates) <= question.asked_at[:16]
    words = " ".join(w for w in re.findall(r"[A-Z]\w+|Q\d", question.question) if w not in ("When", "What"))
    assert later[0] in "".join(h.message_id for h in env.store.search(question.inbox, words))  # it exists...
    result = env.step(Action.call("search_emails", keywords=words))
    assert all(m not in result.observation.content for m in later)  # ...but not for this question
    result = env.step(Action.call("read_email", message_id=later[0]))
    assert result.events[0].data["found"] is False and "No message" in result.observation.content
    unknown = env.step(Action.call("read_email", message_id="no-such-id@nowhere"))
    first_line = result.observation.content.splitlines()[0]
    assert unknown.observation.content.splitlines()[0] == first_line.replace(later[0], "no-such-id@nowhere")
    for after, before in (("2024-01-01", None), (None, "2024-12-31")):
        found = env.step(Action.call("search_emails", keywords="", sent_after=after, sent_before=before))
        assert all(d <= question.asked_at[:16] for d in re.findall(r"date: (\S+ \S+)", found.observation.content))


def test_bad_tool_input_is_an_invalid_action_not_an_exception(env: InboxEnv) -> None:
    question = env.tasks("test")[0]
    env.reset(question, 0)
    result = env.step(Action.call("search_emails", keywords="budget", sent_after="last tuesday"))
    assert result.events[0].name == "invalid_action" and "sent_after" in (result.observation.error or "")
    result = env.step(Action.call("search_emails", keywords="budget", max_results=50))
    assert result.events[0].name == "invalid_action" and "max_results" in (result.observation.error or "")
    result = env.step(Action.call("search_emails", keywords='NEAR("x" OR * ^ subject:'))
    assert result.events[0].name == "search"


def test_turn_budget_ends_the_episode_without_an_answer(cache: str) -> None:
    env = load(cache_dir=cache, max_turns=3)
    env.reset(env.tasks("test")[0], 0)
    results = [env.step(Action.call("search_emails", keywords="budget")) for _ in range(3)]
    assert [r.done for r in results] == [False, False, True]
    assert results[-1].events[-1].name == "out_of_turns"
    with pytest.raises(RuntimeError):
        env.step(Action.call("search_emails", keywords="budget"))


def test_options_are_checked(cache: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a question file"):
        load(db=str(tmp_path / "x.db"))
    with pytest.raises(ValueError, match="max_turns"):
        load(cache_dir=cache, max_turns=0)
    with pytest.raises(ValueError, match="unknown judge"):
        SPEC.rubric_for({"cache_dir": cache, "judge": "vibes"})
