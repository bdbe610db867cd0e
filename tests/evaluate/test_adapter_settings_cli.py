"""How `drill eval` reads the settings recorded beside `lora:` adapters, before any model loads: which specs name
adapters, and the one-line errors for adapters that disagree or a `--model` that is not an adapter's base."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from drill.cli import app
from drill.cli_options import lora_paths
from drill.models.adapters import AdapterSettings, read_adapter_settings, write_adapter_settings

runner = CliRunner()
SETTINGS = AdapterSettings(base_model="embedded:SmolLM2-135M-Instruct", env="triage", env_options={"k": 1},
                           prompt={"max_new_tokens": 128, "react": False, "tool_listing": "compact",
                                   "prefill": "<tool_call>\n", "demos": 2})


def test_lora_paths_finds_adapters_per_role_and_under_tree_search() -> None:
    texts = ["lora:a", "oracle,oversight=lora:b", "lats:lora:c", "heuristic", "lora:a", "llm"]
    assert lora_paths(texts) == ["a", "b", "c"]


def test_settings_round_trip(tmp_path: Path) -> None:
    write_adapter_settings(tmp_path, SETTINGS)
    assert read_adapter_settings(tmp_path) == SETTINGS
    assert read_adapter_settings(tmp_path / "none") is None


def test_adapters_trained_differently_are_one_usage_error(tmp_path: Path) -> None:
    for name, settings in {"a": SETTINGS, "b": replace(SETTINGS, env_options={"k": 3})}.items():
        (tmp_path / name).mkdir()
        write_adapter_settings(tmp_path / name, settings)
    result = runner.invoke(app, ["eval", "triage", "--policy", f"lora:{tmp_path / 'a'}", "--policy",
                                 f"lora:{tmp_path / 'b'}", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "were trained with different prompt settings or -E options" in " ".join(result.output.split())


def test_another_model_than_the_recorded_base_is_one_usage_error(tmp_path: Path) -> None:
    write_adapter_settings(tmp_path, SETTINGS)
    result = runner.invoke(app, ["eval", "triage", "--policy", f"lora:{tmp_path}", "--model", "Qwen/Qwen2.5-0.5B",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert ("was trained on embedded:SmolLM2-135M-Instruct, but --model is Qwen/Qwen2.5-0.5B"
            in " ".join(result.output.split()))


def test_an_unreadable_settings_file_is_one_usage_error(tmp_path: Path) -> None:
    (tmp_path / "drill_settings.json").write_text('{"base_model": 1, "env": "triage", "env_options": {}, '
                                                  '"prompt": {}}')
    result = runner.invoke(app, ["eval", "triage", "--policy", f"lora:{tmp_path}", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "not a settings file Drill wrote" in " ".join(result.output.split())
