"""`drill train ENV` starts from the environment's training defaults (`EnvSpec.train_defaults`): the settings that let
the embedded model write calls whose rewards differ. A flag or a config-file value wins over each, and the run
prints the ones it took."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from drill import registry
from drill.cli import app
from drill.envs.triage.spec import READER_PREFILL
from drill.train import methods, run
from drill.train.cli import with_env_defaults
from drill.train.config import RunConfig, checked
from drill.train.methods import split_settings

runner = CliRunner()


def test_triage_reader_defaults_fill_what_the_user_left_out() -> None:
    settings, taken = with_env_defaults("triage", {"steps": 3})
    assert settings["env_options"] == {"k": 1} and settings["tool_listing"] == "compact"
    assert settings["prefill"] == READER_PREFILL and settings["demos"] == 2 and settings["steps"] == 3
    assert "-E k=1" in taken and "--tool-listing compact" in taken and "--demos 2" in taken
    assert any(t.startswith("--prefill '<tool_call>\\n{") for t in taken)  # as typed: the newline as \n


def test_the_users_settings_and_options_win() -> None:
    given: dict[str, Any] = {"tool_listing": "schema", "demos": 0, "env_options": {"k": 3}}
    settings, taken = with_env_defaults("triage", given)
    assert (settings["tool_listing"], settings["demos"], settings["env_options"]) == ("schema", 0, {"k": 3})
    assert not any(t.startswith(("--tool-listing", "--demos", "-E")) for t in taken)
    assert settings["prefill"] == READER_PREFILL  # the rest still comes from the environment


def test_defaults_follow_the_options_the_user_gave() -> None:
    agent, taken = with_env_defaults("triage", {"env_options": {"mode": "agent"}})
    assert agent == {"env_options": {"mode": "agent"}} and not taken  # the reader's prefill would skip the search
    react, taken = with_env_defaults("triage", {"react": True})
    assert "prefill" not in react and "demos" not in react and not any("--prefill" in t for t in taken)


@pytest.mark.parametrize("name", [n for n, s in registry.specs().items() if s.train_defaults is not None])
def test_every_environments_defaults_make_a_valid_run_config(name: str) -> None:
    settings, taken = with_env_defaults(name, {})
    run_settings, _ = split_settings({**settings, "env": name}, "grpo", staged=False)
    config = checked(RunConfig, run_settings, f"{name}'s train_defaults")
    assert taken and config.tool_listing == "compact"


def test_the_run_prints_the_defaults_it_took(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[RunConfig] = []

    def fake_train(config: RunConfig, name: str, options: Any, target: Any = None) -> run.TrainResult:
        seen.append(config)
        return run.TrainResult(output_dir=config.output_dir, adapter_dir=config.output_dir / "adapter", steps=0,
                               metrics=[])

    monkeypatch.setattr(methods, "train", fake_train)
    result = runner.invoke(app, ["train", "triage", "--max-new-tokens", "64", "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "training defaults" in line)
    assert "-E k=1" in line and "--demos 2" in line and "--max-new-tokens" not in line
    assert seen[0].max_new_tokens == 64 and seen[0].env_options == {"k": 1} and seen[0].tool_listing == "compact"


def test_chaosops_trains_oversight_beside_teammates_that_know_only_what_they_see() -> None:
    """The oracle team's timing tells which incidents hide a rogue (it fixes an infrastructure incident at once), so
    ChaosOps' defaults seat the heuristic in the roles the model does not play; `--scripted-policy` still wins."""
    settings, taken = with_env_defaults("chaosops", {})
    assert settings["roles"] == ["oversight"] and settings["scripted_policy"] == "heuristic"
    assert "--scripted-policy heuristic" in taken
    chosen, taken = with_env_defaults("chaosops", {"scripted_policy": "oracle"})
    assert chosen["scripted_policy"] == "oracle" and not any(t.startswith("--scripted-policy") for t in taken)
