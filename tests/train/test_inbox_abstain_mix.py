"""benchmarks/inbox_extractive_sft.py's --correct-per-abstain selection: every abstaining labelled episode, then
the first R times as many correct ones in pick order; any other outcome in a labelled file is an error."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "inbox_extractive_sft.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("inbox_extractive_sft", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def episode(task_id: str, kind: str) -> dict:
    components = {"correct": 0.0, "wrong": 0.0, "no_answer": 0.0} | ({} if kind == "abstained" else {kind: 1.0})
    return {"task_id": task_id, "score": {"components": components}}


def test_keeps_every_abstention_and_the_first_correct_ones(tmp_path: Path) -> None:
    kinds = ["correct", "abstained", "correct", "correct", "abstained", "correct", "correct"]
    labelled = tmp_path / "abstain-train.json"
    labelled.write_text(json.dumps({"episodes": [episode(f"q{i}", k) for i, k in enumerate(kinds)]}))
    mix = load_benchmark().abstain_mix(labelled, 1.5)
    assert mix == tmp_path / "abstain-mix-1.5.json"
    assert [e["task_id"] for e in json.loads(mix.read_text())["episodes"]] == ["q1", "q4", "q0", "q2", "q3"]


def test_an_episode_neither_correct_nor_abstained_is_an_error(tmp_path: Path) -> None:
    labelled = tmp_path / "abstain-train.json"
    labelled.write_text(json.dumps({"episodes": [episode("q0", "abstained"), episode("q7", "wrong")]}))
    with pytest.raises(SystemExit, match="q7 is wrong"):
        load_benchmark().abstain_mix(labelled, 2)
