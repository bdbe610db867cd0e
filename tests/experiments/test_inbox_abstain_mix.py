"""experiments/inbox_extractive_sft.py's --correct-per-abstain selection: every abstaining labelled episode, then
the first R times as many correct ones in pick order; any other outcome in a labelled file is an error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def episode(task_id: str, kind: str) -> dict:
    components = {"correct": 0.0, "wrong": 0.0, "no_answer": 0.0} | ({} if kind == "abstained" else {kind: 1.0})
    return {"task_id": task_id, "score": {"components": components}}


def test_keeps_every_abstention_and_the_first_correct_ones(
        tmp_path: Path, experiment_script: Callable[[str], ModuleType]) -> None:
    kinds = ["correct", "abstained", "correct", "correct", "abstained", "correct", "correct"]
    labelled = tmp_path / "abstain-train.json"
    labelled.write_text(json.dumps({"episodes": [episode(f"q{i}", k) for i, k in enumerate(kinds)]}))
    mix = experiment_script("inbox_extractive_sft").abstain_mix(labelled, 1.5)
    assert mix == tmp_path / "abstain-mix-1.5.json"
    assert [e["task_id"] for e in json.loads(mix.read_text())["episodes"]] == ["q1", "q4", "q0", "q2", "q3"]


def test_an_episode_neither_correct_nor_abstained_is_an_error(
        tmp_path: Path, experiment_script: Callable[[str], ModuleType]) -> None:
    labelled = tmp_path / "abstain-train.json"
    labelled.write_text(json.dumps({"episodes": [episode("q0", "abstained"), episode("q7", "wrong")]}))
    with pytest.raises(SystemExit, match="q7 is wrong"):
        experiment_script("inbox_extractive_sft").abstain_mix(labelled, 2)
