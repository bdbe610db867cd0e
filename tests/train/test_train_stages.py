"""A tiny chained run (sft -> rft -> grpo) on the relay environment, killed inside its second stage and resumed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from drill.train import BaseModel, RunConfig
from drill.train.stages import parse_stage, plan_stages, run_stages
from test_train_sft import PREFILL, WRITING  # type: ignore[import-not-found]

pytestmark = pytest.mark.slow

# The tiny test model's calls are mostly invalid, so RFT trains on its kept invalid turns here too
# (skip_invalid=false): these tests are about stages and resuming, and each round must train on something.
STAGES = ["sft:source=oracle,epochs=2,batch_size=4", "rft:rounds=2,tasks_per_round=2,bar=group_mean,skip_invalid=false",
          "grpo:steps=2,tasks_per_step=1"]


def _config(model_dir: Path, out: Path, **changes: Any) -> RunConfig:
    settings: dict[str, Any] = dict(
        env="relay", model=str(model_dir), roles=["writer"], scripted_policy="heuristic", group_size=3,
        max_new_tokens=10, output_dir=out, eval_tasks=1, eval_baselines=["heuristic"], tool_listing="compact",
        prefill=PREFILL, checkpoint_every=1, learning_rate=3e-2, temperature=1.0, stages=STAGES)
    settings.update(changes)
    return RunConfig(**settings)


def _bases(model_dir: Path) -> Any:
    from drill.models.local import fresh_model, load_local

    load_local(str(model_dir))
    return lambda: BaseModel(*fresh_model(str(model_dir)))


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "adapter_model.safetensors")


def test_stage_specs_are_checked_before_any_model_loads(tiny_model_dir: Path, tmp_path: Path) -> None:
    config = _config(tiny_model_dir, tmp_path / "run")
    stage = parse_stage("sft:source=heuristic,epochs=3,learning_rate=1e-4", 1, config)
    assert (stage.options.source, stage.options.epochs, stage.config.learning_rate) == ("heuristic", 3, 1e-4)
    assert stage.config.output_dir == tmp_path / "run" / "stage-1-sft" and stage.config.eval_tasks == 0
    offline = parse_stage("dpo:source=results:runs/a b/results.json,expert=reader,nll=1,max_reward=0.5", 2, config)
    assert (offline.options.source, offline.options.expert, offline.options.nll, offline.options.max_reward) == (
        "results:runs/a b/results.json", "reader", 1, 0.5)
    for bad, message in [("ppo:steps=3", "unknown method"), ("sft:epochs", "KEY=VALUE"),
                         ("rft:bar=median", "bar must be"), ("rft:floor=high", "floor must be a number"),
                         ("dpo:colour=red", "unknown option"), ("dpo:expert=reader", "need both source=")]:
        with pytest.raises(ValueError, match=message):
            plan_stages(config.updated(stages=[bad]), WRITING)


def test_chained_run_resumes_inside_its_second_stage(tiny_model_dir: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from drill.train import run

    whole = tmp_path / "whole"
    rows = run_stages(_config(tiny_model_dir, whole), WRITING, _bases(tiny_model_dir))
    assert [r["policy"] for r in rows] == ["1-sft", "2-rft", "3-grpo", "untrained", "heuristic"]
    # each finished stage hands its memory back before the next loads its model, and says what the process holds
    said = re.findall(r"stage (\d) \((\w+)\) is complete; resident memory ([\d.]+) -> ([\d.]+) GB",
                      capsys.readouterr().out)
    assert [(i, m) for i, m, _, _ in said] == [("1", "sft"), ("2", "rft"), ("3", "grpo")]
    assert all(0 < float(after) <= float(before) + 0.1 for _, _, before, after in said)
    lines = [json.loads(line) for line in (whole / "metrics.jsonl").read_text().splitlines()]
    assert [(r["global_step"], r["method"]) for r in lines] == [
        (1, "sft"), (2, "sft"), (3, "sft"), (4, "sft"), (5, "rft"), (6, "rft"), (7, "grpo"), (8, "grpo")]
    assert all(t.startswith("train-") for r in lines if r["method"] == "rft" for t in r["tasks"])
    assert all(r["samples"] > 0 for r in lines if r["method"] == "rft")  # each round kept something and trained
    sft_weights, rft_weights = _weights(whole / "stage-1-sft" / "adapter"), _weights(whole / "stage-2-rft" / "adapter")
    assert any(not torch.equal(sft_weights[k], rft_weights[k]) for k in sft_weights)
    assert (whole / "learning_curve.png").is_file()
    # the rft stage started from the sft adapter, the grpo stage from the rft adapter
    assert json.loads((whole / "stage-2-rft" / "stage.json").read_text())["started_from"].endswith(
        "stage-1-sft/adapter")

    # a second run is killed right after the rft stage's first checkpoint ...
    cut = tmp_path / "cut"
    real_save = run.save_checkpoint

    def save_then_die(*args: Any, **kwargs: Any) -> Any:
        real_save(*args, **kwargs)
        if args[0].name == "stage-2-rft":
            raise KeyboardInterrupt("killed after round 1's checkpoint")

    monkeypatch.setattr(run, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_stages(_config(tiny_model_dir, cut), WRITING, _bases(tiny_model_dir))
    monkeypatch.setattr(run, "save_checkpoint", real_save)
    assert (cut / "stage-1-sft" / "stage.json").is_file() and not (cut / "stage-2-rft" / "stage.json").exists()
    with pytest.raises(ValueError, match="--resume"):
        run_stages(_config(tiny_model_dir, cut), WRITING, _bases(tiny_model_dir))
    # ... and resumed: the sft stage is skipped, the rft stage continues at round 2, and the run ends as the whole one
    run_stages(_config(tiny_model_dir, cut, resume=True), WRITING, _bases(tiny_model_dir))
    resumed = [json.loads(line) for line in (cut / "metrics.jsonl").read_text().splitlines()]
    assert [(r["method"], r["step"]) for r in resumed] == [(r["method"], r["step"]) for r in lines]
    for stage in ("stage-1-sft", "stage-2-rft", "stage-3-grpo"):
        a, b = _weights(whole / stage / "adapter"), _weights(cut / stage / "adapter")
        assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a), stage


def test_init_adapter_starts_the_first_stage_from_a_saved_adapter(tiny_model_dir: Path, tmp_path: Path) -> None:
    first = tmp_path / "first"
    run_stages(_config(tiny_model_dir, first, stages=["sft:source=oracle,epochs=2,batch_size=4"], eval_tasks=0),
               WRITING, _bases(tiny_model_dir))
    saved = first / "stage-1-sft" / "adapter"
    # a stage at a learning rate too small to move the weights ends where it started: at the saved adapter
    again = tmp_path / "again"
    rows = run_stages(_config(tiny_model_dir, again, init_adapter=str(saved), learning_rate=1e-12,
                              stages=["sft:source=oracle,epochs=1,batch_size=4"], eval_untrained=False), WRITING,
                      _bases(tiny_model_dir))
    assert [r["policy"] for r in rows] == ["0-init", "1-sft", "heuristic"]  # eval_untrained=False: no untrained row
    a, b = _weights(saved), _weights(again / "stage-1-sft" / "adapter")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert json.loads((again / "stage-1-sft" / "stage.json").read_text())["started_from"] == str(saved)
    fresh = tmp_path / "fresh"
    run_stages(_config(tiny_model_dir, fresh, learning_rate=1e-12, eval_tasks=0,
                       stages=["sft:source=oracle,epochs=1,batch_size=4"]), WRITING, _bases(tiny_model_dir))
    c = _weights(fresh / "stage-1-sft" / "adapter")
    assert any(not torch.allclose(a[k], c[k], atol=1e-6) for k in a)  # without it: a fresh adapter
    # a plain run (no stages, e.g. drill train --init-adapter PATH) attaches it too, through the config
    from peft import get_peft_model_state_dict

    from drill.models.local import fresh_model
    from drill.train.lora import attach_lora

    plain = attach_lora(fresh_model(str(tiny_model_dir))[0], _config(tiny_model_dir, tmp_path / "plain",
                                                                     init_adapter=str(saved), stages=[]))
    attached = get_peft_model_state_dict(plain)
    assert all(torch.equal(a[k], attached[k].cpu()) for k in a)
    with pytest.raises(ValueError, match="no saved adapter there"):
        _config(tiny_model_dir, tmp_path / "bad", init_adapter=str(tmp_path))
