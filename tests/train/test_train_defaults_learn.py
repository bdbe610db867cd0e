"""The README's training command learns on triage's defaults alone: with the embedded SmolLM2-135M, the first step's
group already differs in reward, so GRPO has a gradient (with the generic prompt every sample scored 0.000).
One task of 8 episodes, one step, no closing evaluation: the shortest run that shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill.cli import app

pytestmark = pytest.mark.slow


def test_the_first_step_on_triages_defaults_has_reward_variance(tmp_path: Path) -> None:
    out = tmp_path / "triage"
    result = CliRunner().invoke(app, ["train", "triage", "--steps", "1", "--tasks-per-step", "1", "--eval-tasks", "0",
                                      "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert "triage's training defaults" in result.output and "--tool-listing compact" in result.output
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert record["groups"] == 1 and record["zero_variance_groups"] == 0
    assert record["group_std/total"] > 0.05 and record["trained_samples"] > 0
