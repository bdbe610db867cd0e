"""--autocast: the training forward runs in bfloat16 under torch.autocast, the LoRA weights and their gradients
stay float32, generation stays float32, and an SFT step still lowers the loss."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drill.train import BaseModel
from drill.train.lora import lora_training
from drill.train.samples import Sample, collate, completion_logprobs
from drill.train.sft import nll_update
from test_train_loop import _config, tiny_base  # type: ignore[import-not-found]

__all__ = ["tiny_base"]  # a fixture, used by name


def _samples(tokenizer: object) -> list[Sample]:
    encode = tokenizer.encode  # type: ignore[attr-defined]
    return [Sample(prompt_ids=tuple(encode(f"question {k}: what comes next?")), completion_ids=tuple(encode(" done")),
                   advantage=1.0, episode=k, turn=0, role="writer") for k in range(4)]


def test_autocast_runs_the_training_forward_in_bfloat16_with_float32_weights(tiny_model_dir: Path,
                                                                             tiny_base: BaseModel,
                                                                             tmp_path: Path) -> None:
    config = _config(tiny_model_dir, tmp_path / "run", device="cpu", autocast=True, learning_rate=1e-2)
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
    config = _config(tiny_model_dir, tmp_path / "run", device="cpu", autocast=True, bf16=True)
    with pytest.raises(ValueError, match="--no-bf16 --autocast"):
        lora_training(tiny_base, config)
