"""`drill train`: options and config files reach RunConfig and the method's Options; bad input is one line and exit
code 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from drill.cli import app
from drill.train import methods, run
from drill.train.config import RunConfig

runner = CliRunner()


@pytest.mark.parametrize(("args", "needle"), [
    (["train", "nope"], "unknown environment 'nope'; installed:"),
    (["train", "triage", "--group-size", "1"], "group_size must be at least 2"),
    (["train", "triage", "--loss-type", "ppo"], "loss_type must be grpo or dr_grpo"),
    (["train", "triage", "--role", "boss"], "unknown role(s) boss for triage"),
    (["train", "triage", "--weight", "fromat=1->0"], "neither components of the triage rubric"),
    (["train", "triage", "--eval-baseline", "genius"], "unknown evaluation baseline(s) genius"),
    (["train", "triage", "-E", "mode=sideways"], "option mode must be one of reader, agent, got 'sideways'"),
    (["train", "triage", "-E", "k"], "expected KEY=VALUE"),
    (["train", "triage", "--tool-listing", "yaml"], "unknown tool listing 'yaml'; choose from schema, compact"),
    (["train", "triage", "--demos", "-1"], "demos must be >= 0, got -1"),
    (["train", "triage", "--demos", "100000"], "demos=100000 but triage has only"),
    (["train", "chaosops", "--curriculum", "easy:5,nightmare:5"], "'nightmare' selects no training task"),
    (["train", "chaosops", "--role", "sre", "--role-reward", "oversight=rogue_caught"],
     "role_rewards names roles the model does not play: oversight"),
    (["train", "triage", "--epochs", "2"], "epochs is an option of sft, rft, dpo, not of grpo"),
    (["train", "triage", "--method", "sft", "--stage", "sft:source=oracle"], "--method and --stage"),
    (["train", "triage", "--epochs", "2", "--stage", "grpo:steps=1"], "epochs: no stage's method takes this option"),
    (["train", "triage", "--method", "sft", "--epochs", "0"], "sft: epochs must be at least 1, got 0"),
])
def test_bad_options_are_usage_errors(args: list[str], needle: str, tmp_path: Path) -> None:
    result = runner.invoke(app, [*args, "--output-dir", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert needle in " ".join(result.output.split())


def test_resume_without_checkpoint_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "triage", "--resume", "--output-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "no checkpoint in" in result.output


def _fake_train(seen: list[tuple[RunConfig, Any]]) -> Any:
    """The test seam: `methods.train` that records what it was given and loads no model."""
    def fake_train(config: RunConfig, name: str, options: Any, target: Any = None) -> run.TrainResult:
        seen.append((config, options))
        return run.TrainResult(output_dir=config.output_dir, adapter_dir=config.output_dir / "adapter", steps=0,
                               metrics=[])
    return fake_train


def test_config_file_then_command_line_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[RunConfig, Any]] = []

    monkeypatch.setattr(methods, "train", _fake_train(seen))
    config_file = tmp_path / "run.toml"
    config_file.write_text('group_size = 4\nsteps = 50\nlearning_rate = 2e-4\nkl_abort = 1.0\n')
    result = runner.invoke(app, [
        "train", "chaosops", "--config", str(config_file), "--steps", "7", "--role", "oversight",
        "--role-reward", "oversight=rogue_caught+rogue_false_positive", "--weight", "rogue_multiplier=2.0->1.0",
        "--curriculum", "easy:3,hard:4", "--kl-abort", "0", "--lora-targets", "q_proj,v_proj",
        "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    config, options = seen[0]
    assert (config.env, config.group_size, options.steps, config.learning_rate) == ("chaosops", 4, 7, 2e-4)
    assert config.roles == ["oversight"] and config.role_rewards == {"oversight": "rogue_caught+rogue_false_positive"}
    assert config.weight_schedules == ["rogue_multiplier=2.0->1.0"] and config.curriculum == "easy:3,hard:4"
    assert options.kl_abort is None and config.lora_target_modules == ["q_proj", "v_proj"]
    runner.invoke(app, ["train", "triage", "-E", "k=2", "-E", "mode=reader", "--output-dir", str(tmp_path / "t")])
    assert seen[1][0].env_options == {"k": 2, "mode": "reader"}


def test_prompt_options_reach_the_config_and_the_printed_eval_command_reproduces_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    from drill.cli_options import unescape
    from drill.train.cli import eval_command

    seen: list[tuple[RunConfig, Any]] = []

    monkeypatch.setattr(methods, "train", _fake_train(seen))
    typed = r'<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'
    result = runner.invoke(app, ["train", "triage", "-E", "k=1", "--tool-listing", "compact", "--demos", "2",
                                 "--prefill", typed, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    config = seen[0][0]
    assert config.prefill == '<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'
    assert (config.tool_listing, config.demos) == ("compact", 2)
    args = shlex.split(eval_command(config, tmp_path / "out" / "adapter"))
    assert args[:5] == ["drill", "eval", "triage", "--policy", f"lora:{tmp_path / 'out' / 'adapter'}"]
    flags = dict(zip(args[5::2], args[6::2]))
    assert flags["-E"] == "k=1" and flags["--tool-listing"] == "compact" and flags["--demos"] == "2"
    assert unescape(flags["--prefill"]) == config.prefill and flags["--max-new-tokens"] == "128"  # triage's default
    assert flags["--split"] == "validation"  # where the closing evaluation played: the test split is for the end
    assert "drill eval triage --policy lora:" in " ".join(result.output.split())
    final = runner.invoke(app, ["train", "triage", "--eval-split", "test", "--output-dir", str(tmp_path / "final")])
    assert final.exit_code == 0, final.output
    assert seen[1][0].eval_split == "test" and "--split test" in eval_command(seen[1][0], tmp_path / "adapter")
    wrong = runner.invoke(app, ["train", "triage", "--eval-split", "train", "--output-dir", str(tmp_path / "bad")])
    assert wrong.exit_code == 2 and "eval_split must be validation or test" in " ".join(wrong.output.split())
    assert "--max-history-turns" not in flags  # the default (8) is not written out
    short = runner.invoke(app, ["train", "chaosops", "--max-history-turns", "1", "--output-dir", str(tmp_path / "h")])
    assert short.exit_code == 0, short.output
    from drill.train.rollouts import prompt_options
    from drill.train.target import load_target

    config = seen[2][0]
    assert config.max_history_turns == 1
    assert prompt_options(config, load_target("chaosops", {}))["max_history_turns"] == 1  # rollouts, SFT, held-out
    assert "--max-history-turns 1" in eval_command(config, tmp_path / "adapter")
    negative = runner.invoke(app, ["train", "chaosops", "--max-history-turns", "-1", "--output-dir", str(tmp_path)])
    assert negative.exit_code == 2 and "max_history_turns must be >= 0" in " ".join(negative.output.split())


@pytest.mark.parametrize("stage", [[], ["--stage", "sft:source=oracle"]])
def test_a_model_that_does_not_load_is_one_line_not_a_traceback(stage: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    result = runner.invoke(app, ["train", "triage", "--model", str(missing), *stage, "--output-dir",
                                 str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert f"cannot load model '{missing}'" in " ".join(result.output.split())
    assert "Traceback" not in result.output and not isinstance(result.exception, ValueError)


def test_react_reaches_the_config_and_the_printed_eval_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from drill.train.cli import eval_command

    seen: list[tuple[RunConfig, Any]] = []

    monkeypatch.setattr(methods, "train", _fake_train(seen))
    result = runner.invoke(app, ["train", "triage", "-E", "k=1", "--react", "--prefill", "Thought:",
                                 "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert seen[0][0].react and seen[0][0].prefill == "Thought:"
    assert "--react" in eval_command(seen[0][0], tmp_path / "out" / "adapter").split()
    plain = runner.invoke(app, ["train", "triage", "-E", "k=1", "--output-dir", str(tmp_path / "plain")])
    assert plain.exit_code == 0, plain.output
    assert not seen[1][0].react and "--react" not in eval_command(seen[1][0], tmp_path / "plain" / "adapter").split()


@pytest.mark.parametrize("stage", [[], ["--stage", "sft:source=oracle"]])
def test_autocast_on_a_cpu_without_fast_bfloat16_is_a_usage_error_before_any_model_loads(
        stage: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from drill.train import lora

    monkeypatch.setattr(lora, "cpu_bf16_slowdown", lambda: 40.0)  # the test seam: an AVX2-only CPU, measured 28-77x
    monkeypatch.setattr(run, "load_base", lambda *a, **k: pytest.fail("the model was loaded"))
    result = runner.invoke(app, ["train", "triage", *stage, "--autocast", "--device", "cpu",
                                 "--output-dir", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "a bfloat16 matmul takes 40.0x as long as a float32 one" in " ".join(result.output.split())


def _env_app(name: str) -> typer.Typer:
    """`drill train NAME ...` as the CLI builds it when NAME is on the command line: with the env's own flags."""
    from drill import registry
    from drill.train import cli as train_cli

    env_app = typer.Typer()
    env_app.command("train")(train_cli.command(registry.get(name)))
    env_app.command("other")(lambda: None)  # two commands: typer keeps `train` as a subcommand
    return env_app


def test_environment_flags_work_in_train_as_in_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[RunConfig, Any]] = []
    monkeypatch.setattr(methods, "train", _fake_train(seen))
    result = runner.invoke(_env_app("triage"), ["train", "triage", "--mode", "agent", "--turn-budget", "5",
                                                "--output-dir", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert seen[0][0].env_options == {"mode": "agent", "turn_budget": 5}
    twice = runner.invoke(_env_app("triage"), ["train", "triage", "-E", "k=1", "--k", "3",
                                               "--output-dir", str(tmp_path / "b")])
    assert twice.exit_code == 2 and "--env-option k is given twice, as 1 and 3" in " ".join(twice.output.split())
    bad = runner.invoke(_env_app("triage"), ["train", "triage", "--mode", "sideways", "--output-dir", str(tmp_path)])
    assert bad.exit_code == 2 and "option mode must be one of reader, agent" in " ".join(bad.output.split())


def test_max_turns_is_the_environments_turn_budget_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[RunConfig, Any]] = []
    monkeypatch.setattr(methods, "train", _fake_train(seen))
    result = runner.invoke(_env_app("inbox"), ["train", "inbox", "--max-turns", "4", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert seen[0][0].max_turns == 4 and seen[0][0].env_options["max_turns"] == 4  # as `drill eval inbox --max-turns`
    runner.invoke(_env_app("triage"), ["train", "triage", "--max-turns", "4", "--output-dir", str(tmp_path / "t")])
    assert seen[1][0].max_turns == 4 and "max_turns" not in seen[1][0].env_options  # triage has no such option
    clash = runner.invoke(_env_app("inbox"), ["train", "inbox", "--max-turns", "4", "-E", "max_turns=6",
                                              "--output-dir", str(tmp_path / "c")])
    assert clash.exit_code == 2 and "--max-turns 4 and -E max_turns=6 disagree" in " ".join(clash.output.split())
