"""The inbox rubric: correct > "I don't know" > wrong, partial credit below any correct answer, fewer turns pay,
bonuses once, and degenerate policies below the heuristic."""

from __future__ import annotations

import re
import statistics
from datetime import datetime, timedelta
from collections.abc import Callable, Sequence

import pytest

from drill.core import Action, Episode, PolicyInfo, PolicyInput, run_episodes
from drill.envs.inbox import InboxEnv, InboxQuestion, baselines, load, rubric
from drill.envs.inbox.baselines import HeuristicPolicy, search_keywords
from drill.envs.inbox.questions import IDK, AnswerJudge, is_abstention, lexicon_of, match_verdict, plain_text
from drill.envs.inbox.spec import judge_lexicon


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.getbasetemp() / "inbox-cache")


@pytest.fixture(scope="session")
def env(cache: str) -> InboxEnv:
    return load(cache_dir=cache)


class Scripted:
    """Plays a fixed list of actions per question (test seam)."""

    info = PolicyInfo(name="scripted")

    def __init__(self, plan: Callable[[InboxQuestion], list[Action]]) -> None:
        self.plan = plan

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        out = []
        for item in inputs:
            assert isinstance(item.task, InboxQuestion)
            out.append(self.plan(item.task)[len(item.own_turns())])
        return out


def play(env: InboxEnv, question: InboxQuestion, plan: Callable[[InboxQuestion], list[Action]],
         max_turns: int = 10) -> Episode:
    return run_episodes(lambda: InboxEnv(**{**env.options, "max_turns": max_turns}), [(question, 0)],
                        Scripted(plan), rubric(max_turns))[0]


def total(episode: Episode) -> float:
    assert episode.score is not None
    return episode.score.total


def answer(text: str, sources: Sequence[str] = ()) -> Action:
    return Action.call("return_final_answer", answer=text, sources=list(sources))


def read(message_id: str) -> Action:
    return Action.call("read_email", message_id=message_id)


def search(keywords: str) -> Action:
    return Action.call("search_emails", keywords=keywords)


def answerable(env: InboxEnv) -> InboxQuestion:
    task = next(q for q in env.tasks("test") if isinstance(q, InboxQuestion) and q.answer and q.kind == "amount")
    assert isinstance(task, InboxQuestion)
    return task


def unanswerable(env: InboxEnv) -> InboxQuestion:
    task = next(q for q in env.tasks("test") if isinstance(q, InboxQuestion) and q.answer is None)
    assert isinstance(task, InboxQuestion)
    return task


def test_correct_beats_i_dont_know_beats_wrong(env: InboxEnv) -> None:
    q = answerable(env)
    gold = q.sources[0]
    correct = play(env, q, lambda t: [read(gold), answer(t.answer or "", [gold])])
    idk = play(env, q, lambda t: [read(gold), answer(IDK)])
    wrong = play(env, q, lambda t: [read(gold), answer("$1", [gold])])
    assert total(correct) > total(idk) > total(wrong)
    assert correct.score and correct.score.components["correct"] == 1.0 and correct.score.components["sources"] == 1.0
    assert wrong.score and wrong.score.components["wrong"] == 1.0

    nothing = play(env, unanswerable(env), lambda t: [search("budget"), answer(IDK)])
    guess = play(env, unanswerable(env), lambda t: [search("budget"), answer("March 3, 2024")])
    assert total(nothing) > 1.0 > 0.0 > total(guess)


def test_an_answer_longer_than_the_event_keeps_is_wrong(env: InboxEnv) -> None:
    """The event keeps an answer's first 500 characters, and the judge read only those: the gold, 500 spaces and ",
    or maybe Granite Room?" scored as the gold (ninth red team). An answer of 500 characters is still read whole."""
    q = answerable(env)
    gold = q.sources[0]
    plain = play(env, q, lambda t: [read(gold), answer(t.answer or "", [gold])])
    for pad in (" " * 500 + ", or maybe Granite Room?", "." * 500):
        padded = play(env, q, lambda t: [read(gold), answer((t.answer or "") + pad, [gold])])
        assert padded.score and padded.score.components["wrong"] == 1.0
        assert total(padded) < 0 < total(plain)
    whole = play(env, q, lambda t: [read(gold), answer((t.answer or "").ljust(500), [gold])])
    assert total(whole) == total(plain)


def test_partial_credit_stays_below_any_correct_answer(env: InboxEnv) -> None:
    q = answerable(env)
    gold = q.sources[0]
    read_then_idk = play(env, q, lambda t: [read(gold), read(gold), answer(IDK)])
    plain_idk = play(env, q, lambda t: [answer(IDK)])
    assert read_then_idk.score and read_then_idk.score.components["partial"] == 1.0  # paid once, not per read
    assert total(read_then_idk) > total(plain_idk)
    # the worst correct answer: every other turn wasted on malformed calls, nothing cited
    bad = Action.call("search_emails", keywords="x", max_results=99)
    slow = play(env, q, lambda t: [bad] * 9 + [answer(t.answer or "")])
    assert slow.score and slow.score.components["correct"] == 1.0 and slow.score.components["format_errors"] == 9
    assert total(slow) > total(read_then_idk)
    out_of_turns = play(env, q, lambda t: [read(gold)] * 10)
    assert total(out_of_turns) < total(plain_idk)


def test_fewer_turns_score_higher_when_both_are_correct(env: InboxEnv) -> None:
    q = answerable(env)
    gold = q.sources[0]
    quick = play(env, q, lambda t: [read(gold), answer(t.answer or "", [gold])])
    slow = play(env, q, lambda t: [search(search_keywords(t.question)[0]), search("budget"), read(gold),
                                   answer(t.answer or "", [gold])])
    assert total(quick) > total(slow) > 1.0


def test_sources_must_be_retrieved_and_citing_everything_dilutes_them(env: InboxEnv) -> None:
    q = answerable(env)
    gold = q.sources[0]
    unseen = play(env, q, lambda t: [answer(t.answer or "", [gold])])  # knows the id without looking: no credit
    assert unseen.score and unseen.score.components["sources"] == 0.0
    found = play(env, q, lambda t: [search(""), read(gold), answer(t.answer or "", [gold])])
    cited_all = play(env, q, lambda t: [search(""), read(gold), answer(
        t.answer or "", [gold] + [h.message_id for h in env.store.search(t.inbox, "", visible_until=t.asked_at)])])
    twice = play(env, q, lambda t: [read(gold), answer(t.answer or "", [gold, gold, f"<{gold}>"])])
    assert found.score and cited_all.score and twice.score
    assert found.score.components["sources"] == 1.0 == twice.score.components["sources"]
    assert cited_all.score.components["sources"] < 0.2


def test_no_sequence_beats_the_oracle(env: InboxEnv) -> None:
    tasks = [t for t in env.tasks("test")[:40] if isinstance(t, InboxQuestion)]
    oracle = run_episodes(lambda: InboxEnv(**env.options), [(t, 0) for t in tasks], baselines["oracle"](), rubric())
    best = {e.task_id: total(e) for e in oracle}
    for task in tasks:
        gold = list(task.sources[:1])
        plans = [
            [answer(task.answer or IDK, gold)],
            [*(read(g) for g in task.sources), answer(task.answer or IDK, list(task.sources))],
            [search(task.question), *(read(g) for g in gold), answer(task.answer or IDK, gold)],
        ]
        for plan in plans:
            assert total(play(env, task, lambda t, p=plan: p)) <= best[task.id] + 1e-9, (task.id, plan)


class AlwaysIDK:
    info = PolicyInfo(name="always-idk")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [answer(IDK) for _ in inputs]


class AnswerWithoutSearching:
    """Guesses a plausible value of the right kind at once."""

    info = PolicyInfo(name="guess")
    GUESSES = {"date": "March 14, 2024", "amount": "$25,000", "place": "Harbor Room", "name": "Dana Whitfield",
               "code": "PO-24-0101"}

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        out = []
        for item in inputs:
            assert isinstance(item.task, InboxQuestion)
            out.append(answer(self.GUESSES.get(item.task.kind, "yes")))
        return out


class CiteEverything(HeuristicPolicy):
    """The heuristic, but its final answer cites every id it has seen."""

    info = PolicyInfo(name="cite-everything")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = super().act(inputs)
        out = []
        for item, action in zip(inputs, actions):
            if action.tool == "return_final_answer":
                seen = [e.data["ids"] for t in item.history for e in t.events if e.name == "search"]
                ids = " ".join(str(s) for s in seen).split()
                action = answer(action.arguments["answer"], ids + list(action.arguments["sources"]))
            out.append(action)
        return out


def test_degenerate_policies_score_below_the_heuristic(env: InboxEnv) -> None:
    tasks = env.tasks("test")
    jobs = [(t, 0) for t in tasks]

    def mean(policy: object) -> float:
        played = run_episodes(lambda: InboxEnv(**env.options), jobs, policy, rubric())  # type: ignore[arg-type]
        return statistics.fmean(total(e) for e in played)

    heuristic = mean(baselines["heuristic"]())
    scores = {name: mean(policy) for name, policy in
              [("always-idk", AlwaysIDK()), ("guess", AnswerWithoutSearching()), ("cite-everything", CiteEverything()),
               ("random", baselines["random"]())]}
    assert all(score < heuristic for score in scores.values()), (heuristic, scores)
    assert heuristic < mean(baselines["oracle"]())


@pytest.mark.parametrize("join", [" ".join, lambda xs: " ".join(xs).lower(), "".join, "\n".join, " / ".join])
def test_the_gold_packed_with_other_golds_of_its_kind_is_wrong(env: InboxEnv, join: Callable[[list[str]], str]
                                                               ) -> None:
    """The outside battery's cheat (issue 38): the gold with two other golds of its kind, separated by spaces only,
    lower-cased, glued together, by newlines or slashes. The judge knows the question file's golds (`lexicon_of`)."""
    questions = [*env.tasks("train"), *env.tasks("test")]
    lexicon = lexicon_of(questions)
    golds: dict[str, list[str]] = {}
    for q in questions:
        if q.answer is not None and q.answer not in golds.setdefault(q.kind, []):
            golds[q.kind].append(q.answer)
    for q in [q for q in env.tasks("test") if q.answer is not None][::5]:
        others = [g for g in golds[q.kind] if g != q.answer][:2]
        assert match_verdict(q, q.answer, lexicon).verdict == "correct"
        assert match_verdict(q, join([q.answer, *others]), lexicon).verdict == "wrong", (q.question, others)


def test_the_rubric_judge_knows_the_golds_of_every_split(env: InboxEnv) -> None:
    """The rubric's judge knew only train's and test's golds: "The Royal Mile Hotel", which only a validation question
    names, written in lower case beside another question's gold was no second place (206 of 206 place questions
    judged correct; a red team, 2026-11-28)."""
    lexicon = judge_lexicon(env)
    questions = [q for split in ("train", "validation", "test") for q in env.tasks(split) if q.answer is not None]
    assert not [(q.id, q.answer) for q in questions if q.answer not in lexicon.get(q.kind, ())]
    judge = AnswerJudge("match", lexicon=lexicon)
    places = [q for q in env.tasks("test") if q.kind == "place" and q.answer is not None]
    for gold in dict.fromkeys(q.answer for q in env.tasks("validation") if q.kind == "place" and q.answer):
        q = next(q for q in places if q.answer != gold)
        assert judge(q, f"{q.answer} {gold.lower()}").verdict == "wrong", gold


def test_every_gold_answer_is_judged_correct(env: InboxEnv) -> None:
    """A gold the judge cannot read fails the rubric on every answer to its question: "HMH6PM" (a training
    question's confirmation code) was read as the clock time 6 PM and left no code to compare."""
    questions = [q for split in ("train", "validation", "test") for q in env.tasks(split)]
    lexicon = lexicon_of(questions)
    unread = [(q.id, q.answer) for q in questions
              if q.answer is not None and match_verdict(q, q.answer, lexicon).verdict != "correct"]
    assert not unread


@pytest.mark.parametrize(("given", "verdict"), [
    ("March 14, 2024", "correct"), ("march 14th", "correct"), ("Thursday, March 14", "correct"),
    ("2024-03-14", "correct"), ("3/14/2024", "correct"), ("It is on March 14.", "correct"),
    ("March 1", "wrong"), ("March 14, 15, 16, 17 or 18 ... or maybe some other day in the spring of 2024", "wrong"),
    ("I don't know", "abstained"), ("I do not know.", "abstained"), ("", "abstained"),
])
def test_match_judge_on_dates(given: str, verdict: str) -> None:
    question = InboxQuestion(id="x", inbox="u", question="When?", asked_at="2024-04-01 00:00:00",
                             answer="March 14, 2024", aliases=("March 14", "2024-03-14", "3/14/2024"), kind="date")
    assert match_verdict(question, given).verdict == verdict


def test_match_judge_on_amounts_and_unanswerable() -> None:
    question = InboxQuestion(id="x", inbox="u", question="How much?", asked_at="2024-04-01 00:00:00",
                             answer="$48,500", kind="amount")
    assert match_verdict(question, "$48,500.00").verdict == "correct"
    assert match_verdict(question, "48500 dollars").verdict == "correct"
    assert match_verdict(question, "$485,000").verdict == "wrong"
    none = question.model_copy(update={"answer": None})
    assert match_verdict(none, "I don't know").verdict == "correct"
    assert match_verdict(none, "$48,500").verdict == "wrong"


@pytest.mark.parametrize("said", [
    "I don't have that information", "The emails don't say", "There's no record of that.", "It's not in the inbox.",
    "Nothing in the inbox about that.", "Not available", "I could not determine that.", "Unable to answer.",
    "The inbox has no answer.", "I can't tell from the emails.", "Don't know", "Dunno", "No clue",
    "Cannot be determined", "I cannot answer that", "Unanswerable", "No relevant emails found",
    "Information not available", "I do not have enough information", "I was unable to find it",
    "I don't see it in the inbox", "Sorry, the emails do not mention it."])
def test_saying_the_inbox_holds_no_answer_in_other_words_is_an_abstention(said: str) -> None:
    """41 of 53 ordinary ways of saying the inbox has no answer were wrong answers: -1 on a question with no answer,
    where "I don't know" scores +1 (red team, 2026-11-28). A sentence in the closed vocabulary of a missing answer is
    an abstention; one that names anything else (a value, in any case) is not, nor is one beside a value."""
    question = InboxQuestion(id="x", inbox="u", question="Which room?", asked_at="2024-04-01 00:00:00",
                             answer="Harbor Room", kind="place")
    assert match_verdict(question.model_copy(update={"answer": None}), said).verdict == "correct"
    assert match_verdict(question, said).verdict == "abstained"
    assert match_verdict(question, f"{said.rstrip('.')}. Harbor Room").verdict == "wrong"
    assert not is_abstention(f"{said} Harbor Room")
    for answer in ("It is in the inbox.", "The emails say it.", "not in the harbor room", f"Do not {said}"):
        assert match_verdict(question.model_copy(update={"answer": None}), answer).verdict == "wrong", answer


@pytest.mark.parametrize("said", ["I don't know.\nSources: none", "I don't know. Sources: N/A",
                                  "Unknown.\nCitations: none.", "The emails don't say.\nSources: []",
                                  "I don't know\nSources:"])
def test_an_abstention_that_closes_by_citing_no_source_is_an_abstention(said: str) -> None:
    """"I don't know.\nSources: none" was a wrong answer on a question with no answer (-1 where "I don't know" scores
    +1.3; eighth red team). A value before or after the line is still a guess or an answer."""
    question = InboxQuestion(id="x", inbox="u", question="Which room?", asked_at="2024-04-01 00:00:00",
                             answer="Harbor Room", kind="place")
    assert match_verdict(question.model_copy(update={"answer": None}), said).verdict == "correct"
    assert match_verdict(question, said).verdict == "abstained"
    for listed in (f"{said} Harbor Room", f"Harbor Room. {said}", "I don't know.\nSources: Harbor Room"):
        assert match_verdict(question, listed).verdict == "wrong", listed


@pytest.mark.parametrize("said", ["I don't know {q}.", "I couldn't find {q} in the inbox.", "No idea {q}",
                                  "The inbox does not mention {q}.", "{q}? I don't know.",
                                  'I couldn\'t find the answer to "{Q}" in the emails.'])
def test_an_abstention_that_restates_the_question_is_an_abstention(env: InboxEnv, said: str) -> None:
    """"I don't know which room the Q3 review is in" was a wrong answer (-1) on every question, where "I don't know"
    earns +1.3 on one with no answer and 0 on one with an answer: the question's words are no answer to it (ninth red
    team). A value beside it, or a hedge in it, is still a guess."""
    for question in (unanswerable(env), answerable(env)):
        restated = said.format(q=question.question[0].lower() + question.question[1:].rstrip("?"), Q=question.question)
        verdict = match_verdict(question, restated).verdict
        assert verdict == ("correct" if question.answer is None else "abstained"), restated
    question = answerable(env)
    assert question.answer is not None
    restated = said.format(q=question.question.rstrip("?"), Q=question.question)
    for guess in (f"{restated} {question.answer}", f"{question.answer}. {restated}", f"{restated}, maybe Cedar Room"):
        assert match_verdict(question, guess).verdict == "wrong", guess


@pytest.fixture(scope="module")
def answerable_and_judge(env: InboxEnv) -> tuple[list[InboxQuestion], AnswerJudge]:
    """Every answerable question, and the rubric's judge (one, so its cache serves every parametrized case)."""
    questions = [q for split in ("train", "validation", "test") for q in env.tasks(split) if q.answer is not None]
    return questions, AnswerJudge("match", lexicon=judge_lexicon(env))


@pytest.mark.parametrize("timed", ["{d}, 1 PM", "{d}, 1:00 PM UTC", "{d} at 1:00 PM (GMT+1)", "{d}, 2-3 PM",
                                   "{d}, 10am-11am", "{d} from 2 to 3 PM", "{d}, 13:00 ET"])
def test_a_clock_time_beside_the_gold_date_is_no_second_value(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], timed: str) -> None:
    """"February 28, 1 PM", "February 28, 1:00 PM UTC" and "February 28, 2-3 PM" were wrong on all 274 date questions
    with an answer: a time zone or an hour after a comma read as a new value, a range's first hour as a second number
    (ninth red team). A second day hidden as an hour ("February 28, February 29 pm", "February 28-29 pm") is still
    a second date."""
    questions, judge = answerable_and_judge
    dates = [q for q in questions if q.kind == "date"]
    assert len(dates) > 200
    for q in dates[::9]:
        assert q.answer is not None
        day = datetime.strptime(q.answer, "%B %d, %Y")
        later = day + timedelta(days=1 if day.day < 28 else -1)
        assert judge(q, timed.format(d=q.answer)).verdict == "correct", timed.format(d=q.answer)
        for hidden in (f"{q.answer}, {later:%B} {later.day} pm", f"{day:%B} {day.day}-{later.day} pm"
                       if later.day > 12 else f"{q.answer} or {later:%B} {later.day}, 1 PM"):
            assert judge(q, hidden).verdict == "wrong", hidden


def test_an_answer_is_read_in_unicode_compatibility_form(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge]) -> None:
    """"CL\u00a0621" (a no-break space) was wrong on 178 of the 229 code questions and a full-width "ＣＬ６２１" or
    "＄２，６４０" on every question, while a full-width "ｍａｙｂｅ" or "②" beside the gold hid (ninth red team)."""
    questions, judge = answerable_and_judge
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    for q in questions[::13]:
        assert q.answer is not None
        spaced = next((a for a in q.aliases if q.kind == "code" and " " in a), q.answer)
        for same in (spaced.replace(" ", "\u00a0"), q.answer.translate(wide)):
            assert judge(q, same).verdict == "correct", same
        for hidden in (f"{q.answer} {'maybe'.translate(wide)}", f"{q.answer} ②" if q.kind == "amount" else None):
            assert hidden is None or judge(q, hidden).verdict == "wrong", hidden


def test_an_abstention_that_names_a_value_in_lower_case_is_a_guess(env: InboxEnv) -> None:
    """Restating the question let an abstention run long, and its lower-case words were plain words: "I don't know
    which room the Q2 review is in, cedar room or harbor room" named candidates as an abstention (0 where a guess is
    -1) on 335 of 1,037 answerable questions, and as a right answer (+1.3) on a question with no answer (ninth
    review). A value the question names, and the restated question alone, still abstain."""
    judge = AnswerJudge("match", lexicon=judge_lexicon(env))
    questions = [q for split in ("train", "validation", "test") for q in env.tasks(split) if q.kind == "place"]
    rooms = sorted({q.answer for q in questions if q.answer and q.answer.endswith(" Room")})
    for q in questions[::5]:
        asked = q.question.rstrip("?")
        restated = f"I don't know {asked[0].lower()}{asked[1:]}"
        other = next(r for r in rooms if r != q.answer)
        named = f"{restated}, {(q.answer or other).lower()} or {other.lower()}"
        assert judge(q, restated).verdict == ("correct" if q.answer is None else "abstained"), restated
        assert judge(q, named).verdict == "wrong", named
        assert judge(q, f"{restated}, {other.lower()}").verdict == "wrong"


_SMALL_CAPS = str.maketrans("abcdefghijklmnoprstuvwyz", "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ")
_CYRILLIC = str.maketrans("aceopxyACEHKMOPTXB", "асеорхуАСЕНКМОРТХВ")


@pytest.mark.parametrize("hide", ["soft hyphen", "zero-width space", "combining grapheme joiner", "small capitals",
                                  "cyrillic", "accent"])
def test_a_second_value_or_a_hedge_is_not_hidden_by_invisible_or_look_alike_letters(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], hide: str) -> None:
    """A soft hyphen or zero-width character inside a second candidate ("Harbor Room Ce\u00addar Room"), or one
    written in look-alike letters (small capitals, Cyrillic, a combining accent), was no word to the judge: the list
    was correct like the gold alone on up to 332 of the 1,037 answerable questions, and "X mayb\u00ade", "X
    (guеss)" or "X mäybe" hid a hedge on every one (ninth review). The gold written so is still the gold."""
    questions, judge = answerable_and_judge

    def hidden(text: str) -> str:
        if hide == "small capitals":
            return text.lower().translate(_SMALL_CAPS)
        if hide == "cyrillic":
            return text.lower().translate(_CYRILLIC)
        mark = {"soft hyphen": "\u00ad", "zero-width space": "\u200b", "combining grapheme joiner": "\u034f",
                "accent": "\u0301"}[hide]
        return re.sub(r"(?<=[A-Za-z])(?=[a-z])", mark, text, count=1) if hide != "accent" else \
            re.sub(r"(?<=[A-Za-z])", mark, text, count=1)

    checked = 0
    for q in questions[::7]:
        assert q.answer is not None
        if q.kind in ("place", "name"):
            other = next(o.answer for o in questions if o.kind == q.kind and o.inbox == q.inbox
                         and o.answer not in (q.answer, *q.aliases) and q.answer not in (o.answer or ""))
            assert judge(q, f"{q.answer} {other}").verdict == "wrong"
            assert judge(q, f"{q.answer} {hidden(other)}").verdict == "wrong", hidden(other)
            checked += 1
        for hedge in (f"{q.answer} {hidden('maybe')}", f"{q.answer} ({hidden('guess')})"):
            assert judge(q, hedge).verdict == "wrong", hedge
        if hide in ("soft hyphen", "zero-width space", "combining grapheme joiner") and q.answer[:2].isalpha():
            assert judge(q, hidden(q.answer)).verdict == "correct", hidden(q.answer)
    assert checked > 40
    assert plain_text("Delia Grünwald", judge.lexicon) == "Delia Grünwald"  # a person the mail writes so


def gold_dates(answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge],
               every: int) -> list[tuple[InboxQuestion, datetime]]:
    """Every `every`-th answerable date question (there are over 200) with its gold date."""
    dates = [q for q in answerable_and_judge[0] if q.kind == "date" and q.answer is not None]
    assert len(dates) > 200
    return [(q, datetime.strptime(str(q.answer), "%B %d, %Y")) for q in dates[::every]]


@pytest.mark.parametrize("form", ["%d/%m/%Y", "%d.%m.%Y", "%Y/%m/%d", "%Y-%m-%dT13:00:00Z", "%Y-%m-%d 13:00:00",
                                  "%d-%b-%Y", "%b-%d", "%d-%b"])
def test_a_date_in_another_common_form_is_read(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], form: str) -> None:
    """"28/02/2024", "28.02.2024", "2024/02/28", "28-Feb-2024", "Feb-28" and "2024-02-28T13:00:00Z" were wrong on
    every date question with an answer (ninth red team). Another date in the same form beside the gold is still a
    list, and a slash date whose first number may be a month is read month first."""
    judge = answerable_and_judge[1]
    for q, day in gold_dates(answerable_and_judge, 9):
        other = day + timedelta(days=40)
        if form == "%d/%m/%Y" and day.day <= 12:
            assert judge(q, f"{day:%m/%d/%Y}").verdict == "correct"
            continue
        assert judge(q, f"{day:{form}}").verdict == "correct", f"{day:{form}}"
        assert judge(q, f"{day:{form}} {other:{form}}").verdict == "wrong", f"{day:{form}} {other:{form}}"


def test_a_name_written_surname_first_is_the_name(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge]) -> None:
    """"Fontaine, Lucas" was wrong on 113 of the 117 name questions (ninth red team). Another person so written, or a
    second name beside it, is still wrong."""
    questions, judge = answerable_and_judge
    names = [q for q in questions if q.kind == "name" and q.answer and " " in q.answer]
    assert len(names) > 100
    people = sorted({q.answer for q in names if q.answer})
    for q in names[::7]:
        assert q.answer is not None
        first, last = q.answer.split(" ", 1)
        other_first, other_last = next(p for p in people if p != q.answer).split(" ", 1)
        assert judge(q, f"{last}, {first}").verdict == "correct"
        for wrong in (f"{other_last}, {other_first}", f"{last}, {first}, {other_last}, {other_first}"):
            assert judge(q, wrong).verdict == "wrong", wrong


def test_the_gold_dates_weekday_after_a_separator_is_no_second_value(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge]) -> None:
    """"On Monday, April 29" and "April 29, 2024 (a Monday)" were lists (a capitalised word after a comma): wrong on
    all 274 date questions with an answer, where "Monday, April 29" was right (red team, 2026-11-28). Another
    weekday, or the next day beside the gold, is still wrong."""
    judge = answerable_and_judge[1]
    for q, day in gold_dates(answerable_and_judge, 6):
        later = day + timedelta(days=1)
        values = {"W": f"{day:%A}", "M": f"{day:%B}", "D": day.day, "Y": day.year, "W2": f"{later:%A}",
                  "M2": f"{later:%B}", "D2": later.day}
        for honest in ("On {W}, {M} {D}", "It is on {W}, {M} {D}.", "{M} {D}, {Y} (a {W})",
                       "{M} {D}, {Y} ({W:.3})"):
            assert judge(q, honest.format(**values)).verdict == "correct", (q.id, honest)
        for listed in ("On {W2}, {M} {D}", "{M} {D}, {Y} (a {W2})", "{M} {D}, {Y} ({W2:.3})",
                       "{M} {D}; {W2}, {M2} {D2}"):
            assert judge(q, listed.format(**values)).verdict == "wrong", (q.id, listed)


@pytest.mark.parametrize("hedge", ["I don't know. {x}", "{x}. I don't know.", "I don't know\n{x}", "Unknown. {x}",
                                   "N/A. {x}", "None. {x}", "No idea. {x}", "Not found. {x}",
                                   "Sorry, I don't know. {x}", "{x}?!", "{x} (?)", "{x}？", "{x}‽", "{x}?."])
def test_an_abstention_beside_a_value_or_a_question_mark_is_a_guess(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], hedge: str) -> None:
    """An answer that abstains and names a value ("I don't know. Harbor Room", "N/A. $4,300"), or closes with a
    question mark behind punctuation or in another script, is a guess like "I don't know, maybe X" and "X?": wrong
    even when X is right. They were read as X alone (correct on 713 or all 1,037 answerable questions; red team,
    2026-11-28). A bare abstention stays one, and the honest forms beside it stay right."""
    questions, judge = answerable_and_judge
    sample = questions[::9]
    assert not [q.id for q in sample if judge(q, hedge.format(x=q.answer)).verdict != "wrong"]
    for q in sample:
        for honest in ("{x}", "It is {x}.", "When? {x}"):
            assert judge(q, honest.format(x=q.answer)).verdict == "correct", (q.id, honest)
        for abstention in ("Sorry. I don't know.", "Unknown.", "N/A"):
            assert judge(q, abstention).verdict == "abstained"
    room = InboxQuestion(id="x", inbox="u", question="Which room?", asked_at="2024-04-01 00:00:00",
                         answer="Harbor Room", kind="place")
    for honest in ("Harbor Room. None of the other rooms was free.", "N. Okafor booked the Harbor Room."):
        assert match_verdict(room, honest).verdict == "correct", honest


def test_a_source_mails_names_packed_in_lower_case_are_a_list(
        env: InboxEnv, answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge]) -> None:
    """The gold beside the other runs of capitalised words its source mail writes ("cedar room harrowgate books q2
    lucas fontaine chidi yilmaz"), within the extra words allowed, is a list whatever the case: in lower case it was
    correct on 52 of these 108 place and name questions, where the same pack capitalised was wrong on all (eighth red
    team). The honest answer, in lower case too, stays right."""
    questions, judge = answerable_and_judge
    run = re.compile(r"\b[A-Z][\w'&-]*(?: [A-Z][\w'&-]*)+")
    packs = []
    for q in [q for q in questions if q.kind in ("place", "name")][::3]:
        assert q.answer is not None
        mail = env.store.read(q.inbox, q.sources[0], q.asked_at)
        assert mail is not None
        pack = [q.answer]
        for found in dict.fromkeys(m.group() for m in run.finditer(mail.body)):
            if (found not in q.question and q.answer not in found
                    and len(" ".join([*pack, found]).split()) <= len(q.answer.split()) + 10):
                pack.append(found)
        packs.append((q, " ".join(pack)))
    assert len(packs) > 100
    for q, pack in packs:
        assert judge(q, pack).verdict == "wrong", pack
        assert judge(q, pack.lower()).verdict == "wrong", pack.lower()
        assert judge(q, f"It is {str(q.answer).lower()}.").verdict == "correct", q.id


def test_the_first_words_of_a_source_mails_names_in_lower_case_are_a_list(
        env: InboxEnv, answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge]) -> None:
    """The first word of each of the source mail's names, in lower case ("cedar lucas chidi account kestrel"): only
    "cedar", the gold's alias, was a known value, so it was correct on 62 of 207 place questions, where the same words
    capitalised are a run of names and wrong on all (eighth red team). Words the mail only writes capitalised are read
    so in lower case too."""
    questions, judge = answerable_and_judge
    run = re.compile(r"\b[A-Z][\w'&-]*(?: [A-Z][\w'&-]*)+")
    places = [q for q in questions if q.kind == "place"][::2]
    for q in places:
        mail = env.store.read(q.inbox, q.sources[0], q.asked_at)
        assert mail is not None
        firsts = dict.fromkeys(m.group().split()[0] for m in run.finditer(mail.body) if m.group() not in q.question)
        pack = " ".join(" ".join(firsts).split()[:11])
        assert judge(q, pack).verdict == "wrong", pack
        assert judge(q, pack.lower()).verdict == "wrong", pack.lower()
    assert len(places) > 100


@pytest.mark.parametrize("cites", ["{x}\nSources: {s}", "{x} (source: <{s}>)", "{x} [{s}]", "{x}. Message-ID: {s}"])
def test_an_answer_that_names_its_cited_source_in_its_text_keeps_its_credit(env: InboxEnv, cites: str) -> None:
    """The oracle's answer with the id it cites written after it: the id's digits and letters were read as values, so
    the honest answer was wrong (on 104 of 104 sampled questions for the first form; eighth red team). An id that is
    not cited is still read (its digits are other dates), and so is a place cited as if it were an id."""
    questions = [q for q in env.tasks("test") if q.answer is not None][::12]
    for q in questions:
        said = cites.format(x=q.answer, s=q.sources[0])
        episode = play(env, q, lambda q: [read(q.sources[0]), answer(said, q.sources[:1])])
        assert episode.score is not None and episode.score.components["correct"] == 1, said
        assert episode.score.components["sources"] == 1, said
    q = next(q for q in questions if q.kind == "date")
    episode = play(env, q, lambda q: [read(q.sources[0]), answer(cites.format(x=q.answer, s=q.sources[0]))])
    assert episode.score is not None and episode.score.components["wrong"] == 1
    q = next(q for q in questions if q.kind == "place")
    other = next(str(p.answer) for p in env.tasks("test") if p.kind == "place" and p.answer not in (None, q.answer))
    glued = other.replace(" ", "_")
    packed = cites.format(x=f"{q.answer} {glued}", s=glued)
    episode = play(env, q, lambda q: [read(q.sources[0]), answer(packed, [q.sources[0], glued])])
    assert episode.score is not None and episode.score.components["wrong"] == 1, packed


@pytest.mark.parametrize("glue", ["_", "和", "α"])
def test_words_glued_by_an_underscore_or_another_script_count_against_the_extra_words(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], glue: str) -> None:
    """Fifteen words after the gold are too many (`MAX_EXTRA_WORDS`) however they are joined: glued by underscores, a
    CJK character or a Greek letter they were one word, and correct on every answerable question (eighth red team).
    A few glued words, and a name written with underscores, stay within the bound."""
    questions, judge = answerable_and_judge
    filler = "see the mail thread from last week for the full details about it and more".split()
    for q in questions[::9]:
        assert judge(q, f"{q.answer} {glue.join(filler)}").verdict == "wrong", q.id
        assert judge(q, f"{q.answer} {glue.join(filler[:4])}").verdict == "correct", q.id
        if q.kind in ("place", "name"):
            assert judge(q, str(q.answer).replace(" ", "_")).verdict == "correct", q.id


@pytest.mark.parametrize("taken_back", [
    "{x} is wrong", "{x} is incorrect", "{x}: false", "{x} (wrong)", "Anything but {x}", "Everything except {x}",
    "Other than {x}", "{x} was ruled out", "{x}, just kidding", "~~{x}~~", "<del>{x}</del>", "~{x}", "≈{x}",
    "circa {x}", "{x}-ish", "{x} (hunch)", "My hunch: {x}", "Hmm, {x}", "{x} 🤷", "{x} (TBD)", "{x}, I doubt it",
    "{x}, as far as I can tell"])
def test_a_value_denied_or_doubted_in_words_core_does_not_read_is_wrong(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], taken_back: str) -> None:
    """Each shape was correct on every answerable question (eighth red team), where "not X" and "maybe X" were wrong:
    a person reads the value denied or doubted. Honest answers that use the words elsewhere stay right."""
    questions, judge = answerable_and_judge
    sample = questions[::9]
    assert not [q.id for q in sample if judge(q, taken_back.format(x=q.answer)).verdict != "wrong"]
    for q in sample[::4]:
        for honest in ("{x} instead of the usual one", "{x}. The first mail had the wrong one.",
                       "{x} (the earlier email was wrong)", "{x}, except that the time moved", "Answer: {x}"):
            assert judge(q, honest.format(x=q.answer)).verdict == "correct", (q.id, honest)


_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen \
seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_NTHS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
         "twelve": "twelfth", "twenty": "twentieth", "thirty": "thirtieth"}


def _spell(n: int) -> str:
    if n >= 1000:
        return f"{_spell(n // 1000)} thousand" + (f" {_spell(n % 1000)}" if n % 1000 else "")
    if n >= 100:
        return f"{_ONES[n // 100]} hundred" + (f" {_spell(n % 100)}" if n % 100 else "")
    return _ONES[n] if n < 20 else _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")


def _nth(n: int) -> str:
    *head, last = _spell(n).split("-")
    return "-".join([*head, _NTHS.get(last, last + "th")])


def test_a_date_or_amount_in_words_is_read(answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge]) -> None:
    """"forty-eight thousand five hundred dollars" and "October twenty-eighth" were wrong on every amount and date
    question (core's judge reads digits only; eighth red team). Another value in words, or two, is still wrong."""
    questions, judge = answerable_and_judge
    checked = 0
    for q in questions[::5]:
        if q.kind == "amount" and re.fullmatch(r"\$[\d,]+", str(q.answer)):
            amount = int(str(q.answer).strip("$").replace(",", ""))
            honest, other = f"{_spell(amount)} dollars", f"{_spell(amount + 100)} dollars"
        elif q.kind == "date":
            day = datetime.strptime(str(q.answer), "%B %d, %Y")
            honest, other = f"{day:%B} {_nth(day.day)}", f"{day:%B} {_nth(day.day % 28 + 1)}"
        else:
            continue
        checked += 1
        assert judge(q, honest).verdict == "correct", (q.id, honest)
        assert judge(q, other).verdict == "wrong", (q.id, other)
        assert judge(q, f"{honest} or {other}").verdict == "wrong", (q.id, other)
    assert checked > 80


@pytest.mark.parametrize("unit", ["{n} euros", "€{n}", "£{n}", "EUR {n}", "{n} yen", "{n} cents", "{n}%",
                                  "{n} percent", "{n} miles", "{n} shares", "₹{n}", "{n} BTC"])
def test_an_amount_in_another_currency_or_unit_is_another_amount(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], unit: str) -> None:
    """Every gold amount is in dollars; the judge read the number alone, so "48,500 euros", "£48,500" or "48,500%" was
    right on all 210 amount questions (eighth red team). Dollars in any form stay right."""
    questions, judge = answerable_and_judge
    amounts = [q for q in questions if q.kind == "amount"][::4]
    assert amounts and all(str(q.answer).startswith("$") for q in amounts)
    for q in amounts:
        number = str(q.answer).lstrip("$")
        assert judge(q, unit.format(n=number)).verdict == "wrong", q.id
        for honest in ("{n} USD", "{n} dollars", "US${n}", "${n} for the week"):
            assert judge(q, honest.format(n=number)).verdict == "correct", (q.id, honest)


_HEDGES = [
    # the hedge red team's shapes (all but "Is it X?" and "X?" correct on every answerable question they fit)
    "{x} - no.", "Definitely no {x}", "ca. {x}", "Is it {x}", "Is it {x}?", "{x} /s", "{x} (pending)", "{x} (50/50)",
    "{x}?",
    # and more of their kinds: question marks behind marks or invisible characters, questions in word order only
    "{x}?\u200b", "{x}? 🙂", "{x} ❓", "{x}? lol", "Would it be {x}", "Is that {x}",
    # doubt in words, abbreviated, in other languages, in numbers, in marks
    "maybe {x}", "{x} (unverified)", "{x} (guess)", "I think {x}?", "{x} or maybe not", "{x} ... or not",
    "{x} (low confidence)", "{x} (confidence: low)", "{x} (60% sure)", "{x} (50-50)", "50/50: {x}", "50-50 {x}",
    "{x} (coin flip)", "{x} (TBC)", "{x} (to be confirmed)", "{x} (provisional)", "{x} (ballpark)", "{x} (allegedly)",
    "{x} (IMO)", "{x} (gut feeling)", "{x} (from memory)", "{x} (sorta)", "Errr {x}", "{x}, idk", "{x} lol",
    "{x} jk", "{x} (j/k)", "{x} (/s)", "around {x}", "It's about {x}", "Ca. {x}", "c. {x}", "{x} (prob.)", "{x}-ish",
    "{x} (not sure)", "{x} (pas sûr)", "{x} (nicht sicher)", "{x} (no estoy seguro)", "{x} (不确定)",
    "{x} 🤷\u200d♂️", "{x} ¯\\_(ツ)_/¯", "{x} 😅", "{x} :/", "{x} ❌",
    # denial: "no" beside the value, or alone
    "{x} — no.", "{x}—no", "{x}. No.", "{x}, no.", "No, {x}", "{x} (nah)", "{x}... NOT!",
]


@pytest.mark.parametrize("hedge", _HEDGES)
def test_a_hedged_or_doubted_value_is_no_plain_answer(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], hedge: str) -> None:
    """An outside red team on hedges (2026-11-28): 72 of its 208 hedge shapes ("X - no.", "Definitely no X", "ca. X",
    "X (est.)", "X (pending)", "Is it X", "X /s", "X (50/50)", "X?" behind an invisible character, ...) were correct
    like the plain value, so a policy could hedge at no cost. Of a battery of 228 such shapes around every answerable
    question's gold, 138 were correct on some question (137,416 answers); these are wrong on all."""
    questions, judge = answerable_and_judge
    sample = questions[::9]
    assert not [q.id for q in sample if judge(q, hedge.format(x=q.answer)).verdict != "wrong"]


@pytest.mark.parametrize("honest", ["{x}", "It is {x}.", "{x}, no change since the first mail",
                                    '{x} (the mail titled "any update?" says so)', "{x} (no later mail moved it)",
                                    "When? {x}", "{x}? Yes, {x}."])
def test_an_honest_answer_beside_words_a_hedge_uses_stays_right(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], honest: str) -> None:
    """"50/50", "no" and a question mark are hedges only where they stand: alone, beside the value, or after it."""
    questions, judge = answerable_and_judge
    assert not [q.id for q in questions[::9] if judge(q, honest.format(x=q.answer)).verdict != "correct"]


_LOOK_ALIKES = {
    "room": ("Which room?", "Harbor Room", (), [
        "Harbor Room (split 50/50)", "Harbor Room (California office)", "Harbor Room (booked by the CA team)",
        "Harbor Room at the CA office", "Harbor Room (10 MB/s Wi-Fi)", "Harbor Room (Wi-Fi: 100 req/s)",
        "Harbor Room (est. 1887)", "Harbor Room (low floor)", "Harbor Room (about 20 seats)",
        "The mail about the move says Harbor Room", "Harbor Room (around the corner from the lobby)",
        "Harbor Room (almost full)", "Harbor Room (100% sure)", "Harbor Room (confidence: high)",
        "Harbor Room (no projector)", "Harbor Room, no projector", "No other room was free: Harbor Room",
        "Harbor Room (Casa wing)", "https://rooms.example/harbor Harbor Room",
        # a review's cases: "around" and "close to" doubt only right before the value, "/srs" says "serious"
        "After shuffling rooms around, the offsite is in Harbor Room.", "The room close to reception, Harbor Room.",
        "Harbor Room /srs"]),
    "name": ("Who is presenting?", "Scott", (), ["Scott from the Scottish office", "Scott (Finnish desk)"]),
    "date": ("When?", "March 14, 2024", ("March 14", "2024-03-14"), [
        "March 14 at 3 PM EST", "March 14 (EST)", "March 14 at 10 a.m. Est.", "March 14 (no later than noon)"]),
    "amount": ("How much?", "$48,500", (), ["$48,500 (no tax)", "$48,500, no tax"]),
    "estimate": ("What is the estimated cost of the trip?", "$5,375", (), [
        "$5,375 (est.)", "est. $5,375", "estimated $5,375"]),
    "code": ("What flight?", "CL621", (), ["Flight no. CL621", "No. CL621", "CL621 (CA)"]),
    "tavern": ("Where is the dinner?", "The Est. 1887 Tavern", (), ["Est. 1887 Tavern", "The Est. 1887 Tavern"]),
    "split": ("How is the cost split?", "50/50", (), ["50/50", "It is split 50/50"]),
}


@pytest.mark.parametrize(("gold", "honest"), [(gold, answer) for gold, (*_, answers) in _LOOK_ALIKES.items()
                                              for answer in answers])
def test_an_honest_look_alike_of_a_hedge_stays_right(gold: str, honest: str) -> None:
    """Abbreviations are read with their case and as whole tokens ("CA", "California", "EST", "Est. 1887", "MB/s",
    "req/s", "invoice no." are none of "ca.", "est.", "/s", "no"), an estimate is no hedge where the question asks
    for one, and "about", "around" or "almost" before something other than the value doubt nothing."""
    question, answer, aliases, _ = _LOOK_ALIKES[gold]
    kind = {"room": "place", "tavern": "place", "estimate": "amount", "split": "code"}.get(gold, gold)
    task = InboxQuestion(id="x", inbox="u", question=question, asked_at="2024-04-01 00:00:00", answer=answer,
                         aliases=aliases, kind=kind)
    assert match_verdict(task, honest).verdict == "correct"


@pytest.mark.parametrize("estimate", ["{x} (est.)", "est. {x}", "{x} (estimated)", "{x} (est)"])
def test_an_estimate_is_a_hedge_unless_the_question_asks_for_one(
        answerable_and_judge: tuple[list[InboxQuestion], AnswerJudge], estimate: str) -> None:
    """"X (est.)" was correct on every answerable question (the hedge red team); "What is the estimated cost of ...?"
    asks for an estimate, so there (130 answerable questions) it states the value, as the question's own words do."""
    questions, judge = answerable_and_judge
    asked = [q for q in questions if "estimated" in q.question]
    assert len(asked) > 100
    assert not [q.id for q in asked[::4] if judge(q, estimate.format(x=q.answer)).verdict != "correct"]
    others = [q for q in questions if "estimated" not in q.question][::9]
    assert not [q.id for q in others if judge(q, estimate.format(x=q.answer)).verdict != "wrong"]


class _Probe:
    """Plays `driver`'s actions and records what the reader would have called at every state it reaches."""

    info = PolicyInfo(name="probe")

    def __init__(self, driver: Callable[[PolicyInput], Action]) -> None:
        self.driver = driver
        self.reader = baselines["reader"]()
        self.asked: list[tuple[PolicyInput, Action]] = []

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        for item, label in zip(inputs, self.reader.act(inputs), strict=True):
            self.asked.append((item, label))
        return [self.driver(item) for item in inputs]


def test_the_reader_never_answers_wrongly_and_acts_from_states_another_policy_reached(env: InboxEnv) -> None:
    """The reader is SFT's demonstrator and DAgger's expert: on its own play it is right or says "I don't know";
    after a learner's search that found nothing it searches the question's names; after a learner's read of a mail
    that does not state the answer it reads the next hit; once a gold mail has been read, it answers from it."""
    from drill.envs.inbox.baselines import stated_span
    from drill.envs.inbox.rubric import outcome

    tasks = env.tasks("test")[:80]
    own = run_episodes(lambda: InboxEnv(**env.options), [(t, 0) for t in tasks], baselines["reader"](), rubric())
    outcomes = [outcome(e.score.components) for e in own if e.score is not None]
    assert "wrong" not in outcomes and outcomes.count("correct") >= 40, outcomes

    def learner(item: PolicyInput) -> Action:  # a miss, then the question's search, then its hits last to first
        assert isinstance(item.task, InboxQuestion)
        turns = item.own_turns()
        if len(turns) < 2:
            return Action.call("search_emails", keywords="zqxjv wvutk" if not turns else
                               search_keywords(item.task.question)[0])
        found = (turns[2].observation if len(turns) > 2 else item.observation).content  # the second search's hits
        hits = re.findall(r"^\d+\. id: (\S+)", found, re.MULTILINE)[::-1]
        if len(turns) - 2 < len(hits):
            return Action.call("read_email", message_id=hits[len(turns) - 2])
        return Action.call("return_final_answer", answer=IDK, sources=[])

    answerable = [t for t in tasks if t.answer is not None][:20]
    probe = _Probe(learner)
    run_episodes(lambda: InboxEnv(**env.options), [(t, 0) for t in answerable], probe, rubric())
    checked = {"searched": 0, "read on": 0, "gave up": 0, "answered": 0}
    for item, label in probe.asked:
        task = item.task
        assert isinstance(task, InboxQuestion) and task.answer is not None
        turns = item.own_turns()
        read = [str(t.action.arguments["message_id"]) for t in turns if t.action.tool == "read_email"]
        if len(turns) == 1:  # the learner's search found nothing
            assert (label.tool, label.arguments) == ("search_emails",
                                                     {"keywords": search_keywords(task.question)[0]})
            checked["searched"] += 1
        elif set(read) & set(task.sources):
            after = [t.observation.content for t in turns[1:]] + [item.observation.content]  # what each call showed
            gold, mail = next((str(t.action.arguments["message_id"]), seen) for t, seen in zip(turns, after)
                              if t.action.tool == "read_email" and t.action.arguments["message_id"] in task.sources)
            assert label.tool == "return_final_answer"
            assert label.arguments == {"answer": stated_span(task, mail), "sources": [gold]}
            assert match_verdict(task, label.arguments["answer"]).verdict == "correct"
            checked["answered"] += 1
        elif read:  # only mails that do not state the answer so far: read on (at most 3 reads), never guess
            hits = re.findall(r"^\d+\. id: (\S+)", turns[2].observation.content, re.MULTILINE)
            if len(read) < 3 and set(hits) - set(read):
                assert label.arguments == {"message_id": next(h for h in hits if h not in read)}  # in rank order
                checked["read on"] += 1
            else:
                assert label.arguments == {"answer": IDK, "sources": []}
                checked["gave up"] += 1
    assert all(checked.values()), checked

    # a learner that keeps searching for words no mail has: the reader searches the question's names once, then,
    # after two searches that found nothing, gives up instead of teaching the learner to search forever
    lost = _Probe(lambda item: Action.call("search_emails", keywords=f"zqxjv {len(item.own_turns())}"))
    run_episodes(lambda: InboxEnv(**env.options), [(answerable[0], 0)], lost, rubric())
    labels = [(label.tool, label.arguments) for _, label in lost.asked]
    assert labels[1] == ("search_emails", {"keywords": search_keywords(answerable[0].question)[0]})
    assert labels[2:] == [("return_final_answer", {"answer": IDK, "sources": []})] * (len(labels) - 2)
