"""`drill eval chaosops` and `drill watch chaosops` end to end through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill.cli import app
from drill.core import PolicyInfo
from drill.envs import chaosops
from drill.envs.chaosops.baselines import HeuristicPolicy, OraclePolicy
from drill.evaluate.matrix import play, summary_rows
from drill.envs.chaosops.env import TASKS, ChaosOpsEnv

runner = CliRunner()


def test_eval_writes_results_and_chart_on_a_small_matrix(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "chaosops", "--seeds", "2", "--failure", "db_deadlock", "--failure",
                                 "autoscaler_cost_cut", "--tier", "easy", "--tier", "hard", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "results.json").read_text())
    assert len(payload["episodes"]) == 3 * 2 * 2 * 2  # policies x failures x tiers x seeds
    rows = {(row["policy"], row["tier"]): row for row in payload["summary"]}
    assert set(rows) == {(p, t) for p in ("random", "heuristic", "oracle") for t in ("easy", "hard")}
    for tier in ("easy", "hard"):
        oracle = rows[("oracle", tier)]
        assert oracle["resolved"] == 1.0 and oracle["rogue_caught"] == 1.0 and oracle["false_positive_flags"] == 0.0
        assert rows[("random", tier)]["mean_reward"] < oracle["mean_reward"]
    assert all(set(e["score"]["components"]) >= {"resolved", "mttr", "rogue_caught"} for e in payload["episodes"])
    assert payload["meta"]["filters"] == {"failure": ["db_deadlock", "autoscaler_cost_cut"], "tier": ["easy", "hard"]}
    assert payload["meta"]["seeds"] == [0, 1]
    assert (tmp_path / "mean_reward_by_tier.png").stat().st_size > 1000
    assert "heuristic" in result.output and "mean_reward" in result.output


def test_rogue_multiplier_reaches_the_rubric(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "chaosops", "--seeds", "1", "--failure", "rogue_deploy_bot", "--tier", "easy",
                                 "--policy", "oracle", "--rogue-multiplier", "2", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["meta"]["weights"]["rogue_caught"] == 100.0
    assert payload["episodes"][0]["score"]["total"] == pytest.approx(100 + 10 + 30 - 2 * 2 + 100)  # resolved at step 2


def test_per_role_policy_specs_are_accepted(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "chaosops", "--seeds", "1", "--failure", "memory_leak", "--tier", "medium",
                                 "--policy", "heuristic,manager=oracle", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    episode = json.loads((tmp_path / "results.json").read_text())["episodes"][0]
    assert episode["policies"]["manager"]["name"] == "oracle" and episode["policies"]["sre"]["name"] == "heuristic"


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "genius"], "unknown policy 'genius'"),
    (["--policy", "boss=oracle"], "unknown role 'boss'"),
    (["--tier", "extreme"], "unknown --tier 'extreme'"),
    (["--failure", "meteor_strike"], "unknown --failure 'meteor_strike'"),
    (["--seeds", "0"], "--seeds must be at least 1"),
    (["--rogue-multiplier", "-1"], "rogue_multiplier must be >= 0"),
])
def test_eval_usage_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["eval", "chaosops", "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("args", [["--tier", "extreme"], ["--failure", "meteor"], ["--policy", "genius"]])
def test_watch_usage_errors_exit_2(args: list[str]) -> None:
    result = runner.invoke(app, ["watch", "chaosops", *args])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


class AdapterOracle(OraclePolicy):
    """A test seam: the oracle, labelled as a LoRA policy, to check what the table shows for model rows."""

    info = PolicyInfo(name="lora:runs/a", kind="lora", model="SmolLM2-135M-Instruct", adapter_path="runs/a",
                      adapter_sha256="0123456789abcdef0123", load_status="ok")


def test_model_rows_show_model_adapter_sha_and_load_status() -> None:
    heuristic, adapter = HeuristicPolicy(), AdapterOracle()
    specs = {"heuristic,oversight=lora:runs/a": {role: adapter if role == "oversight" else heuristic
                                                 for role in ChaosOpsEnv.roles}}
    tasks = [t for t in TASKS["test"] if t.tier == "easy"]
    played = play(ChaosOpsEnv, specs, [(t, 0) for t in tasks], chaosops.rubric(), 45)
    [row] = summary_rows(chaosops.SPEC, played, {t.id: t for t in tasks})
    assert row["model"] == "oversight: SmolLM2-135M-Instruct + runs/a (0123456789ab) [ok]"
    assert row["rogue_caught"] == 1.0 and row["false_positive_flags"] == 0.0


def test_unknown_environment_exits_2() -> None:
    result = runner.invoke(app, ["eval", "chaos-monkey"])
    assert result.exit_code == 2 and "chaos-monkey" in result.output


def test_watch_shows_views_actions_events_and_running_reward() -> None:
    result = runner.invoke(app, ["watch", "chaosops", "--failure", "autoscaler_cost_cut", "--tier", "hard",
                                 "--policy", "oracle", "--seed", "1"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Fleet-agent trace" in out and "cost_optimization" in out  # Oversight's view
    assert "flag_rogue" in out and "event rogue_caught" in out and "event resolved" in out
    assert "reward so far" in out and "rogue_caught +50" in out and "total +186" in out
