"""The holes `drill audit` found in our own rubrics and baselines, each pinned by a test of its fix.

* triage rubric: removing an answer's full stops raised parsimony (the first sentence's grace spanned it all);
* triage heuristic: "never escalate" and "confidence 1" each beat it (its escalation and confidence were off);
* inbox judge: a list of candidates, a hedge, or an abstention with a guess attached passed as an answer;
* chaosops heuristic: paging the network team every time beat it on misrouted traffic.

Each fix keeps the oracle on top and, in the inbox, "I don't know" above a wrong answer.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

import pytest

from drill.core import Action, Episode, Event, PolicyInput, run_episodes
from drill.envs import chaosops, inbox, triage
from drill.envs.inbox.questions import InboxQuestion, is_abstention, match_verdict
from drill.envs.triage import TriageTask
from drill.envs.triage.rubric import parsimony_score

TASK = TriageTask(id="T-9001", ticket="cert expired on shop site",
                  gold_resolution="Renew the certificate and reload nginx.", gold_article_ids=["KB-SEC-0001"],
                  should_escalate=False, answerable=True, area="security")


def submitted(resolution: str) -> Episode:
    event = Event(name="submitted", step=1, role="agent", data={
        "resolution": resolution, "citations": ["KB-SEC-0001"], "confidence": 0.9, "escalate": False,
        "seen_ids": ["KB-SEC-0001"]})
    return Episode(env="triage", task_id=TASK.id, seed=0, events=[event], done=True)


def without_stops(text: str) -> str:
    return re.sub(r"[.!?;]+(\s|$)", r"\1", text).strip()


@pytest.mark.parametrize("answer", [
    "Renew the certificate first. Then the film won six Academy Awards and was recorded in London.",
    "Reload nginx and renew it. Thanks for the report, have a lovely weekend.",
    "Renew the certificate, reload nginx. The premiere drew lines. Reload again.",
])
def test_removing_full_stops_never_raises_parsimony(answer: str) -> None:
    assert parsimony_score(submitted(without_stops(answer)), TASK) <= parsimony_score(submitted(answer), TASK) + 1e-12


def test_a_short_opening_sentence_is_the_one_place_full_stops_matter_and_it_never_beats_the_plain_answer() -> None:
    """With fewer than FIRST_SENTENCE_GRACE judged words in the first sentence, removing its full stop merges it
    into the grace window (0 -> 2/3 here); the same words without the greeting still score more."""
    greeting = parsimony_score(submitted("Hello there Reload nginx"), TASK)
    assert parsimony_score(submitted("Hello there. Reload nginx."), TASK) == 0.0 < greeting
    assert greeting < parsimony_score(submitted("Reload nginx."), TASK) == 1.0


def test_removing_full_stops_from_the_heuristic_no_longer_pays_on_the_shipped_tickets() -> None:
    env = triage.load()
    tasks, scorer = env.tasks("test"), triage.rubric()
    episodes = run_episodes(triage.load, [(t, 0) for t in tasks], triage.HeuristicPolicy())
    for episode, task in zip(episodes, tasks):
        [event] = episode.events_named("submitted")
        stripped = Event(name="submitted", step=event.step, role=event.role,
                         data={**event.data, "resolution": without_stops(str(event.data["resolution"]))})
        changed = episode.model_copy(update={"events": [stripped]})
        assert scorer.score(changed, task).total <= scorer.score(episode, task).total + 1e-12, task.id


class Forced:
    """The heuristic with one argument of its submission forced."""

    def __init__(self, **arguments: object) -> None:
        self.base, self.arguments = triage.HeuristicPolicy(), arguments
        self.info = self.base.info

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action(tool=a.tool, arguments={**a.arguments, **self.arguments}) if a.tool == "submit_resolution"
                else a for a in self.base.act(inputs)]


def test_the_triage_heuristic_beats_never_escalating_and_full_confidence() -> None:
    tasks = triage.load().tasks("test")

    def mean(policy: object) -> float:
        return statistics.fmean(e.score.total for e in run_episodes(  # type: ignore[union-attr]
            triage.load, [(t, 0) for t in tasks], policy, triage.rubric()))  # type: ignore[arg-type]
    heuristic = mean(triage.HeuristicPolicy())
    for forced in ({"escalate": False}, {"escalate": True}, {"confidence": 1.0}, {"confidence": 0.0}):
        assert mean(Forced(**forced)) < heuristic, forced
    assert mean(triage.OraclePolicy()) == pytest.approx(1.0)


QUESTION = InboxQuestion(id="q1", inbox="me@corp.example", question="Which room is the QBR with Harrowgate Books in?",
                         asked_at="2024-03-02 15:11:00", answer="Harbor Room", sources=("m1@corp.example",),
                         kind="place")
DATED = InboxQuestion(id="q2", inbox="me@corp.example", question="When is the Q2 QBR with Halvorsen Freight?",
                      asked_at="2024-03-02 15:11:00", answer="April 29, 2024", aliases=("April 29", "2024-04-29"),
                      sources=("m2@corp.example",), kind="date")
NO_ANSWER = QUESTION.model_copy(update={"id": "q3", "answer": None, "sources": ()})


@pytest.mark.parametrize("answer", [
    "Harbor Room, Granite Room, Umar Ortega", "Harbor Room, or maybe Granite Room", "Granite Room or Harbor Room",
    "Harbor Room, not sure though", "Probably the Harbor Room", "Harbor Room; Cedar Room",
])
def test_the_match_judge_marks_hedges_and_lists_wrong(answer: str) -> None:
    assert match_verdict(QUESTION, answer).verdict == "wrong"


@pytest.mark.parametrize(("question", "answer"), [
    (QUESTION, "Harbor Room"), (QUESTION, "The Harbor Room."), (QUESTION, "It is in the Harbor Room"),
    (DATED, "April 29, 2024"), (DATED, "It is April 29, 2024."), (DATED, "Monday, April 29"), (DATED, "2024-04-29"),
])
def test_the_match_judge_still_accepts_plain_answers(question: InboxQuestion, answer: str) -> None:
    assert match_verdict(question, answer).verdict == "correct"


def test_a_clock_time_after_the_day_is_not_a_second_candidate() -> None:
    for answer in ("April 29, 9:30 AM", "April 29, 2024, 2:00 pm", "April 29 at 14:00", "April 29, 9:30 a.m."):
        assert match_verdict(DATED, answer).verdict == "correct", answer
    for answer in ("April 29, 9:30 AM, May 6", "April 29, 9:30 AM or May 6", "April 22, 9:30 AM"):
        assert match_verdict(DATED, answer).verdict == "wrong", answer
    timed = DATED.model_copy(update={"answer": "9:30 AM", "aliases": ("09:30",)})  # a time asked for: lists count
    assert match_verdict(timed, "9:30 AM").verdict == "correct"
    assert match_verdict(timed, "9:30 AM, 10:30 AM").verdict == "wrong"


def test_an_abstention_with_a_guess_attached_is_not_an_abstention() -> None:
    for answer in ("I don't know", "I don't know.", "Unknown", "I do not know, the inbox does not say"):
        assert is_abstention(answer)
        assert match_verdict(NO_ANSWER, answer).verdict == "correct"
    # other words for it (a red team, 2026-11-27: these were wrong answers, -1, on an unanswerable question)
    for answer in ("N/A", "None", "No idea", "No information", "Not mentioned in the inbox", "I couldn't find it",
                   "Sorry, I don't know", "Unfortunately not found", "none."):
        assert is_abstention(answer), answer
        assert match_verdict(NO_ANSWER, answer).verdict == "correct", answer
        assert match_verdict(QUESTION, answer).verdict != "correct", answer
    for answer in ("None, Harbor Room", "Sorry, the Harbor Room", "No idea, maybe 2024"):  # an answer is no abstention
        assert not is_abstention(answer) and match_verdict(NO_ANSWER, answer).verdict == "wrong", answer
    for answer in ("I don't know, or maybe Harbor Room", "Unknown - probably the Harbor Room"):
        assert not is_abstention(answer)
        assert match_verdict(NO_ANSWER, answer).verdict == "wrong"
        assert match_verdict(QUESTION, answer).verdict == "wrong"


def test_the_inbox_rubric_keeps_abstaining_above_a_wrong_answer_and_the_oracle_on_top() -> None:
    scorer = inbox.rubric()

    def answered(answer: str) -> Episode:
        event = Event(name="answered", step=1, role="assistant",
                      data={"answer": answer, "sources": ["m1@corp.example"], "cited": 1})
        return Episode(env="inbox", task_id=QUESTION.id, seed=0, events=[event], done=True)
    right, hedge, idk = (scorer.score(answered(a), QUESTION).total
                         for a in ("Harbor Room", "Harbor Room, or maybe Granite Room", "I don't know"))
    assert right > idk > hedge


def test_the_chaosops_heuristic_pages_network_for_misrouted_traffic() -> None:
    tasks = [t for t in chaosops.load().tasks("test") if t.failure == "misrouted_traffic"]
    episodes = run_episodes(chaosops.load, [(t, 0) for t in tasks], chaosops.baselines["heuristic"](),
                            chaosops.rubric())
    escalations = [t.action.arguments.get("team") for e in episodes for t in e.turns if t.action.tool == "escalate"]
    assert escalations and set(escalations) == {"network"}
    # The heuristic's Oversight once flagged the last agent to change the loudest service, so routine fleet work made
    # it flag the wrong agent, the rogue undid the page and these stayed open (issue 19). It now judges each trace
    # change on its evidence, so the rogue is flagged before the page and every one of these is resolved.
    assert all(e.count("resolved") == 1 for e in episodes)


def test_names_packed_in_lower_case_are_a_list_and_every_gold_name_still_right() -> None:
    """An outside red team (2026-11-27): the judge knew only the golds' names, so names no gold uses, written in lower
    case ("chidi yilmaz jasmine kuznetsov ... lucas fontaine"), were no second name. The judge now knows every
    person of the mail store; with the golds' names alone (the hole put back) each packed answer is still right."""
    from drill.envs.inbox.questions import lexicon_of
    from drill.envs.inbox.spec import judge_lexicon, load

    env = load()
    lexicon, golds_only = judge_lexicon(env), lexicon_of([*env.tasks("train"), *env.tasks("test")])
    unknown = [p for p in env.store.people() if p not in golds_only.get("name", ())]
    names = [q for q in env.tasks("train") if q.kind == "name" and q.answer is not None]
    assert len(names) > 50 and len(unknown) > 10
    for question in names:
        assert match_verdict(question, question.answer, lexicon).verdict == "correct", question.id
        others = [p for p in unknown if p.lower() not in question.question.lower()][:3]
        packed = " ".join(p.lower() for p in [*others, question.answer])
        assert match_verdict(question, packed, lexicon).verdict == "wrong", packed
        assert match_verdict(question, packed, golds_only).verdict == "correct", packed
