"""Shared fixtures for the model tests: one embedded model per test session (loading takes ~20 s), and a
maker of real LoRA adapters on it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from drill.models.adapters import save_adapter
from drill.models.local import EMBEDDED_MODEL_ID, TransformersChatModel, fresh_model, load_embedded


@pytest.fixture(scope="session")
def embedded_model() -> TransformersChatModel:
    """The embedded SmolLM2-135M-Instruct, loaded offline once; `load_embedded()` returns the same object."""
    return load_embedded()


def make_adapter(folder: Path, target_modules: list[str] | None = None) -> str:
    """A real LoRA adapter on the embedded model with non-zero B matrices, saved with save_adapter; its sha256."""
    import torch
    from peft import LoraConfig, get_peft_model

    model, _, _ = fresh_model(EMBEDDED_MODEL_ID)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=target_modules or ["q_proj", "v_proj"])
    peft_model = get_peft_model(model, config)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.05)
    return save_adapter(peft_model, folder, base_model_id=EMBEDDED_MODEL_ID)


@pytest.fixture
def lora_adapter_maker(embedded_model: TransformersChatModel) -> Callable[..., str]:
    """`make_adapter`, after the embedded model is loaded (so the base is copied, not loaded again)."""
    return make_adapter
