"""The LLM-judge audit against the loopback stub, `drill audit ENV` and `drill audit rollouts` end to end, and the
detectors inside `drill train`."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from drill.audit.judge import HEDGED, judge_audit
from drill.audit.training import audit_training_step
from drill.cli import app
from drill.core.judge import claims
from drill.envs import inbox
from drill.envs.inbox.questions import AnswerJudge, Verdict, match_verdict
from drill.envs.inbox.spec import judge_lexicon
from drill.models.testing import StubOpenAIServer, text_reply
from drill.train.methods import grpo
from drill.train.run import TrainingStopped

runner = CliRunner()


def _reference(request: dict[str, Any]) -> tuple[list[str], str]:
    """The reference answer's forms and the candidate, from the judge prompt."""
    prompt = request["messages"][0]["content"]
    gold = re.search(r"Reference answer: (.*)", prompt).group(1)  # type: ignore[union-attr]
    candidate = re.search(r"Candidate answer: (.*)", prompt).group(1)  # type: ignore[union-attr]
    return [g.lower() for g in gold.split(" / ") if g], candidate.lower()


def lenient(request: dict[str, Any]) -> str:
    """A judge model that says CORRECT whenever the candidate contains the reference: it accepts lists."""
    forms, candidate = _reference(request)
    return "CORRECT" if any(g in candidate for g in forms) else "INCORRECT"


def strict(request: dict[str, Any]) -> str:
    forms, candidate = _reference(request)
    return "CORRECT" if candidate.strip(" .") in forms else "INCORRECT"


@pytest.fixture
def stub() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer(text_reply(lenient)) as server:
        yield server


@functools.cache
def _lexicon() -> dict[str, tuple[str, ...]]:
    return judge_lexicon(inbox.load())


def shipped(question: Any, answer: str) -> Verdict:
    """The inbox's own match judge: `match_verdict` with the environment's lexicon (`judge_lexicon`), as its rubric
    and `drill audit inbox` build it."""
    return match_verdict(question, answer, _lexicon())


def model_judge(spec: str, server: StubOpenAIServer) -> AnswerJudge:
    """A judge model behind `server`, knowing the inbox's values as the rubric's judge does."""
    return AnswerJudge(spec, server.base_url, lexicon=_lexicon())


@pytest.fixture(scope="module")
def questions() -> list[Any]:
    return inbox.load().tasks("test")


def test_lists_and_hedges_never_reach_a_judge_model_and_a_credulous_one_is_caught(stub: StubOpenAIServer,
                                                                                 questions: list[Any]) -> None:
    report, findings = judge_audit(questions, model_judge("openai:lenient", stub), shipped, "openai:lenient", limit=12)
    # rule: a hedge, and since issue 38 a list (of the question's kind, or after a separator), is wrong before the
    # model is asked, so a model that accepts any answer containing the gold accepts none of them
    assert findings == [] and set(report["adversarial_accepted"].values()) == {0.0}
    stub.reply = text_reply(lambda request: "CORRECT")
    report, findings = judge_audit(questions, model_judge("openai:credulous", stub), shipped, "openai:credulous",
                                   limit=12)
    kinds = {f.strategy.split(": ", 1)[1] for f in findings if f.kind == "judge accepts adversarial answers"}
    assert kinds == {"question repeated"}  # another value of the kind ("other gold") is ruled wrong: agreement holds


def test_a_strict_judge_agrees_with_match_and_accepts_no_adversarial_answer(stub: StubOpenAIServer,
                                                                            questions: list[Any]) -> None:
    stub.reply = text_reply(strict)
    report, findings = judge_audit(questions, model_judge("openai:strict", stub), shipped, "openai:strict", limit=12)
    assert findings == [] and set(report["adversarial_accepted"].values()) == {0.0}
    assert report["agreement"] == 1.0


def test_the_shipped_match_judge_accepts_no_adversarial_answer(questions: list[Any]) -> None:
    report, findings = judge_audit(questions, shipped, shipped, "match")
    assert findings == [] and report["questions"] == 40


def test_drill_audit_env_prints_findings_and_writes_audit_json_and_a_chart(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", "triage", "--limit", "12", "--budget", "20", "--out", str(tmp_path),
                                 "--split", "validation"])
    assert result.exit_code == 0, result.output
    assert "drill audit triage" in result.output and "12 validation tasks" in result.output
    audit = json.loads((tmp_path / "audit.json").read_text())
    assert audit["env"] == "triage" and audit["errors"] == 0 and audit["strategies"] and audit["split"] == "validation"
    bad = runner.invoke(app, ["audit", "triage", "--split", "dev", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--split must be one of train, validation, test, not 'dev'" in bad.output
    assert set(audit["baselines"]) == {"random", "heuristic", "oracle"} and (tmp_path / "audit.png").stat().st_size


def test_drill_audit_inbox_with_an_llm_judge_runs_the_judge_audit(stub: StubOpenAIServer, tmp_path: Path) -> None:
    stub.reply = text_reply(lambda request: "CORRECT")
    result = runner.invoke(app, ["audit", "inbox", "--limit", "8", "--budget", "10", "--out", str(tmp_path),
                                 "--judge", "openai:credulous", "--judge-base-url", stub.base_url, "--strict"])
    assert result.exit_code == 1, result.output  # --strict: the judge's errors fail the command
    audit = json.loads((tmp_path / "audit.json").read_text())
    assert audit["judge"]["judge"] == "openai:credulous" and audit["judge"]["adversarial_accepted"]["question repeated"]
    assert any(f["kind"] == "judge accepts adversarial answers" for f in audit["findings"])


def test_drill_audit_rollouts_reads_a_results_json(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    assert runner.invoke(app, ["eval", "triage", "--limit", "6", "--policy", "heuristic", "--out", str(out)]
                         ).exit_code == 0
    result = runner.invoke(app, ["audit", "rollouts", str(out / "results.json")])
    assert result.exit_code == 0 and "drill audit rollouts" in result.output
    assert runner.invoke(app, ["audit", "rollouts", str(tmp_path / "missing")]).exit_code == 2


def test_the_training_hook_prints_findings_and_stops_the_run_when_asked() -> None:
    records = [{"step": i, "reward/total": 0.3, "kl": 0.5 if i == 8 else 0.002, "completion_tokens_mean": 40.0}
               for i in range(1, 11)]
    console = Console(record=True, width=200)
    [finding] = audit_training_step(10, records, [], False, console)
    assert finding.kind == "KL spike" and "audit step 10: warning · KL spike" in console.export_text()
    with pytest.raises(TrainingStopped, match="KL spike"):
        audit_training_step(10, records, [], True, console)
    assert audit_training_step(10, records[:5], [], True, console) == []
    assert grpo.Options(audit_every=5, audit_stop=True).audit_every == 5


def test_a_judge_that_takes_a_year_for_a_date_is_caught(questions: list[Any]) -> None:
    """The year-only hole put back: a judge that lets a bare year state a date ("July 2024" for "April 10, 2024")."""
    def year_taker(question: Any, answer: str) -> Any:
        if question.kind == "date" and answer.strip().isdigit() and answer.strip() in question.answer:
            return Verdict("correct", "match")
        return shipped(question, answer)

    dated = [q for q in questions if q.kind == "date" and q.answer is not None]
    assert dated, "the shipped questions have date answers"
    _, findings = judge_audit(dated, year_taker, shipped, "year taker")
    assert {f.strategy for f in findings if f.kind == "judge accepts adversarial answers"} == {
        "year taker: the year alone"}


def test_a_judge_that_takes_a_weekday_for_a_date_is_caught(questions: list[Any]) -> None:
    """The weekday hole put back: `drill.core.judge` let a weekday agree with the date falling on it, so "Monday"
    answered "When is the QBR?" (gold "August 19, 2024") as well as the date itself."""
    def weekday_taker(question: Any, answer: str) -> Any:
        dated = [c.value for c in claims(question.answer, "date") if c.value[0] == "date" and c.value[3]]
        if dated and answer.strip() == date(dated[0][3], dated[0][1], dated[0][2]).strftime("%A"):
            return Verdict("correct", "match")
        return shipped(question, answer)

    dated = [q for q in questions if q.kind == "date" and q.answer is not None]
    _, findings = judge_audit(dated, weekday_taker, shipped, "weekday taker")
    assert {f.strategy for f in findings if f.kind == "judge accepts adversarial answers"} == {
        "weekday taker: the weekday alone"}
    _, left = judge_audit(dated, shipped, shipped, "match")
    assert not left


def test_a_judge_that_reads_past_a_negation_a_year_or_a_weekday_is_caught(questions: list[Any]) -> None:
    """Three holes an outside red team found in `drill.core.judge` (2026-11-27), put back: "not X" judged as X, a
    date in another year matched through the gold's year-free alias, and a weekday that does not fall on the date.
    The shipped judge marks all three wrong."""
    def lenient(question: Any, answer: str) -> Any:
        answer = re.sub(r"^not ", "", answer)  # the negation unread
        if question.kind == "date":
            answer = re.sub(r"(?:19|20)\d\d", "", answer)  # the year unread
            answer = re.sub(r"^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, ", "", answer)  # the weekday unread
        return shipped(question, answer)

    answerable = [q for q in questions if q.answer is not None]
    _, findings = judge_audit(answerable, lenient, shipped, "lenient")
    assert {f.strategy for f in findings if f.kind == "judge accepts adversarial answers"} >= {
        "lenient: negated", "lenient: another year", "lenient: a wrong weekday"}
    _, left = judge_audit(answerable, shipped, shipped, "match")
    assert not left


HEDGE_SHAPES = (r" - no\.$", r"^Definitely no ", r"^ca\. ", r" \(pending\)$", r"^Is it ", r" /s$", r" \(50/50\)$",
                "\\? \U0001f642$", r" \(pas sûr\)$", r", idk$")


def test_a_judge_that_reads_past_the_red_teams_hedges_is_caught(questions: list[Any]) -> None:
    """The hedge red team's holes (2026-11-28) put back: a judge that reads "X - no.", "Definitely no X", "ca. X", "X
    (pending)", "Is it X", "X /s", "X (50/50)", "X? 🙂", "X (pas sûr)" and "X, idk" as X. The audit names each shape;
    the shipped judge accepts none."""
    def hedge_blind(question: Any, answer: str) -> Any:
        for shape in HEDGE_SHAPES:
            answer = re.sub(shape, "", answer)
        return shipped(question, answer)

    answerable = [q for q in questions if q.answer is not None]
    _, findings = judge_audit(answerable, hedge_blind, shipped, "hedge-blind")
    assert {f.strategy for f in findings if f.kind == "judge accepts adversarial answers"} == {
        f"hedge-blind: {kind}" for kind in HEDGED}
    _, left = judge_audit(answerable, shipped, shipped, "match")
    assert not left



def test_the_judge_audit_judges_with_the_rubrics_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    """`drill audit inbox` audits the judge the rubric builds, knowing the inbox's values (`judge_lexicon`): until
    2026-11-28 it built one without them, for which lower-case and glued names were no candidates."""
    from drill.audit import commands
    from drill.audit.search import AuditResult
    from drill.envs.inbox import questions as inbox_questions

    built: list[Any] = []
    real = inbox_questions.AnswerJudge

    def recording(*args: Any, **kwargs: Any) -> Any:
        built.append(judge := real(*args, **kwargs))
        return judge

    monkeypatch.setattr(inbox_questions, "AnswerJudge", recording)
    options = inbox.SPEC.parse_options({"judge": "match"})
    result = AuditResult(env="inbox", options=options, baselines={}, strategies=[], findings=[], seconds=0.0, tasks=0,
                         seeds=1, split="validation")
    commands.run_judge_audit(inbox.SPEC, options, result)
    [judge] = built
    assert judge.lexicon == _lexicon() and result.judge is not None and not result.findings
