"""A trained adapter carries its prompt: `drill train` writes the base model, the `-E` options and the prompt settings
beside the adapter, and `--policy lora:DIR` alone plays exactly the episodes the printed eval command plays. A flag
the user gives overrides a recorded setting, with a note; another base model is a one-line error; an adapter
without the file is prompted by the flags, with a note. On a tiny random Llama, so training takes seconds."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from drill.cli import app
from drill.models.adapters import SETTINGS_FILE, read_adapter_settings

pytestmark = pytest.mark.slow  # trains (a tiny model, seconds)
runner = CliRunner()


@pytest.fixture(scope="module")
def trained(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A one-step GRPO adapter on triage's training defaults, and the eval command the run printed (as args)."""
    out = tmp_path_factory.mktemp("run") / "out"
    result = runner.invoke(app, ["train", "triage", "--model", str(tiny_model_dir), "--steps", "1", "-G", "2",
                                 "--tasks-per-step", "1", "--max-new-tokens", "8", "--eval-tasks", "0",
                                 "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    printed = re.search(r"evaluate with: (drill eval .*)\)$", result.output, re.MULTILINE)
    assert printed is not None, result.output
    return out / "adapter", shlex.split(printed.group(1))


def _episodes(args: list[str], out: Path) -> tuple[list[tuple[Any, ...]], str]:
    """Play `drill eval` with `args` on the first two tickets of its split: each episode's reward, what the model saw and
    the token ids it wrote; and what the command printed."""
    result = runner.invoke(app, [*args, "--limit", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    episodes = json.loads((out / "results.json").read_text())["episodes"]
    return [(e["task_id"], e["score"]["total"], [(t["observation"]["content"], t["action"]["generation"]["token_ids"])
                                                 for t in e["turns"]]) for e in episodes], " ".join(result.output.split())


def test_the_adapter_records_what_it_was_trained_with(trained: tuple[Path, list[str]], tiny_model_dir: Path) -> None:
    adapter, _ = trained
    settings = read_adapter_settings(adapter)
    assert settings is not None and settings.base_model == str(tiny_model_dir.resolve()) and settings.env == "triage"
    assert settings.env_options == {"k": 1}
    assert settings.prompt["tool_listing"] == "compact" and settings.prompt["demos"] == 2
    assert settings.prompt["max_new_tokens"] == 8 and settings.prompt["prefill"].startswith("<tool_call>\n")


def test_lora_alone_plays_the_episodes_of_the_printed_command(trained: tuple[Path, list[str]],
                                                              tmp_path: Path) -> None:
    adapter, printed = trained
    assert printed[:5] == ["drill", "eval", "triage", "--policy", f"lora:{adapter}"]
    assert printed[printed.index("--split") + 1] == "validation"  # where the closing evaluation played; not a prompt
    # setting, so `lora:DIR` alone is given it too
    alone, said = _episodes(["eval", "triage", "--policy", f"lora:{adapter}", "--split", "validation"],
                            tmp_path / "alone")
    assert alone == _episodes(printed[1:], tmp_path / "printed")[0]
    assert "prompted as trained (--max-new-tokens 8 --tool-listing compact --prefill" in said and "-E k=1" in said
    bare = tmp_path / "bare"  # the same adapter without its settings: prompted by the flags alone, other episodes
    shutil.copytree(adapter, bare)
    (bare / SETTINGS_FILE).unlink()
    episodes, said = _episodes(["eval", "triage", "--policy", f"lora:{bare}", "--split", "validation"],
                               tmp_path / "bare-eval")
    assert f"lora:{bare} records no training settings" in said and episodes != alone


def test_a_flag_overrides_a_recorded_setting_with_a_note(trained: tuple[Path, list[str]], tmp_path: Path) -> None:
    adapter, _ = trained
    result = runner.invoke(app, ["eval", "triage", "--policy", f"lora:{adapter}", "--max-new-tokens", "4", "-E", "k=2",
                                 "--limit", "1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "--max-new-tokens 4 overrides its 8" in output and "-E k=2 overrides its k=1" in output
    assert "--tool-listing compact" in output  # the settings not given still come from the adapter
    episode = json.loads((tmp_path / "o" / "results.json").read_text())["episodes"][0]
    assert len(episode["turns"][0]["action"]["generation"]["token_ids"]) <= 4


def test_another_base_model_is_a_one_line_error(trained: tuple[Path, list[str]], tmp_path: Path) -> None:
    adapter, _ = trained
    result = runner.invoke(app, ["eval", "triage", "--policy", f"lora:{adapter}", "--model", "embedded",
                                 "--limit", "1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert f"was trained on {read_adapter_settings(adapter).base_model}, but --model is embedded" in output
