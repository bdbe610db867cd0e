"""`drill inbox generate-questions` with the rule-based generator: ingest an mbox, write questions, evaluate them."""

from __future__ import annotations

import json
import mailbox
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from drill.cli import app
from drill.core import Action, PolicyInfo, run_episodes
from drill.envs.inbox.baselines import OraclePolicy
from drill.envs.inbox.questions import IDK, InboxQuestion, load_questions, normalize_answer
from drill.envs.inbox.rule_questions import _checks, _fact, generate_rule_questions, subject_key
from drill.envs.inbox.spec import load, make_rubric
from drill.envs.inbox.store import MailStore, StoredMessage
from drill.models.testing import StubOpenAIServer, text_reply

runner = CliRunner()
OWNER = "sally.beck@enron.com"

MAILS = [  # (sender, subject, date, body)
    ("Phillip Allen <phillip.allen@enron.com>", "West desk gas forecast", "Mon, 7 May 2001 09:10:00 -0700",
     "Attached is the forecast for the west desk. Call me with questions."),
    ("Tim Belden <tim.belden@enron.com>", "Mid-C power positions review", "Tue, 8 May 2001 14:00:00 -0700",
     "The review of the Mid-C positions moves to Thursday afternoon."),
    ("John J. Lavorato <john.lavorato@enron.com>", "Trading limit increase approved",
     "Wed, 9 May 2001 08:30:00 -0700", "The board approved the new trading limit of $2,500,000 for the quarter. "
                                       "That is $2,500,000 in total, effective Monday."),
    ("Louise Kitchen <louise.kitchen@enron.com>", "EnronOnline launch party budget", "Thu, 10 May 2001 17:45:00 -0700",
     "Catering will cost $18,400 and the venue USD 9,000; please sign off on both."),  # two amounts: no amount question
    ("Tim Belden <tim.belden@enron.com>", "Gas storage contract terms", "Fri, 11 May 2001 10:00:00 -0700",
     "Here are the terms for the storage contract, draft 3."),
    ("Sally Beck <sally.beck@enron.com>", "Re: Gas storage contract terms", "Fri, 11 May 2001 11:30:00 -0700",
     "Looks fine to me. > Here are the terms for the storage contract."),  # a thread: neither is asked about
    ("Phillip Allen <phillip.allen@enron.com>", "Lunch", "Mon, 14 May 2001 12:00:00 -0700", "Lunch at noon?"),
    ("ops-alerts@enron.com", "Nightly risk report delayed", "Mon, 14 May 2001 23:50:00 -0700",
     "The nightly risk report is delayed by two hours."),  # no display name; sent on May 15 in UTC
    ("Greg Whalley <greg.whalley@enron.com>", "Expense report for the Houston offsite",
     "Tue, 15 May 2001 09:00:00 -0700", "My expense report total is 1,740 dollars ($1,740.00 with receipts)."),
    ("Kevin Presto <kevin.presto@enron.com>", "East power desk staffing plan", "Wed, 16 May 2001 10:15:00 -0700",
     "We need two more schedulers on the east desk before summer."),
    ("Phillip Allen <phillip.allen@enron.com>", "Phillip Allen vacation schedule", "Thu, 17 May 2001 16:00:00 -0700",
     "I am out from June 4 to June 8."),  # its subject names the sender: asked for the date, never the sender
    ("Mark Taylor <mark.taylor@enron.com>", "ISDA master agreement comments", "Fri, 18 May 2001 09:20:00 -0700",
     "Legal's comments on the ISDA master agreement are in the attached markup."),
    ("Jeff Skilling <jeff.skilling@enron.com>", "Quarterly earnings call script", "Mon, 21 May 2001 07:00:00 -0700",
     "Please review the script for the call; revenue guidance stays at $50 billion."),
    ("Kevin Presto <kevin.presto@enron.com>", "Summer peak load outlook", "Tue, 22 May 2001 13:30:00 -0700",
     "Peak load this summer should run about five percent over last year."),
]


def _write_mbox(path: Path) -> None:
    box = mailbox.mbox(path)
    for number, (sender, subject, date, body) in enumerate(MAILS):
        box.add(f"Message-ID: <{number}.rule@enron.com>\nDate: {date}\nFrom: {sender}\nTo: {OWNER}\n"
                f"Subject: {subject}\n\n{body}\n")
    box.flush()
    box.close()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rules")
    _write_mbox(folder / "beck.mbox")
    path = folder / "mail.db"
    result = runner.invoke(app, ["inbox", "ingest", str(folder / "beck.mbox"), "--db", str(path), "--user", OWNER])
    assert result.exit_code == 0 and f"added {len(MAILS)}" in result.output, result.output
    return path


def _generate(db: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["inbox", "generate-questions", "--db", str(db), "--out", str(out), *extra])


def test_questions_have_one_checkable_answer_from_their_source(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    result = _generate(db, out, "--count", "12", "--seed", "3")
    assert result.exit_code == 0, result.output
    assert ("11 eligible; not asked about: 2 subject shared with another message, 1 subject too short or too long "
            "to name one message") in " ".join(result.output.split())
    questions = load_questions(out)
    assert len(questions) == 11 and len({q.question for q in questions}) == 11  # all 11 eligible, each once
    store = MailStore(db, read_only=True)
    by_subject = {subject_key(s): s for _, s, _, _ in MAILS}
    no_answer = [q for q in questions if q.answer is None]
    assert len(no_answer) == 2 and all(not q.sources and not q.aliases for q in no_answer)  # round(12 × 0.15)
    kinds = {q.kind for q in questions if q.answer is not None}
    assert kinds == {"name", "date", "amount"}
    for q in questions:
        subject = q.question.split('"')[1]
        assert "Gas storage" not in subject and subject != "Lunch" and subject_key(subject) in by_subject
        if q.answer is None:  # asked before its message: no mail with that subject is visible yet
            assert not [h for h in store.search(OWNER, subject, visible_until=q.asked_at) if h.subject == subject]
            continue
        [source] = q.sources
        message = store.read(OWNER, source, visible_until=q.asked_at)
        assert message is not None and message.subject == subject
        if q.kind == "name":
            assert q.answer in (message.sender_name, message.sender) and "Phillip Allen vacation" not in subject
        elif q.kind == "date":
            assert message.date is not None and q.aliases == (message.date[:10],)
        else:
            assert subject in ("Trading limit increase approved", "Expense report for the Houston offsite",
                               "Quarterly earnings call script")
    nameless = [q for q in questions if q.kind == "name" and "Nightly risk" in q.question]
    assert all(q.answer in (None, "ops-alerts@enron.com") for q in nameless)
    dated = {q.question.split('"')[1]: q.answer for q in questions if q.kind == "date" and q.answer}
    assert dated.get("Nightly risk report delayed", "May 15, 2001") == "May 15, 2001"  # the UTC day


def test_same_seed_same_file_and_an_existing_file_is_kept(db: Path, tmp_path: Path) -> None:
    first, second, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    assert _generate(db, first, "--count", "6", "--seed", "1").exit_code == 0
    assert _generate(db, second, "--count", "6", "--seed", "1").exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    assert _generate(db, other, "--count", "6", "--seed", "2").exit_code == 0
    assert other.read_bytes() != first.read_bytes()
    kept = first.read_bytes()
    refused = _generate(db, first, "--count", "3")
    assert refused.exit_code == 2 and "exists; pass --force" in refused.output and first.read_bytes() == kept
    forced = _generate(db, first, "--count", "3", "--force")
    assert forced.exit_code == 0 and len(load_questions(first)) == 3


@pytest.mark.parametrize("args, message", [
    (["--db", "{tmp}/missing.db"], "no mail store at"),
    (["--db", "{tmp}/junk.db"], "is not a Drill mail store"),
    (["--db", "{db}", "--base-url", "http://localhost:1/v1"], "--base-url: for --generator openai"),
    (["--db", "{db}", "--batches", "3"], "--batches: for --generator openai"),
    (["--db", "{db}", "--generator", "openai", "--model", "m"], "needs --base-url and --model"),
    (["--db", "{db}", "--generator", "openai", "--base-url", "http://x/v1", "--model", "m", "--count", "5"],
     "--count is for --generator rules"),
    (["--db", "{db}", "--generator", "llama"], "unknown --generator 'llama'"),
    (["--db", "{db}", "--count", "0"], "--count must be at least 1"),
    (["--db", "{db}", "--user", "nobody@x.org"], "no inbox 'nobody@x.org'"),
])
def test_bad_options_are_one_line_errors(db: Path, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "junk.db").write_bytes(b"not a database at all, just some bytes" * 50)
    filled = [a.format(tmp=tmp_path, db=db) for a in args]
    result = runner.invoke(app, ["inbox", "generate-questions", "--out", str(tmp_path / "q.jsonl"), *filled])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "q.jsonl").exists()


class Answers:
    """Answers every question at once with what `answer(question)` says, citing nothing."""

    info = PolicyInfo(name="lister")

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def act(self, inputs: Any) -> list[Action]:
        return [Action.call("return_final_answer", answer=self.answer(item.task), sources=[]) for item in inputs]


def test_eval_on_generated_questions_oracle_wins_and_lists_earn_nothing(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    assert _generate(db, out, "--count", "12", "--seed", "3").exit_code == 0
    report = tmp_path / "report"
    result = runner.invoke(app, ["eval", "inbox", "--db", str(db), "--questions", str(out), "--split", "train",
                                 "--policy", "oracle", "--policy", "heuristic", "--out", str(report)])
    assert result.exit_code == 0, result.output
    summary = {row["policy"]: row for row in json.loads((report / "results.json").read_text())["summary"]}
    assert summary["oracle"]["correct"] == 1.0 and summary["heuristic"]["reward"] < summary["oracle"]["reward"]

    options = {"db": str(db), "questions": str(out)}
    env = load(**options)
    questions = env.tasks("train") + env.tasks("test")
    golds = {kind: sorted({q.answer for q in questions if q.kind == kind and q.answer}) for kind in ("name", "date")}
    senders = sorted({sender.split(" <")[0] for sender, _, _, _ in MAILS})
    listers = {
        "every sender": lambda q: ", ".join(senders),
        "every sender, spaces only": lambda q: " ".join(senders),
        "every gold of its kind": lambda q: ", ".join(golds.get(q.kind, [])) or "$1,740 $2,500,000 $50 billion",
        "gold or a guess": lambda q: f"{q.answer or 'Tim Belden'}, or maybe Kevin Presto",
    }
    rubric = make_rubric(options, {})
    answerable = [q for q in questions if q.answer is not None]
    for name, answer in listers.items():
        episodes = run_episodes(lambda: load(**options), [(q, 0) for q in answerable], Answers(answer), rubric)
        assert all(e.score is not None and e.score.components["correct"] == 0 for e in episodes), name
    idk = run_episodes(lambda: load(**options), [(q, 0) for q in questions], Answers(lambda q: IDK), rubric)
    oracle = run_episodes(lambda: load(**options), [(q, 0) for q in questions], OraclePolicy(), rubric)
    assert all(e.score is not None and e.score.components["correct"] == 1 for e in oracle)
    assert sum(e.score.total for e in oracle if e.score) > sum(e.score.total for e in idk if e.score)
    assert [e.score.components["correct"] for e in idk if e.score] == [float(q.answer is None) for q in questions]


def test_subject_key_strips_reply_prefixes_and_amounts_must_be_one_value(db: Path) -> None:
    assert subject_key("RE: Fwd: AW:  Gas  storage, contract!") == subject_key("gas storage contract")
    store = MailStore(db, read_only=True)
    questions, report = generate_rule_questions(store, OWNER, 100, seed=0)
    amounts = {q.question.split('"')[1]: q.answer for q in questions if q.kind == "amount" and q.answer}
    assert "EnronOnline launch party budget" not in amounts  # $18,400 and USD 9,000: two amounts, never asked
    assert set(amounts.values()) <= {"$2,500,000", "1,740 dollars", "$50 billion"}
    assert report.written == len(questions) == 11 and report.eligible == 11
    with pytest.raises(ValueError, match="no inbox 'x'"):
        generate_rule_questions(store, "x", 5)


def test_no_question_states_its_answer_and_unreadable_golds_are_dropped(db: Path) -> None:
    store = MailStore(db, read_only=True)
    for seed in range(8):
        questions, _ = generate_rule_questions(store, OWNER, 11, seed)
        named = [q for q in questions if q.kind == "name" and q.answer is not None]
        assert all(not set(normalize_answer(q.answer or "")) <= set(normalize_answer(q.question)) for q in named)
    assert any(q.kind == "date" and "Phillip Allen vacation" in q.question for q in questions)
    office = InboxQuestion(id="x", split="test", inbox=OWNER, question='Who sent the email "Room change"?',
                           asked_at="2001-05-20 00:00:00", answer="Office", kind="name")
    assert _checks(office, {}) == "the judge cannot read its gold"  # "office" only says what a name is
    assert _checks(office.model_copy(update={"answer": "Mark Taylor"}), {}) is None



def test_the_model_server_path_is_generator_openai(db: Path, tmp_path: Path) -> None:
    proposal = {"questions": [{"question": "What limit did the board approve for trading this quarter?",
                               "answer": "$2,500,000", "source_ids": ["2.rule@enron.com"]}]}
    with StubOpenAIServer(text_reply(lambda request: json.dumps(proposal))) as server:
        out = tmp_path / "model.jsonl"
        result = _generate(db, out, "--generator", "openai", "--base-url", server.base_url, "--model", "writer",
                           "--batches", "1", "--batch-size", "14")
        assert result.exit_code == 0, result.output
        assert "1 batches, 1 proposed, 1 kept" in result.output and server.requests[0]["model"] == "writer"
        [question] = load_questions(out)
        assert question.kind == "generated" and question.sources == ("2.rule@enron.com",)
        again = _generate(db, out, "--generator", "openai", "--base-url", server.base_url, "--model", "writer")
        assert again.exit_code == 2 and len(server.requests) == 1  # refused before any call to the model


@pytest.mark.parametrize("body, amount", [
    ("The total is $1,740.00, i.e. 1740 dollars.", "$1,740.00"),
    ("Budget: $48k, approved.", "$48k"),
    ("We owe $2,500, not more.", "$2,500"),
    ("We pay $500 now and ¥30,000 on arrival.", None),
    ("Fees: EUR 1,200; the deposit is 300 euros.", None),
    ("No money here, just 42 widgets on 5/14.", None),
])
def test_an_amount_is_asked_only_when_the_mail_states_one(body: str, amount: str | None) -> None:
    message = StoredMessage(message_id="m@x", subject="Quarterly budget numbers", sender="a@x", sender_name="A B",
                            date="2024-05-01 10:00:00", body=body, recipients=(), attachments=())
    fact = _fact(message, Counter({subject_key(message.subject): 1}))
    assert not isinstance(fact, str)
    assert fact.golds.get("amount", (None,))[0] == amount


def test_generated_questions_split_by_text_into_all_three_splits() -> None:
    from drill.envs.inbox.questions import generated_split

    texts = [f"Who sent the email \"Quarterly review number {i}\"?" for i in range(400)]
    splits = [generated_split("ann", t) for t in texts]
    assert {s: splits.count(s) for s in set(splits)}.keys() == {"train", "validation", "test"}
    assert 0.1 < splits.count("test") / 400 < 0.3 and 0.05 < splits.count("validation") / 400 < 0.2
    assert [generated_split("ann", "  WHO sent the email \"Quarterly review number 7\"? ")] == [splits[7]]  # normalized
