"""Atomic checkpoints (adapter, optimizer, RNG, data position), the metrics log, and the update guards."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from drill.train.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint, save_checkpoint
from drill.train.methods.grpo import training_problem
from drill.train.metrics import MetricsLog, plot_learning_curve


def _peft_model(seed: int) -> torch.nn.Module:
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return get_peft_model(LlamaForCausalLM(config), LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"],
                                                               init_lora_weights=False))


def test_checkpoint_round_trip_restores_weights_optimizer_rng_and_position(tmp_path: Path) -> None:
    model = _peft_model(0)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=0.1)
    model(input_ids=torch.tensor([[1, 2, 3]])).logits.sum().backward()
    optimizer.step()
    random.seed(5), np.random.seed(5), torch.manual_seed(5)
    save_checkpoint(tmp_path, 3, model, optimizer, {"easy": 6}, {"seed": 0}, keep=2)
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))

    other = _peft_model(1)
    other_optimizer = torch.optim.AdamW([p for p in other.parameters() if p.requires_grad], lr=0.1)
    state = load_checkpoint(latest_checkpoint(tmp_path), other, other_optimizer)  # type: ignore[arg-type]
    assert (state.step, state.data_position, state.config) == (3, {"easy": 6}, {"seed": 0})
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected
    for (name, a), b in zip(model.named_parameters(), other.parameters()):
        if "lora_" in name:
            assert torch.equal(a, b)
    assert other_optimizer.state_dict()["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    restored, saved = other_optimizer.state_dict()["state"][0], optimizer.state_dict()["state"][0]
    assert torch.equal(restored["exp_avg"], saved["exp_avg"])


def test_checkpoints_are_pruned_rewritten_in_place_and_partial_writes_ignored(tmp_path: Path) -> None:
    model = _peft_model(0)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, model, optimizer, {}, {}, keep=2)
    save_checkpoint(tmp_path, 3, model, optimizer, {"all": 9}, {}, keep=2)
    (tmp_path / "checkpoints" / ".tmp-step-000004-999").mkdir()  # a write killed before its rename
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000002", "step-000003"]
    state = json.loads((tmp_path / "checkpoints" / "step-000003" / "state.json").read_text())
    assert state["data_position"] == {"all": 9}
    save_checkpoint(tmp_path, 4, model, optimizer, {}, {}, keep=2)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000003", "step-000004"]


def test_metrics_log_drops_a_torn_last_line_and_truncates_on_resume(tmp_path: Path) -> None:
    log = MetricsLog(tmp_path / "metrics.jsonl")
    for step in (1, 2, 3):
        log.append({"step": step, "reward/total": step / 10, "reward/format": 0.5})
    with open(log.path, "a") as handle:
        handle.write('{"step": 4, "rew')  # killed mid-write
    assert [r["step"] for r in log.read()] == [1, 2, 3]
    log.truncate_after(2)
    assert [r["step"] for r in log.read()] == [1, 2]
    log.path.write_text('{"step": 1}\nnot json\n{"step": 3}\n')
    with pytest.raises(ValueError, match="metrics.jsonl:2 is not valid JSON"):
        log.read()
    plot_learning_curve([{"step": 1, "reward/total": 0.1, "reward/format": 0.5}], tmp_path / "curve.png", "t")
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_update_guards() -> None:
    assert training_problem(0.5, 1.0, 0.01, 2.0) is None
    assert training_problem(0.5, 1.0, None, 2.0) is None
    assert "the loss is nan" in str(training_problem(float("nan"), 1.0, 0.01, 2.0))
    assert "the gradient norm is inf" in str(training_problem(0.5, float("inf"), 0.01, None))
    assert "exceeds kl_abort=2.0" in str(training_problem(0.5, 1.0, 2.5, 2.0))
    assert training_problem(0.5, 1.0, 2.5, None) is None
    assert "no update was applied" in str(training_problem(0.5, 1.0, float("inf"), None))
