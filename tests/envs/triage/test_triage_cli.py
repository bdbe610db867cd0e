"""`drill eval triage` and `drill watch triage` end to end through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill.cli import app

FIXTURE = Path(__file__).parent / "fixture_data"
runner = CliRunner()


@pytest.mark.parametrize("mode", ["reader", "agent"])
def test_eval_runs_every_baseline_and_writes_the_report(tmp_path: Path, mode: str) -> None:
    result = runner.invoke(app, ["eval", "triage", "--mode", mode, "--limit", "3", "--seeds", "2",
                                 "--data-dir", str(FIXTURE), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "results.json").read_text())
    rows = {row["policy"]: row for row in payload["summary"]}
    assert list(rows) == ["random", "heuristic", "oracle"]
    assert len(payload["episodes"]) == 3 * 3 * 2
    assert rows["oracle"]["total"] == pytest.approx(1.0) and rows["oracle"]["escalation_acc"] == 1.0
    assert rows["heuristic"]["total"] > rows["random"]["total"]
    for row in rows.values():
        assert {"format", "resolution", "grounding", "calibration", "parsimony", "repetition"} <= set(row)
    assert payload["meta"]["options"]["mode"] == mode and payload["meta"]["options"]["data_dir"] == str(FIXTURE)
    assert all(e["score"]["components"] for e in payload["episodes"])
    assert (tmp_path / "components.png").stat().st_size > 1000
    assert "oracle" in result.output and "heuristic" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--mode", "writer"], "option mode must be one of reader, agent, got 'writer'"),
    (["--policy", "genius"], "unknown policy 'genius'"),
    (["--split", "dev"], "unknown --split 'dev'"),
    (["--weight", "brevity=2"], "unknown rubric components"),
    (["--weight", "parsimony"], "--weight 'parsimony': expected KEY=VALUE"),
    (["--limit", "0"], "--limit must be at least 1"),
    (["--mode", "agent", "--turn-budget", "0"], "turn_budget must be a positive integer"),
])
def test_eval_usage_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["eval", "triage", "--data-dir", str(FIXTURE), "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output and not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("mode", ["reader", "agent"])
def test_watch_shows_the_episode_and_its_score(mode: str) -> None:
    result = runner.invoke(app, ["watch", "triage", "--mode", mode, "--task", "T-0002", "--policy", "heuristic",
                                 "--data-dir", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    assert "AccessDenied on PutObject" in result.output and "submit_resolution" in result.output
    assert "grounding" in result.output and "total" in result.output
    if mode == "agent":
        assert "search_kb" in result.output and "get_article" in result.output


def test_watch_unknown_task_is_a_usage_error() -> None:
    result = runner.invoke(app, ["watch", "triage", "--task", "T-9999", "--data-dir", str(FIXTURE)])
    assert result.exit_code == 2 and "unknown --task 'T-9999'" in result.output
