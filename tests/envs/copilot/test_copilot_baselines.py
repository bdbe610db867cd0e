"""The co-pilot baselines and its eval table: the oracle completes every level with no violation, the heuristic
sits between random and the oracle, its violation rate on the injection set is reported, and `drill eval copilot`
prints the numbers per level."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from drill.cli import app
from drill.envs.copilot import SPEC
from drill.evaluate.matrix import evaluate

runner = CliRunner()


def _rows() -> dict[tuple[str, str], dict]:
    options = SPEC.parse_options({})
    env = SPEC.make(options)()
    policies = {name: {"assistant": make()} for name, make in SPEC.baselines(options).items()}
    report = evaluate(SPEC, options, policies, env.tasks("test"), 2, SPEC.rubric_for(options), None, "copilot",
                      quiet=True)
    return {(row["policy"], row["level"]): row for row in report.rows}


def test_the_eval_table_per_level() -> None:
    rows = _rows()
    groups = ["L1", "L2", "L3", "L4", "L5", "injection", "adversarial"]
    assert [level for policy, level in rows if policy == "oracle"] == groups
    for group in groups:
        oracle, heuristic, random = rows["oracle", group], rows["heuristic", group], rows["random", group]
        assert oracle["completion"] == 1.0 and oracle["violations_per_1k"] == 0 and oracle["soft_per_1k"] == 0
        assert oracle["steps_over_optimal"] == 0.0 and oracle["reward"] > random["reward"]
        assert heuristic["reward"] <= oracle["reward"] + 1e-9
    assert rows["heuristic", "injection"]["violations_per_1k"] == 0  # it acts on the request, never on the data
    assert rows["heuristic", "adversarial"]["violations_per_1k"] == 0  # it knows the hard rules and declines
    assert rows["heuristic", "L5"]["completion"] < rows["heuristic", "L1"]["completion"]
    assert all(rows[p, g]["recovery"] is None or 0 <= rows[p, g]["recovery"] <= 1 for p, g in rows)
    assert rows["oracle", "L4"]["recovery"] == 1.0 or rows["oracle", "L4"]["recovery"] is None


def test_drill_eval_copilot_prints_the_numbers(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "copilot", "--suite", "injection", "--seeds", "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for column in ("completion", "violations_per_1k", "steps_over_optimal", "recovery"):
        assert column in result.output
    payload = json.loads((tmp_path / "results.json").read_text())
    assert {row["level"] for row in payload["summary"]} == {"injection"}
    assert {row["policy"] for row in payload["summary"]} == {"random", "heuristic", "oracle"}


def test_watch_shows_an_l4_episode() -> None:
    result = runner.invoke(app, ["watch", "copilot", "--policy", "heuristic", "--transient-rate", "0"])
    assert result.exit_code == 0, result.output
    assert "L4-budget_to_sheet-1" in result.output and "checked" in result.output


def test_a_language_model_policy_plays_the_l4_budget_task_through_text_tool_calls() -> None:
    """The scripted chat model (the shipped test seam) writes the reference solution as tool-call text; the
    nested `values` of write_cells and the lists of ids go through parsing and validation unchanged."""
    from drill.core import PolicyInfo, run_episodes
    from drill.envs.copilot import CopilotEnv, rubric
    from drill.models import LLMPolicy
    from drill.models.testing import ScriptedChatModel

    env = CopilotEnv(transient_rate=0.0)
    task = next(t for t in env.tasks("test") if t.template == "budget_to_sheet")
    replies = [f"<tool_call>{json.dumps({'name': c.tool, 'arguments': c.arguments})}</tool_call>" for c in task.solution]
    model = ScriptedChatModel(replies)
    policy = LLMPolicy(model, PolicyInfo(name="scripted", kind="llm", model="scripted"))
    episode = run_episodes(lambda: CopilotEnv(transient_rate=0.0), [(task, 0)], policy, rubric())[0]
    assert episode.score is not None and episode.score.total == 1.0 and not episode.count("invalid_action")
    assert len(model.calls) == task.optimal_steps and "request_confirmation" in str(model.calls[0][0])
