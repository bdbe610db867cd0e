"""The quoting teacher (`drill.envs.inbox.teachers`, `experiments/inbox_extractive_sft.py --quote`): the reader's
calls, each after a ReAct thought; before an answer the thought quotes the line of the mail that states it, so ReAct
SFT teaches the model to quote, then copy."""

from __future__ import annotations

import pytest

from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.types import Episode
from drill.envs import inbox
from drill.envs.inbox.questions import is_abstention
from drill.envs.inbox.teachers import KINDS, QuotingReader, quote
from drill.evaluate.commands import pick_tasks
from drill.models.parsing import parse_action

MAIL = """Message-ID: 00322.52e0782122aa@mail.kestrel.example
Subject: Re: Trip to London

Approved. Please send me a short trip report.

> Requesting approval for a London trip, Monday the 30th to Oct 1, to audit the London carrier partners.
>
> Flight: Bluebird Air BB1599
> Estimate: USD 2,040

Tool calls left: 8"""


def play(teacher: Policy) -> list[Episode]:
    """The teacher on a seeded random 120 training questions (`drill eval --split train --limit 120
    --shuffle-seed 0`)."""
    tasks = pick_tasks(inbox.load().tasks("train"), 120, 0)
    return run_episodes(inbox.load, [(t, 0) for t in tasks], teacher, inbox.rubric(), 10)


def test_quote_cuts_the_line_that_states_the_answer_or_most_of_its_words() -> None:
    assert quote(MAIL, ["BB1599"]) == "Flight: Bluebird Air BB1599"
    assert quote(MAIL, ["$2,040", "2,040"]) == "Estimate: USD 2,040"  # the first form the mail writes
    assert quote(MAIL, ["September 30, 2024", "Sep 30"], width=20) == \
        "...London trip, Monday the 30th to Oct 1, to audit the..."  # "30" in "30th", cut at spaces
    with pytest.raises(ValueError, match="states any of"):
        quote(MAIL, ["Hotel Miradouro"])


def test_the_quoting_teacher_calls_as_the_reader_and_quotes_the_mail_it_answers_from() -> None:
    quoted = play(QuotingReader())
    plain = play(inbox.baselines["reader"]())
    tasks = {t.id: t for t in inbox.load().tasks("train")}
    answers = verbatim = 0
    for episode, reader in zip(quoted, plain, strict=True):
        assert [(t.action.tool, t.action.arguments) for t in episode.turns] == \
            [(t.action.tool, t.action.arguments) for t in reader.turns]
        for turn in episode.turns:  # every reply is a thought line, then the call that parses back
            thought, _ = turn.action.raw.split("\n", 1)
            assert thought.startswith("Thought: ")
            assert (parse_action(turn.action.raw).tool, parse_action(turn.action.raw).arguments) == \
                (turn.action.tool, turn.action.arguments)
        last = episode.turns[-1].action
        if last.tool != "return_final_answer" or is_abstention(last.arguments["answer"]):
            continue
        answers += 1
        task_kind = KINDS[tasks[episode.task_id].kind]
        thought = last.raw.split("\n", 1)[0]
        assert thought.startswith(f"Thought: The question asks for {task_kind}. The mail says: \"")
        said = thought.split('says: "', 1)[1].removesuffix('"').strip(".")
        mail = episode.turns[-1].observation.content  # the answer comes right after reading the gold mail
        assert f"Message-ID: {last.arguments['sources'][0]}" in mail and said in mail
        verbatim += last.arguments["answer"].lower() in said.lower()
    assert answers > 80 and verbatim / answers > 0.85  # the rest write it another way ("Monday the 30th")
