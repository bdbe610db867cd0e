"""The reader mode as a single-turn training target: model text -> parsed Action -> Env.step -> rubric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drill.core import Action, run_episodes
from drill.envs import triage

FIXTURE = Path(__file__).parent / "fixture_data"


def test_target_scores_an_action_exactly_as_an_evaluation_would() -> None:
    target = triage.reader_target(k=3, data_dir=FIXTURE)
    assert json.loads(json.dumps(target.env_options))["mode"] == "reader"
    train, test = target.tasks("train"), target.tasks("test")
    assert train and test and not {t.id for t in train} & {t.id for t in test}
    task = test[0]
    prompt = target.prompt(task, seed=3)
    assert [t.name for t in prompt.tools] == ["submit_resolution"] and prompt.instructions
    oracle = triage.OraclePolicy.answer(task)
    episode = target.score(task, 3, oracle)
    played = run_episodes(target.make_env, [(task, 3)], triage.OraclePolicy(), target.rubric)[0]
    assert episode.score == played.score and episode.score is not None and episode.score.total == pytest.approx(1.0)
    assert episode.turns[0].observation == prompt


def test_model_text_goes_through_the_normal_action_path() -> None:
    parsing = pytest.importorskip("drill.models.parsing")
    target = triage.reader_target(data_dir=FIXTURE)
    task = target.tasks("test")[0]
    call: dict[str, Any] = {"name": "submit_resolution", "arguments": {
        "resolution": "Set the VPN DNS servers to 10.0.0.53 and 10.0.1.53, reconnect and flush the DNS cache.",
        "citations": ["KB-NET-0002"], "confidence": 0.8, "escalate": False}}
    good = target.score(task, 0, parsing.parse_action(f"<tool_call>{json.dumps(call)}</tool_call>"))
    assert good.count("submitted") == 1 and good.turns[0].action.raw is not None
    assert good.score is not None and good.score.components["format"] == 1.0 and good.score.total > 0.7
    bare = target.score(task, 0, parsing.parse_action(json.dumps(call["arguments"])))  # no tool name
    assert bare.count("invalid_action") == 1 and bare.score is not None and bare.score.total == 0.0
    typed_wrong = dict(call, arguments=dict(call["arguments"], confidence="high"))
    wrong = target.score(task, 0, parsing.parse_action(json.dumps(typed_wrong)))
    assert wrong.score is not None and wrong.score.components["format"] == pytest.approx(0.2)
    assert target.score(task, 0, Action.unparseable("", "the reply is empty")).score.total == 0.0  # type: ignore[union-attr]
