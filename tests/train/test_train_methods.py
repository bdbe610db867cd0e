"""The table of methods: a method written outside the package trains through `drill train --method` once it is
registered with one line; method files never import each other; the CLI's options come from the methods' fields."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import toy_method  # type: ignore[import-not-found]
from drill.train import cli
from drill.train.methods import METHODS

runner = CliRunner()
METHODS_DIR = Path(__file__).resolve().parents[2] / "src" / "drill" / "train" / "methods"


def _train_app() -> typer.Typer:
    """`drill train` built now, so it derives its options from METHODS as they are at this point."""
    app = typer.Typer()
    app.command("train")(cli.command())
    return app


@pytest.mark.slow
def test_a_registered_toy_method_trains_through_drill_train(tiny_model_dir: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from safetensors.torch import load_file

    monkeypatch.setitem(METHODS, "toy", toy_method)  # the one line that adds a method
    out = tmp_path / "run"
    result = runner.invoke(_train_app(), [
        "triage", "--method", "toy", "--steps", "2", "--top", "1", "--model", str(tiny_model_dir), "-E", "k=1",
        "--tool-listing", "compact", "-G", "2", "--tasks-per-step", "1", "--max-new-tokens", "6", "--max-turns", "2",
        "--learning-rate", "1e-2", "--eval-tasks", "0", "--checkpoint-every", "1", "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["stage"], r["imitated"]) for r in records] == [(1, "toy", 1), (2, "toy", 1)]
    assert all(r["tokens"] > 0 for r in records)
    assert json.loads((out / "config.json").read_text())["toy"] == {"steps": 2, "top": 1}
    weights = load_file(out / "adapter" / "adapter_model.safetensors")
    assert any(v.abs().max() > 0 for k, v in weights.items() if "lora_B" in k)  # the NLL steps moved the adapter
    assert (out / "learning_curve.png").is_file() and (out / "checkpoints" / "step-000002").is_dir()
    assert f"drill eval triage --policy lora:{out / 'adapter'}" in " ".join(result.output.split())


def test_an_option_of_another_method_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(METHODS, "toy", toy_method)
    result = runner.invoke(_train_app(), ["triage", "--top", "2", "--output-dir", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "top is an option of toy, not of grpo" in " ".join(result.output.split())
    unknown = runner.invoke(_train_app(), ["triage", "--method", "ppo", "--output-dir", str(tmp_path / "run")])
    assert unknown.exit_code == 2 and "unknown method 'ppo'; choose from sft, rft, dpo, grpo, toy" in " ".join(
        unknown.output.split())


def test_method_files_do_not_import_each_other() -> None:
    names = {path.stem for path in METHODS_DIR.glob("*.py")} - {"__init__"}
    assert names == {"sft", "rft", "dpo", "grpo"}
    for name in names:
        tree = ast.parse((METHODS_DIR / f"{name}.py").read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                     for a in n.names}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        others = {m for m in imported if m.startswith("drill.train.methods")}
        assert not others, f"methods/{name}.py imports {sorted(others)}"


def test_help_groups_the_options_and_shows_every_default() -> None:
    result = runner.invoke(_train_app(), ["--help"], env={"COLUMNS": "200"}, prog_name="drill")
    text = result.output
    assert result.exit_code == 0, text
    for panel in ("Model", "Prompt", "Sampling", "Optimization", "Schedule", "Outputs", "Hardware", "GRPO", "SFT",
                  "RFT", "DPO"):
        assert f"─ {panel} " in text, panel
    assert "[default: dpo: 20; grpo: 30]" in text and "[default: 192]" in text
    assert "pip install 'drill[ray]'" in text  # help text is not read as markup
    options = [p.name for p in cli.settings_parameters()]
    assert len(options) == len(set(options))  # a field several methods share is one option


def test_env_help_shows_the_training_defaults_beside_the_options_own() -> None:
    """`drill train triage --help` says what the run will take when the flag is not given: triage's training
    defaults (`EnvSpec.train_defaults`), not only the run config's and the option's own defaults."""
    from drill import registry

    app = typer.Typer()
    app.command("train")(cli.command(registry.get("triage")))
    text = " ".join(runner.invoke(app, ["--help"], env={"COLUMNS": "400"}, prog_name="drill").output.split())
    assert "[default: 3; triage's training default: 1] (= -E k=...)" in text
    assert "[default: 0; triage's training default: 2]" in text  # --demos
    assert "[default: schema; triage's training default: compact]" in text
    assert "[default: 192; triage's training default: 128]" in text  # --max-new-tokens
    plain = " ".join(runner.invoke(_train_app(), ["--help"], env={"COLUMNS": "400"}, prog_name="drill").output.split())
    assert "training default" not in plain
