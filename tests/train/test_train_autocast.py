"""--autocast: the training forward runs in bfloat16 under torch.autocast, the LoRA weights and their gradients
stay float32, generation stays float32, and an SFT step still lowers the loss. On a CPU whose bfloat16 matmuls are
slower than float32 ones it is refused: there it would slow training down by as much as 77x."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drill.train import BaseModel, lora
from drill.train.lora import cpu_bf16_slowdown, lora_training
from drill.train.samples import Sample, collate, completion_logprobs, nll_update
from test_train_loop import _config, tiny_base  # type: ignore[import-not-found]

__all__ = ["tiny_base"]  # a fixture, used by name


def _samples(tokenizer: object) -> list[Sample]:
    encode = tokenizer.encode  # type: ignore[attr-defined]
    return [Sample(prompt_ids=tuple(encode(f"question {k}: what comes next?")), completion_ids=tuple(encode(" done")),
                   advantage=1.0, episode=k, turn=0, role="writer") for k in range(4)]


@pytest.fixture
def bf16_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test seam: this CPU's bfloat16 matmuls measure as fast as on one with AMX (CI's may have none)."""
    monkeypatch.setattr(lora, "cpu_bf16_slowdown", lambda: 0.5)


def test_autocast_runs_the_training_forward_in_bfloat16_with_float32_weights(tiny_model_dir: Path,
                                                                             tiny_base: BaseModel,
                                                                             tmp_path: Path, bf16_cpu: None) -> None:
    config, _ = _config(tiny_model_dir, tmp_path / "run", device="cpu", autocast=True, learning_rate=1e-2)
    model, params, optimizer, pad_id = lora_training(tiny_base, config)
    samples = _samples(tiny_base.tokenizer)
    batch = collate(samples, pad_id)
    ids = batch.input_ids
    assert model(input_ids=ids, attention_mask=batch.attention_mask).logits.dtype == torch.bfloat16
    # generation goes to the base model's own forward, which autocast does not touch
    assert model.get_base_model()(input_ids=ids).logits.dtype == torch.float32
    assert params and all(p.dtype == torch.float32 for p in params)
    with torch.no_grad():
        before = float(-(completion_logprobs(model, batch, 1.0) * batch.completion_mask).sum())
    for _ in range(5):
        loss, tokens, grad_norm = nll_update(model, optimizer, params, samples, pad_id, config)
        assert all(p.grad is None or p.grad.dtype == torch.float32 for p in params)
    with torch.no_grad():
        after = float(-(completion_logprobs(model, batch, 1.0) * batch.completion_mask).sum())
    assert tokens == sum(len(s.completion_ids) for s in samples) and grad_norm > 0
    assert after < before


def test_autocast_with_a_bfloat16_model_is_refused(tiny_model_dir: Path, tiny_base: BaseModel, tmp_path: Path) -> None:
    config, _ = _config(tiny_model_dir, tmp_path / "run", device="cpu", autocast=True, bf16=True)
    with pytest.raises(ValueError, match="--no-bf16 --autocast"):
        lora_training(tiny_base, config)


def test_autocast_is_refused_where_bfloat16_matmuls_are_slower(tiny_model_dir: Path, tiny_base: BaseModel,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, _ = _config(tiny_model_dir, tmp_path / "run", device="cpu", autocast=True)
    monkeypatch.setattr(lora, "cpu_bf16_slowdown", lambda: 77.0)  # an AVX2-only CPU, as measured
    with pytest.raises(ValueError, match=r"77\.0x as long.*Drop --autocast"):
        lora_training(tiny_base, config)
    monkeypatch.setattr(lora, "cpu_bf16_slowdown", lambda: lora.AUTOCAST_MAX_SLOWDOWN)  # at the limit: allowed
    model, _, _, _ = lora_training(tiny_base, config)
    assert model(input_ids=torch.tensor([[1, 2, 3]])).logits.dtype == torch.bfloat16


def test_the_bf16_probe_measures_this_cpu() -> None:
    slowdown = cpu_bf16_slowdown(size=64, repeats=2)
    assert 0 < slowdown < float("inf")
