"""Question generation for real inboxes and the LLM judge, against a real OpenAI-compatible stub server on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from drill.core import Action, Episode, PolicyInfo, RubricError, run_episodes
from drill.envs.inbox import InboxEnv
from drill.envs.inbox.question_writer import QuestionWriter
from drill.envs.inbox.questions import AnswerJudge, InboxQuestion, load_questions, write_questions
from drill.envs.inbox.rubric import judgment, outcome, rubric
from drill.envs.inbox.store import MailRecord, MailStore, Recipient
from drill.models.testing import StubOpenAIServer, text_reply


@pytest.fixture
def stub() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer(text_reply(lambda request: "")) as server:
        yield server


def replies(server: StubOpenAIServer, content: Callable[[dict[str, Any]], str]) -> None:
    server.reply = text_reply(content)


def _mail(i: int, body: str, date: str) -> MailRecord:
    return MailRecord(message_id=f"m{i}@corp.example", subject=f"Note {i}", sender="boss@corp.example",
                      sender_name="Boss", date=date, body=body, recipients=(Recipient("me@corp.example", "", "to"),),
                      attachments=(), source_hash=f"h{i}")


@pytest.fixture
def store(tmp_path: Path) -> MailStore:
    store = MailStore(tmp_path / "mail.db")
    bodies = [
        "The vendor summit is in Lisbon this year, at the Tagus Conference Centre, from June 3 to June 5.",
        "Please book the Harbor Room for the budget review. The approved travel budget is $18,400 for the quarter.",
        "Reminder: the parking garage closes for repairs next week, so plan to take the shuttle instead.",
    ]
    store.add("me@corp.example", [_mail(i, b, f"2024-05-0{i + 1} 10:00:00") for i, b in enumerate(bodies)])
    return store


GOOD = {"question": "Where is this year's vendor summit taking place?", "answer": "Lisbon",
        "source_ids": ["<m0@corp.example>"]}
PROPOSALS = [
    GOOD,
    {"question": "What is the approved travel budget for the quarter?", "answer": "$99,999",  # not in the source
     "source_ids": ["m1@corp.example"]},
    {"question": "Which hotel hosts the vendor summit dinner?", "answer": "Lisbon", "source_ids": ["m7@corp.example"]},
    {"question": "Is the summit in Lisbon, and where in Lisbon?", "answer": "Lisbon",
     "source_ids": ["m0@corp.example"]},
    {"question": "Reminder: the parking garage closes for repairs next week, so what should I take instead?",
     "answer": "the shuttle", "source_ids": ["m2@corp.example"]},
    {"question": "What is the travel budget?", "source_ids": ["m1@corp.example"]},  # no answer field
    {"question": "where is THIS year's vendor summit taking place??", "answer": "Lisbon",
     "source_ids": ["m0@corp.example"]},  # a duplicate once normalized
    {"question": "How much is the approved travel budget?", "answer": "$18,400", "source_ids": ["m1@corp.example"]},
]


def test_question_writer_keeps_only_checked_questions(stub: StubOpenAIServer, store: MailStore, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_KEY", "sk-test-123")
    replies(stub, lambda request: "```json\n" + json.dumps({"questions": PROPOSALS}) + "\n```")
    writer = QuestionWriter(store, "me@corp.example", stub.base_url, "writer-model", api_key_env="STUB_KEY",
                            batch_size=20, per_batch=8)
    out = tmp_path / "questions.jsonl"
    report = writer.write(out, batches=3, seed=0)
    assert (report.batches, report.proposed, report.kept) == (1, 8, 2), report.rejected
    assert report.rejected == {"answer not in sources": 1, "unknown source id": 1, "question gives the answer away": 1,
                               "copied from the email": 1, "bad shape": 1, "duplicate question": 1}
    request = stub.requests[0]
    assert request["model"] == "writer-model" and stub.headers[0]["authorization"] == "Bearer sk-test-123"
    prompt = request["messages"][1]["content"]
    assert '<email id="m0@corp.example">' in prompt and "Tagus Conference Centre" in prompt
    kept = load_questions(out)
    assert [q.answer for q in kept] == ["Lisbon", "$18,400"]
    assert kept[0].sources == ("m0@corp.example",) and kept[0].inbox == "me@corp.example"
    assert all(q.asked_at == "2024-05-03 10:00:00" for q in kept)  # the newest email of the batch
    assert kept == load_questions(out) and all(q.split in ("train", "test") for q in kept)
    again = tmp_path / "again.jsonl"
    QuestionWriter(store, "me@corp.example", stub.base_url, "writer-model", "STUB_KEY", 20, 8).write(again, 3, 0)
    assert load_questions(again) == kept  # same replies, same file


def test_an_unreadable_reply_is_counted_not_fatal(stub: StubOpenAIServer, store: MailStore, tmp_path: Path) -> None:
    replies(stub, lambda request: "Sorry, I cannot help with that.")
    report = QuestionWriter(store, "me@corp.example", stub.base_url, "m").write(tmp_path / "q.jsonl", batches=1)
    assert report.kept == 0 and report.rejected == {"unreadable reply (no JSON in the reply)": 1}
    assert load_questions(tmp_path / "q.jsonl") == []


def test_unknown_inbox_is_rejected(stub: StubOpenAIServer, store: MailStore) -> None:
    with pytest.raises(ValueError, match="no inbox 'someone@else'"):
        QuestionWriter(store, "someone@else", stub.base_url, "m")


def _answer(env: InboxEnv, question: InboxQuestion, answer: str) -> Episode:
    """One episode that answers at once, as the rollout runner would record it."""
    [episode] = run_episodes(lambda: env, [(question, 0)], Scripted(answer))
    return episode


class Scripted:
    info = PolicyInfo(name="scripted")

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def act(self, inputs: Any) -> list[Action]:
        return [Action.call("return_final_answer", answer=self.answer, sources=["m0@corp.example"]) for _ in inputs]


def test_the_llm_judge_runs_in_the_rubric_once_per_answer(stub: StubOpenAIServer, store: MailStore,
                                                           tmp_path: Path) -> None:
    replies(stub, lambda request: "CORRECT" if "Tagus" in request["messages"][0]["content"].split("Candidate")[1]
            else "INCORRECT, the summit is in Lisbon")
    question = InboxQuestion(id="g1", inbox="me@corp.example", question="Where is the vendor summit?",
                             asked_at="2024-05-03 10:00:00", answer="Lisbon", sources=("m0@corp.example",))
    questions = tmp_path / "q.jsonl"
    write_questions(questions, [question])
    env = InboxEnv(db=str(store.path), questions=str(questions))
    judge = AnswerJudge("openai:judge-model", stub.base_url)
    scorer = rubric(judge=judge)
    right = _answer(env, question, "the Tagus Conference Centre in Lisbon")  # a comma list fails the match judge (is_listed)
    assert "verdict" not in right.events[-1].data and len(stub.requests) == 0  # playing never calls the judge
    score = scorer.score(right, question)
    assert score.components["correct"] == 1.0 and judgment(right, question, judge).reply == "CORRECT"  # type: ignore[union-attr]
    assert len(stub.requests) == 1, "seven components read the verdict; the judge is asked once"
    sent = stub.requests[-1]
    assert sent["model"] == "judge-model" and "Reference answer: Lisbon" in sent["messages"][0]["content"]
    wrong = _answer(env, question, "Porto")
    assert scorer.score(wrong, question).components["wrong"] == 1.0
    calls = len(stub.requests)
    unsure = _answer(env, question, "I don't know")
    assert outcome(scorer.score(unsure, question).components) == "abstained" and len(stub.requests) == calls
    rematched = rubric().score(right, question)  # re-judged by normalized match: no replay, no model call
    assert rematched.components["correct"] == 1.0 and len(stub.requests) == calls


def test_a_judge_that_fails_is_a_model_error_not_a_zero(stub: StubOpenAIServer, store: MailStore,
                                                         tmp_path: Path) -> None:
    replies(stub, lambda request: "Maybe?")
    question = InboxQuestion(id="g1", inbox="me@corp.example", question="Where is the vendor summit?",
                             asked_at="2024-05-03 10:00:00", answer="Lisbon", sources=("m0@corp.example",))
    write_questions(tmp_path / "q.jsonl", [question])
    env = InboxEnv(db=str(store.path), questions=str(tmp_path / "q.jsonl"))
    episode = _answer(env, question, "Lisbon")
    with pytest.raises(RubricError, match="ModelCallError.*expected CORRECT or INCORRECT"):
        rubric(judge=AnswerJudge("openai:j", stub.base_url)).score(episode, question)
    with pytest.raises(RubricError, match="ModelCallError.*the answer judge openai:j at http://127.0.0.1:9/v1 failed"):
        rubric(judge=AnswerJudge("openai:j", "http://127.0.0.1:9/v1")).score(episode, question)
