"""experiments/triage_extractive_sft.py's teacher with `explore`: on a seeded share of the answered tickets it states a
confidence other than 1.0, so an SFT student's samples try other values for RL to choose among (issue 41's ninth
try); the answer, citation and escalation decision stay the teacher's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from types import ModuleType

import pytest

from drill import registry
from drill.core.rollout import run_episodes


def confidences(module: ModuleType, explore: float) -> tuple[Counter[float], list[tuple[str, object]]]:
    spec = registry.specs()["triage"]
    options = spec.parse_options({"mode": "reader", "k": 5})
    make_env = spec.make(options)
    tickets = make_env().tasks("train")
    episodes = run_episodes(make_env, [(t, 0) for t in tickets], module.ExtractiveTeacher(explore),
                            spec.rubric_for(options))
    calls = [e.turns[-1].action.arguments for e in episodes]
    answered = Counter(c["confidence"] for c in calls if c["citations"])
    return answered, [(c["resolution"], c["escalate"]) for c in calls]


def test_the_exploring_teacher_changes_only_the_stated_confidence(
        experiment_script: Callable[[str], ModuleType]) -> None:
    module = experiment_script("triage_extractive_sft")
    plain, plain_calls = confidences(module, 0.0)
    explored, explored_calls = confidences(module, 0.5)
    assert set(plain) == {1.0}
    assert explored_calls == plain_calls  # the same answers and decisions
    assert set(explored) <= {1.0, *module.EXPLORED_CONFIDENCES}
    share = 1 - explored[1.0] / sum(explored.values())
    assert 0.35 < share < 0.65 and len(explored) == 6  # every value tried, 1.0 still the mode
    assert explored[1.0] == max(explored.values())
    assert confidences(module, 0.5)[0] == explored  # seeded by ticket id: the same every time
    with pytest.raises(ValueError, match="explore must be in"):
        module.ExtractiveTeacher(1.5)


def test_the_teacher_leaves_out_the_steps_a_tickets_gold_rules_out(
        experiment_script: Callable[[str], ModuleType]) -> None:
    """On a ticket to escalate whose gold forbids some of the shown article's steps ("do not raise the limit"), the
    teacher copies the others: its answer orders none of them and stays correct where the rest still cover the gold."""
    module = experiment_script("triage_extractive_sft")
    spec = registry.specs()["triage"]
    options = spec.parse_options({"mode": "reader", "k": 5})
    make_env = spec.make(options)
    tickets = [t for t in make_env().tasks("train") if t.ruled_out]
    episodes = run_episodes(make_env, [(t, 0) for t in tickets], module.ExtractiveTeacher(0.0),
                            spec.rubric_for(options))
    said = [e.turns[-1].action.arguments["resolution"] for e in episodes]
    assert len(tickets) == 12
    assert not any(head in text for t, text in zip(tickets, said) for head in t.ruled_out)
    assert sum(e.score.components["correct"] for e in episodes) >= 11
