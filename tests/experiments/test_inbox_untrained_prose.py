"""experiments/inbox_untrained_prose.py's reading of the untrained model's first reply: a call to an environment tool
is a call (an answer call judged by the environment's judge), and any other text is right when it holds the gold
answer, wrong when it asserts a number or a name the question does not, and no claim otherwise."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from drill.envs.inbox.questions import InboxQuestion
from drill.models.parsing import parse_action

TOOLS = {"search_emails", "read_email", "return_final_answer"}


COST = InboxQuestion(id="q1", inbox="dana@kestrel.example", question="What is the estimated cost of Boris Costa's trip "
                     "to Atlanta?", asked_at="2024-09-20 12:30:00", answer="$1,740", aliases=("1740 dollars",))
HOTEL = InboxQuestion(id="q2", inbox="dana@kestrel.example", question="Which hotel is Yusuf Yamamoto staying at in "
                      "Detroit?", asked_at="2024-09-20 12:30:00", answer=None)


@pytest.mark.parametrize(("question", "reply", "reading"), [
    (COST, "The estimated cost of Boris Costa's trip to Atlanta is $1.000.", "wrong"),
    (COST, "The estimated cost of Boris Costa's trip to Atlanta is $1,740.", "right"),
    (COST, "It is 1740 dollars", "right"),
    (COST, "Boris Costa's trip to Atlanta is a trip in 2024.", "no claim"),  # a year, a possessive: no claim
    (COST, "I don't know.", "abstains"),
    (HOTEL, "The answer is: Detroit.", "no claim"),  # only the question's words (a miss the docstring names)
    (HOTEL, "The answer is:\nDana.whitfield@kestrel.example", "wrong"),
    (HOTEL, '<tool_call>\n{"name": "Yusuf Yamamoto", "arguments": {"address": "Grand Hotel"}}\n</tool_call>', "wrong"),
    (HOTEL, '<tool_call>\n{"name": "Yusuf Yamamoto", "arguments": {"<argument>": "Yusuf Yamamoto"}}\n</tool_call>',
     "no claim"),  # tags and JSON keys claim nothing
    (COST, '<tool_call>\n{"name": "search_emails", "arguments": {"keywords": "Boris Costa 99"}}\n</tool_call>', "call"),
    (COST, '<tool_call>\n{"name": "return_final_answer", "arguments": {"answer": "$1,740", "sources": []}}\n'
           '</tool_call>', "right"),
    (COST, '<tool_call>\n{"name": "return_final_answer", "arguments": {"answer": "$2,000", "sources": []}}\n'
           '</tool_call>', "wrong"),
    (HOTEL, '<tool_call>\n{"name": "return_final_answer", "arguments": ["Grand Hotel"]}\n</tool_call>', "wrong"),
    (HOTEL, '<tool_call>\n{"name": "return_final_answer", "arguments": {"sources": []}}\n</tool_call>',
     "no claim"),  # no answer is not an abstention
])
def test_a_first_reply_is_read_as_the_docstring_says(
        experiment_script: Callable[[str], ModuleType], question: InboxQuestion, reply: str, reading: str) -> None:
    read_reply = experiment_script("inbox_untrained_prose").read_reply
    assert read_reply(question, parse_action(reply), TOOLS)[0] == reading
