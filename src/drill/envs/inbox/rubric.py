"""The inbox rubric: a correct answer earns the most, "I don't know" beats a wrong answer.

Components (raw value × weight, each logged on its own in the `Score`):

| component     | raw value                                                                  | weight |
|---------------|----------------------------------------------------------------------------|--------|
| correct       | 1 if the judge's verdict on the answer is correct (incl. "I don't know" when the inbox has no answer) | +1.0 |
| wrong         | 1 if the verdict is wrong (a hallucination)                                | −1.0  |
| no_answer     | 1 if the episode ended without return_final_answer                         | −0.25 |
| sources       | correct answers only: share of cited ids that are retrieved gold sources (see `sources`)  | +0.2  |
| partial       | wrong or abstained, answerable: 1 if a gold source was read, 0.5 if one was found         | +0.1  |
| efficiency    | correct answers only: 1 − (turns − 1) / max_turns                          | +0.1  |
| format_errors | number of invalid actions                                                  | −0.05 |

So a correct answer scores at least 1 − 0.05·(max_turns − 1), any "I don't know" at most 0.1, a wrong
answer at most −0.9. Each bonus is paid once: a set of ids, a max over events, one verdict. Citing
everything dilutes `sources`; citing an id the agent never retrieved earns nothing; the best possible
episode reads one gold source and answers (the oracle).
"""

from __future__ import annotations

import re

from drill.core.rubric import Component, Rubric
from drill.core.types import Episode, Event
from drill.envs.inbox.questions import AnswerJudge, InboxQuestion, Verdict

__all__ = ["judgment", "outcome", "rubric"]


def _answered(episode: Episode) -> Event | None:
    answers = episode.events_named("answered")
    if len(answers) > 1:
        raise ValueError(f"episode has {len(answers)} answered events; the env ends the episode at the first")
    return answers[0] if answers else None


def judgment(episode: Episode, task: InboxQuestion, judge: AnswerJudge) -> Verdict | None:
    """The judge's verdict on the episode's answer (None without one): correct, wrong or abstained.

    An answer longer than the `answered` event keeps (`answer_chars` above its 500 characters) is wrong: the judge
    would read only its start, so the gold, 500 spaces and ", or maybe Granite Room?" was the gold alone (the oracle
    so padded: 1.292 and 95 of 95 successes on validation, as plain; ninth red team). No short answer comes near it."""
    event = _answered(episode)
    if event is None:
        return None
    if int(event.data.get("answer_chars", 0)) > len(str(event.data["answer"])):
        # the rubric's verdict, not the judge's: a judge is any callable (`drill audit`'s gallery plugs in functions)
        return Verdict("wrong", "rubric", f"the answer has {event.data['answer_chars']} characters; the event keeps "
                                          f"{len(str(event.data['answer']))}")
    retrieved = _searched(episode) | _read(episode)
    cited = [i for i in _ids(event, "sources") if i in retrieved]
    return judge(task, _without_citations(str(event.data["answer"]), cited))


_CITING = r"(?:(?:sources?|source ids?|message[ -]ids?|ids?|citations?|cited|refs?|references?)\s*:?\s*)?"


def _without_citations(answer: str, cited: list[str]) -> str:
    """`answer` without the ids it cites as its sources, each with its label ("X (source: <id>)", "X\nSources: id"):
    an id's digits and letters were read as values, so an honest answer naming its source in the text was wrong
    (on 104 of 104 sampled questions for "X\nSources: id", 67 for "X (source: id)"; eighth red team). Only the ids
    that the answer cites and the agent retrieved (`cited`: mail ids of the store) are taken out, so no value can hide
    there: a cited "Harbor Room" is still read."""
    for source in sorted(cited, key=len, reverse=True):
        answer = re.sub(_CITING + r"<?" + re.escape(source) + r">?", " ", answer, flags=re.IGNORECASE)
    return answer


def outcome(score_components: dict[str, float]) -> str:
    """correct, wrong, no_answer or abstained, read back from a score's components (for reports)."""
    for name in ("correct", "wrong", "no_answer"):
        if score_components[name]:
            return name
    return "abstained"


def _searched(episode: Episode) -> set[str]:
    return {str(i) for e in episode.events_named("search") for i in _ids(e, "ids")}


def _ids(event: Event, key: str) -> list[str]:
    value = event.data[key]
    if not isinstance(value, list):
        raise ValueError(f"{event.name} event: {key} must be a list of ids, got {type(value).__name__}")
    return value


def _read(episode: Episode) -> set[str]:
    return {str(e.data["message_id"]) for e in episode.events_named("read") if e.data["found"]}


def format_errors(episode: Episode, task: InboxQuestion) -> float:
    return float(episode.count("invalid_action"))


def rubric(max_turns: int = 10, judge: AnswerJudge | None = None) -> Rubric[InboxQuestion]:
    """The inbox rubric for episodes of at most `max_turns` tool calls (the env's `max_turns`), judging answers
    with `judge` (normalized match by default). The judge runs here, not in the environment, once per answer
    (it caches), so episodes can be re-judged without replaying; a judge model that fails raises ModelCallError,
    which the rubric reports as a failed component, never as a zero."""
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    judge = judge or AnswerJudge("match")

    def verdict(episode: Episode, task: InboxQuestion) -> str | None:
        found = judgment(episode, task, judge)
        return None if found is None else found.verdict

    def correct(episode: Episode, task: InboxQuestion) -> float:
        return float(verdict(episode, task) == "correct")

    def wrong(episode: Episode, task: InboxQuestion) -> float:
        return float(verdict(episode, task) == "wrong")

    def no_answer(episode: Episode, task: InboxQuestion) -> float:
        return float(_answered(episode) is None)

    def sources(episode: Episode, task: InboxQuestion) -> float:
        """Correct answers: the share of cited ids that are gold sources the agent retrieved (searched or read), 0
        if none is; a question with no answer: 1 when nothing is cited."""
        event = _answered(episode)
        if event is None or verdict(episode, task) != "correct":
            return 0.0
        cited = set(_ids(event, "sources"))
        if task.answer is None:
            return float(not cited)
        good = cited & set(task.sources) & (_searched(episode) | _read(episode))
        return len(good) / len(cited) if good else 0.0

    def partial(episode: Episode, task: InboxQuestion) -> float:
        if task.answer is None or verdict(episode, task) == "correct":
            return 0.0
        gold = set(task.sources)
        if gold & _read(episode):
            return 1.0
        return 0.5 if gold & _searched(episode) else 0.0

    def efficiency(episode: Episode, task: InboxQuestion) -> float:
        if verdict(episode, task) != "correct":
            return 0.0
        return max(0.0, 1.0 - (len(episode.turns) - 1) / max_turns)

    return Rubric([
        Component("correct", correct, 1.0, "the answer is right ('I don't know' where the inbox has no answer)"),
        Component("wrong", wrong, -1.0, "the answer is wrong: worse than saying 'I don't know'"),
        Component("no_answer", no_answer, -0.25, "the episode ran out of turns without an answer"),
        Component("sources", sources, 0.2, "share of cited ids that are retrieved gold sources, for correct answers"),
        Component("partial", partial, 0.1, "read (1) or found (0.5) a gold source, for answers that are not correct"),
        Component("efficiency", efficiency, 0.1, "fewer tool calls, for correct answers"),
        Component("format_errors", format_errors, -0.05, "invalid tool calls"),
    ])
