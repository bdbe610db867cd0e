"""Ctrl-C never strands a run: before the first checkpoint the folder is marked and the next run there (fresh or
--resume) starts it over; after one, --resume continues from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drill.models.local import fresh_model
from drill.train import BaseModel
from drill.train.methods import grpo
from drill.train.run import INTERRUPTED
from test_train_loop import RELAY, _config, train  # type: ignore[import-not-found]

pytestmark = pytest.mark.slow


def _base(model_dir: Path) -> BaseModel:
    """A base model of its own for each run (a run puts its LoRA adapter on it)."""
    return BaseModel(*fresh_model(str(model_dir)))


def _interrupt_at(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test seam: Ctrl-C arrives while `step` computes its update."""
    original, calls = grpo.micro_batches, []

    def micro_batches(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == step:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(grpo, "micro_batches", micro_batches)


def _steps(out: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("resume", [False, True])
def test_interrupted_before_the_first_checkpoint_a_run_starts_it_over(
        resume: bool, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        _interrupt_at(2, patch)
        with pytest.raises(KeyboardInterrupt):
            train(_config(tiny_model_dir, out, steps=2, checkpoint_every=5), target=RELAY, base=_base(tiny_model_dir))
    assert (out / INTERRUPTED).is_file() and _steps(out) == [1]
    assert "interrupted before the first checkpoint" in capsys.readouterr().out
    result = train(_config(tiny_model_dir, out, steps=2, checkpoint_every=5, resume=resume), target=RELAY,
                   base=_base(tiny_model_dir))
    assert [r["step"] for r in result.metrics] == [1, 2] and not (out / INTERRUPTED).exists()


def test_interrupted_after_a_checkpoint_resume_continues(tiny_model_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        _interrupt_at(2, patch)
        with pytest.raises(KeyboardInterrupt):
            train(_config(tiny_model_dir, out, steps=2, checkpoint_every=1), target=RELAY, base=_base(tiny_model_dir))
    assert not (out / INTERRUPTED).exists() and "--resume continues from it" in capsys.readouterr().out
    with pytest.raises(ValueError, match="already holds a training run"):
        train(_config(tiny_model_dir, out, steps=2), target=RELAY, base=_base(tiny_model_dir))
    result = train(_config(tiny_model_dir, out, steps=2, resume=True), target=RELAY, base=_base(tiny_model_dir))
    assert [r["step"] for r in result.metrics] == [1, 2]
