"""Question generation for real inboxes and the LLM judge, against a real OpenAI-compatible stub server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from drill.core import Action
from drill.envs.inbox import InboxEnv
from drill.envs.inbox.question_writer import QuestionWriter
from drill.envs.inbox.questions import InboxQuestion, load_questions, write_questions
from drill.envs.inbox.store import MailRecord, MailStore, Recipient


@dataclass
class StubServer:
    """`/v1/chat/completions` answered by `reply(request) -> content`; every request body is kept."""

    reply: Callable[[dict[str, Any]], str]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server_state = StubServer(reply=lambda request: "")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server_state.requests.append(request)
            server_state.headers.append({k.lower(): v for k, v in self.headers.items()})
            body = json.dumps({
                "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": request["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": server_state.reply(request)}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    server_state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield server_state
    server.shutdown()
    server.server_close()


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


def test_question_writer_keeps_only_checked_questions(stub: StubServer, store: MailStore, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_KEY", "sk-test-123")
    stub.reply = lambda request: "```json\n" + json.dumps({"questions": PROPOSALS}) + "\n```"
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


def test_an_unreadable_reply_is_counted_not_fatal(stub: StubServer, store: MailStore, tmp_path: Path) -> None:
    stub.reply = lambda request: "Sorry, I cannot help with that."
    report = QuestionWriter(store, "me@corp.example", stub.base_url, "m").write(tmp_path / "q.jsonl", batches=1)
    assert report.kept == 0 and report.rejected == {"unreadable reply (no JSON in the reply)": 1}
    assert load_questions(tmp_path / "q.jsonl") == []


def test_unknown_inbox_is_rejected(stub: StubServer, store: MailStore) -> None:
    with pytest.raises(ValueError, match="no inbox 'someone@else'"):
        QuestionWriter(store, "someone@else", stub.base_url, "m")


def test_llm_judge_verdict_is_logged_in_the_episode(stub: StubServer, store: MailStore, tmp_path: Path) -> None:
    stub.reply = lambda request: "CORRECT" if "Tagus" in request["messages"][0]["content"].split("Candidate")[1] \
        else "INCORRECT, the summit is in Lisbon"
    question = InboxQuestion(id="g1", inbox="me@corp.example", question="Where is the vendor summit?",
                             asked_at="2024-05-03 10:00:00", answer="Lisbon", sources=("m0@corp.example",))
    questions = tmp_path / "q.jsonl"
    write_questions(questions, [question])
    env = InboxEnv(db=str(store.path), questions=str(questions), judge="openai:judge-model",
                   judge_base_url=stub.base_url)
    env.reset(question, 0)
    event = env.step(Action.call("return_final_answer", answer="Tagus Conference Centre, Lisbon",
                                 sources=["m0@corp.example"])).events[0]
    assert (event.data["verdict"], event.data["judge"], event.data["judge_reply"]) == \
        ("correct", "openai:judge-model", "CORRECT")
    sent = stub.requests[-1]
    assert sent["model"] == "judge-model" and "Reference answer: Lisbon" in sent["messages"][0]["content"]
    env.reset(question, 0)
    event = env.step(Action.call("return_final_answer", answer="Porto", sources=[])).events[0]
    assert event.data["verdict"] == "wrong" and event.data["judge_reply"].startswith("INCORRECT")
    calls = len(stub.requests)
    env.reset(question, 0)
    event = env.step(Action.call("return_final_answer", answer="I don't know", sources=[])).events[0]
    assert event.data["verdict"] == "abstained" and len(stub.requests) == calls  # abstentions need no judge


def test_a_judge_that_does_not_answer_the_question_fails_loudly(stub: StubServer, store: MailStore,
                                                                tmp_path: Path) -> None:
    stub.reply = lambda request: "Maybe?"
    question = InboxQuestion(id="g1", inbox="me@corp.example", question="Where is the vendor summit?",
                             asked_at="2024-05-03 10:00:00", answer="Lisbon", sources=("m0@corp.example",))
    write_questions(tmp_path / "q.jsonl", [question])
    env = InboxEnv(db=str(store.path), questions=str(tmp_path / "q.jsonl"), judge="openai:j",
                   judge_base_url=stub.base_url)
    env.reset(question, 0)
    with pytest.raises(RuntimeError, match="expected CORRECT or INCORRECT"):
        env.step(Action.call("return_final_answer", answer="Lisbon", sources=[]))
