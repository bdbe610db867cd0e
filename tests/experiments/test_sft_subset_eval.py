"""experiments/sft_subset_eval.py prompts an adapter the way the 2026-11-24 proof was trained (compact tool listing,
the reader prefill, no worked examples). An adapter recorded with other prompt settings is refused before any model
loads: `drill train triage` now adds two worked examples by default, and such an adapter prompted without them scored
0.001 (experiments/LOG.md, 2026-11-27)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from drill.models.adapters import AdapterLoadError


def settings(folder: Path, demos: int, prefill: str) -> Path:
    folder.mkdir()
    (folder / "drill_settings.json").write_text(json.dumps({
        "base_model": "embedded:SmolLM2-135M-Instruct", "env": "triage", "env_options": {"k": 1},
        "prompt": {"tool_listing": "compact", "prefill": prefill, "demos": demos}}), encoding="utf-8")
    return folder


def test_an_adapter_trained_with_other_prompt_settings_is_refused(
        experiment_script: Callable[[str], ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = experiment_script("sft_subset_eval")
    adapter = settings(tmp_path / "two-demos", 2, module.PREFILL)
    monkeypatch.setattr(sys, "argv", ["sft_subset_eval.py", str(adapter)])
    with pytest.raises(SystemExit, match="was trained with prompt settings .*'demos': 2.*drill eval triage --policy"):
        module.main()
    same = settings(tmp_path / "as-proved", 0, module.PREFILL)  # passes the check, then fails to load: no weights
    monkeypatch.setattr(sys, "argv", ["sft_subset_eval.py", str(same), "--tasks", "1"])
    with pytest.raises(AdapterLoadError, match="adapter_config.json"):
        module.main()
