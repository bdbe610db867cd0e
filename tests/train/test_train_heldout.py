"""An SFT stage and the closing evaluation say what they are doing in a log, where the bar does not draw: the SFT
stage's heartbeat counts its optimizer steps. The closing evaluation: one heartbeat phase per row (which row, of
how many, how many episodes), every episode counted, the heartbeat stopped at the end. A staged run has no run heartbeat
around its closing evaluation, which on the CPU can take most of an hour. It plays in lockstep batches of the
environment's `batch`, as `drill eval` does: one batch of 95 inbox questions held 19.4 GB; and it empties the
prefix caches after each row, whose next row is another model (a second row held 16 GB with two caches kept)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from drill.core.rollout import run_episodes
from drill.train import BaseModel, RunConfig
from drill.train.stages import run_stages
from test_train_sft import PREFILL, WRITING  # type: ignore[import-not-found]


class Recorder:
    """Stands in for `Heartbeat`: records phases and episodes instead of printing on a clock."""

    made: list[Recorder] = []

    def __init__(self, write: Any, every: float = 30.0) -> None:
        self.phases: list[tuple[str | None, int]] = []
        self.done_per_phase: list[int] = []
        self.stopped = False
        Recorder.made.append(self)

    def phase(self, text: str | None, total: int = 0) -> None:
        self.phases.append((text, total))
        self.done_per_phase.append(0)

    def done(self, episodes: int = 1) -> None:
        self.done_per_phase[-1] += episodes

    def stop(self) -> None:
        self.stopped = True


def test_the_closing_evaluation_reports_each_row_while_it_plays(tiny_model_dir: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from drill.models.local import fresh_model

    Recorder.made.clear()
    monkeypatch.setattr("drill.train.heldout.Heartbeat", Recorder)
    monkeypatch.setattr("drill.train.run.Heartbeat", Recorder)
    batches: list[list[str]] = []

    def recording(make_env: Any, jobs: Any, *args: Any, **kwargs: Any) -> Any:
        batches.append([task.id for task, _ in jobs])
        return run_episodes(make_env, jobs, *args, **kwargs)

    monkeypatch.setattr("drill.evaluate.matrix.run_episodes", recording)
    cleared: list[int] = []
    monkeypatch.setattr("drill.models.local.clear_prefix_caches", lambda: cleared.append(len(batches)))
    target = replace(WRITING, spec=replace(WRITING.spec, batch=3))
    config = RunConfig(env="relay", model=str(tiny_model_dir), roles=["writer"], scripted_policy="heuristic",
                       group_size=2, max_new_tokens=6, output_dir=tmp_path / "run", eval_tasks=4,
                       eval_baselines=["heuristic"], eval_untrained=False, tool_listing="compact", prefill=PREFILL,
                       learning_rate=1e-12, stages=["sft:source=oracle,epochs=1,batch_size=4"])
    rows = run_stages(config, target, lambda: BaseModel(*fresh_model(str(tiny_model_dir))))
    assert [r["policy"] for r in rows] == ["1-sft", "heuristic"]
    sft, beat = Recorder.made  # the SFT stage's run, then the closing evaluation
    steps = sft.phases.index(("sft: optimizer steps 1-2 of 2", 2))
    assert sft.done_per_phase[steps] == 2 and sft.phases[steps + 1] == (None, 0)  # every step counted, then quiet
    assert beat.phases == [("held-out evaluation, row 1 of 2 (1-sft): playing 4 episodes", 4),
                           ("held-out evaluation, row 2 of 2 (heuristic): playing 4 episodes", 4)]
    assert beat.done_per_phase == [4, 4] and beat.stopped
    ids = [f"validation-{i}" for i in range(4)]
    assert batches[-4:] == [ids[:3], ids[3:], ids[:3], ids[3:]]  # two rows, each in batches of at most 3, in order
    assert cleared == [len(batches) - 2, len(batches)]  # every prefix cache emptied after each row's last batch
    # where and how the model rows were played: rows at another precision are not comparable (experiments/rl_chain.py)
    meta = json.loads((tmp_path / "run" / "heldout.json").read_text(encoding="utf-8"))["meta"]
    assert meta["precision"] == "cpu float32"


def test_the_precision_names_every_model_rows_device_and_dtype() -> None:
    import torch

    from drill.models.local import precision

    def row(dtype: torch.dtype) -> Any:
        return SimpleNamespace(model=SimpleNamespace(model=torch.nn.Linear(2, 2).to(dtype)))

    scripted = SimpleNamespace(name="heuristic")
    assert precision([row(torch.float32), scripted]) == "cpu float32"
    assert precision([row(torch.bfloat16), row(torch.float32)]) == "cpu bfloat16, cpu float32"
    assert precision([scripted]) is None
    assert precision([SimpleNamespace(expand=row(torch.bfloat16))]) == "cpu bfloat16"  # a LATS policy's expander
