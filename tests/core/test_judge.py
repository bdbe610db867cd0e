"""The one answer judge (`drill.core.judge`): one claim of the asked kind, compared as a value.

The cheats come first: every candidate of the asked kind packed into one answer, whatever separates them (issue
38: an outside battery packed them with spaces only and was judged correct); then the honest phrasings that must
stay correct."""

from __future__ import annotations

import pytest

from drill.core.judge import claims, hedged, judge

ROOMS = ("Harbor Room", "Granite Room", "Summit Room", "Lighthouse Room", "Cedar Room")
ROOM_Q = "Which room is the Q1 quarterly business review with Harrowgate Books in?"
DATE = ("August 19, 2024", "August 19", "19 August", "2024-08-19", "8/19/2024", "8/19", "Aug 19")
DATE_Q = "When is the Q3 QBR with Bluewater Shipping?"
NAME_Q = "Who will Hector Pham report to?"
PEOPLE = ("Sofia Kowalski", "Dana Whitfield", "Hector Pham")
SEPARATORS = (" ", "", "\n", ", ", " or ", " / ", "; ", " and ", "_")


@pytest.mark.parametrize("sep", SEPARATORS)
def test_every_room_packed_is_wrong_whatever_separates_them(sep: str) -> None:
    for rooms in (ROOMS, [r.lower() for r in ROOMS], [r.split()[0] for r in ROOMS]):
        answer = sep.join(rooms)
        assert not judge(answer, ["Harbor Room", "Harbor"], "place", ROOM_Q, ROOMS).correct, answer


@pytest.mark.parametrize("sep", SEPARATORS)
def test_every_date_name_amount_and_code_packed_is_wrong(sep: str) -> None:
    assert not judge(sep.join(["August 19", "August 26", "September 2"]), DATE, "date", DATE_Q).correct
    assert not judge(sep.join(["Sofia Kowalski", "Dana Whitfield"]), ["Sofia Kowalski"], "name", NAME_Q,
                     PEOPLE).correct
    assert not judge(sep.join(["$1,740", "$2,100"]), ["$1,740"], "amount").correct
    assert not judge(sep.join(["PJ2780", "PJ2781"]), ["PJ2780", "PJ 2780"], "code").correct


def test_an_underscore_separates_words_so_it_hides_no_second_name() -> None:
    """"Zephyr_Quill" read as one word was no capitalised run, so a name the lexicon does not hold, glued with `_`,
    rode along with the gold (an outside red team, 2026-11-27; fixed 2026-11-28)."""
    assert not judge("Zephyr_Quill Harbor Room", ["Harbor Room"], "place", ROOM_Q, ROOMS).correct
    assert not judge("Zephyr Quill Harbor Room", ["Harbor Room"], "place", ROOM_Q, ROOMS).correct
    assert judge("Harbor_Room", ["Harbor Room"], "place", ROOM_Q, ROOMS).correct


@pytest.mark.parametrize("answer", ["I think Harbor Room", "Could be Harbor Room", "Harbor Room?",
                                    "I believe it is Harbor Room", "Harbor Room (unconfirmed)",
                                    "Presumably Harbor Room", "Harbor Room (unverified)", "Tentatively Harbor Room",
                                    "Harbor Room (low confidence)", "Roughly the Harbor Room",
                                    "If I recall, Harbor Room", "Supposedly the Harbor Room"])
def test_a_single_value_hedged_is_a_guess(answer: str) -> None:
    """"Probably X" was a guess and "I think X", "Could be X" or "X?" were X (an outside red team, 2026-11-28: 324 of
    324 questions): each is a guess now, as the README says a hedge is."""
    assert hedged(answer, "Harbor Room", ROOM_Q)
    assert not hedged("Harbor Room", "Harbor Room", ROOM_Q) and not hedged("It is in the Harbor Room.", "Harbor Room")


def test_days_after_the_date_and_unnamed_capitalised_names_are_candidates_too() -> None:
    assert not judge("August 19 20 21", DATE, "date", DATE_Q).correct
    assert not judge("Tuesday", DATE, "date", DATE_Q).correct  # August 19, 2024 was a Monday


@pytest.mark.parametrize(("answer", "reason"), [
    ("Monday", "states only the weekday of the date"), ("It is on a Monday.", "states only the weekday of the date"),
    ("2024", "states only the year of the date"), ("Monday 2024", "states only the weekday of the date"),
])
def test_a_weekday_or_a_year_alone_agrees_with_the_date_without_stating_it(answer: str, reason: str) -> None:
    # one day in seven falls on the gold's weekday: an agent that names the weekday it read in a mail ("see you
    # Monday") has not found the date
    assert judge(answer, DATE, "date", DATE_Q).reason == reason
    assert not judge("Sofia Kowalski Umar Ortega", ["Sofia Kowalski"], "name", NAME_Q).correct  # no lexicon


@pytest.mark.parametrize(("answer", "right"), [
    ("$1,740", True), ("It cost $1,740.", True), ("1740 dollars", True), ("USD 1,740.00", True), ("1.74k", True),
    ("17400", False), ("$174", False), ("1,740,000", False),
])
def test_amounts_are_compared_as_values_never_as_substrings(answer: str, right: bool) -> None:
    assert judge(answer, ["$1,740"], "amount", "What did the trip cost?").correct is right


@pytest.mark.parametrize(("answer", "right"), [
    ("PJ2780", True), ("PJ 2780", True), ("pj2780", True), ("Flight PJ2780 on March 3.", True), ("PJ27800", False),
    ("PJ2780PJ2781", False), ("2780", False),
])
def test_ids_are_exact(answer: str, right: bool) -> None:
    assert judge(answer, ["PJ2780", "PJ 2780"], "code", "What flight is Marco taking?").correct is right


def test_a_code_ending_in_a_clock_time_is_a_code() -> None:
    assert judge("HMH6PM", ["HMH6PM"], "code").correct  # not "HMH" and 6 PM
    assert not judge("HMH7PM", ["HMH6PM"], "code").correct
    assert judge("The meeting is at 6 PM.", ["6:00 PM"], "time").correct


@pytest.mark.parametrize("answer", [
    "Harbor Room", "The meeting is in the Harbor Room.", "It's in Harbor.", "Harbor Room, with Harrowgate Books.",
])
def test_honest_room_answers_stay_correct(answer: str) -> None:
    assert judge(answer, ["Harbor Room", "Harbor"], "place", ROOM_Q, ROOMS).correct, answer


@pytest.mark.parametrize("answer", [
    "August 19, 2024", "Monday, August 19", "It is on Monday, August 19 at 9:30 AM.", "2024-08-19", "8/19",
    "19 August", "Monday the 19th",
])
def test_honest_date_answers_stay_correct(answer: str) -> None:
    assert judge(answer, DATE, "date", DATE_Q).correct, answer


def test_part_of_a_name_is_not_the_name_and_a_run_holding_the_asked_person_is_a_claim() -> None:
    gold = ["Lakehouse at Winnipesaukee"]
    assert not judge("Lakehouse", gold, "place", "Where is the offsite?", ROOMS).correct
    assert not judge("Lakehouse Lakehouse", gold, "place", "Where is the offsite?", ROOMS).correct  # audit found
    assert not judge("Sofia Kowalski Welcome Hector Pham Umar Ortega", ["Sofia Kowalski"], "name", NAME_Q).correct


def test_the_person_the_question_names_is_not_a_second_candidate() -> None:
    assert judge("Hector Pham will report to Sofia Kowalski.", ["Sofia Kowalski"], "name", NAME_Q, PEOPLE).correct
    assert not judge("Hector Pham", ["Sofia Kowalski"], "name", NAME_Q, PEOPLE).correct


def test_an_answer_without_a_claim_is_wrong_and_a_gold_without_one_raises() -> None:
    assert judge("somewhere upstairs", ["Harbor Room"], "place", ROOM_Q, ROOMS).reason == "states no place"
    with pytest.raises(ValueError, match="states no amount"):
        judge("$5", ["five dollars"], "amount")


def test_claims_read_values_not_text() -> None:
    assert [c.value for c in claims("$1,740 and 1740 dollars", "amount")] == [("number", 1740.0)] * 2
    assert [c.value for c in claims("2024-08-19", "date")] == [("date", 8, 19, 2024, None)]
    assert [c.value for c in claims("Monday, August 19", "date")] == [("date", 8, 19, None, 0)]
    assert hedged("Harbor Room, or maybe Granite Room") and not hedged("Harbor Room")
    assert not hedged("Either room", "either")  # a word the question uses is no hedge


@pytest.mark.parametrize("answer", ["2024", "July 2024", "in 2024"])
def test_the_year_alone_does_not_state_a_date(answer: str) -> None:
    # an RFT adapter answered "July 2024" for "April 10, 2024" and was judged right (experiments/LOG.md, seventh try)
    verdict = judge(answer, ["April 10, 2024"], "date", "What date does Esther Brandt fly to Lisbon?")
    assert not verdict.correct and verdict.reason == "states only the year of the date"
    assert judge("April 10, 2024 (booked in 2024)", ["April 10, 2024"], "date").correct


@pytest.mark.parametrize("answer", [
    "not August 19, 2024", "It isn't August 19", "It wasnt August 19", "I dont know, August 19?",
    "It is not Monday, August 19", "cant say: August 19", "Aug 19 - I am not certain", "Dont know, August 19?",
    "It aint August 19", "It isn‘t August 19", "It isnʼt August 19", "It isn`t August 19", "It isn´t August 19",
])
def test_a_denied_date_is_not_the_date_with_or_without_the_apostrophe(answer: str) -> None:
    assert not judge(answer, DATE, "date", DATE_Q).correct, answer


def test_a_word_that_holds_a_bare_contraction_is_no_negation() -> None:
    for answer in ("Monday, August 19 in the Cantor Hall", "August 19, Dontae says", "August 19 (Cantwell's mail)",
                   "August 19, per Brian Cant", "August 19 (ticket CANT)", "August 19. Wont Hall has it."):
        assert judge(answer, DATE, "date", DATE_Q).correct, answer
