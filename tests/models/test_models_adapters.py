"""LoRA adapters: a real adapter round-trips through `lora:PATH`; every broken adapter fails with its reason."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from drill.models import AdapterLoadError, SamplingParams, build_llm_policy
from drill.models.adapters import load_lora, read_adapter_config
from drill.models.local import EMBEDDED_MODEL_ID, TransformersChatModel
from drill.models.prompt import LLMOptions

LORA_CONFIG = {"peft_type": "LORA", "base_model_name_or_path": EMBEDDED_MODEL_ID, "r": 4, "lora_alpha": 8,
               "target_modules": ["q_proj", "v_proj"]}


def write_adapter(folder: Path, config: Any = None, weights: bytes | None = b"not really tensors") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config)
        (folder / "adapter_config.json").write_text(text)
    if weights is not None:
        (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: tmp / "missing", "no such adapter folder"),
    (lambda tmp: (tmp / "file.txt").write_text("x") and tmp / "file.txt", "not a folder"),
    (lambda tmp: write_adapter(tmp / "a"), "no adapter_config.json"),
    (lambda tmp: write_adapter(tmp / "a", "{not json"), "not valid JSON"),
    (lambda tmp: write_adapter(tmp / "a", ["LORA"]), "expected a JSON object, got list"),
    (lambda tmp: write_adapter(tmp / "a", {**LORA_CONFIG, "peft_type": "IA3"}), "peft_type is 'IA3'"),
    (lambda tmp: write_adapter(tmp / "a", LORA_CONFIG, weights=None), "no adapter weights"),
    (lambda tmp: write_adapter(tmp / "a", {**LORA_CONFIG, "base_model_name_or_path": None}),
     "names no base_model_name_or_path"),
    (lambda tmp: write_adapter(tmp / "a", LORA_CONFIG), "cannot read the adapter weights"),
])
def test_broken_adapters_fail_before_any_model_loads(tmp_path: Path, make: Any, message: str) -> None:
    path = make(tmp_path)
    with pytest.raises(AdapterLoadError, match=message):
        build_llm_policy(f"lora:{path}", LLMOptions())


def test_an_unloadable_base_model_is_an_adapter_error(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    folder = write_adapter(tmp_path / "a", {**LORA_CONFIG, "base_model_name_or_path": str(tmp_path / "no-model")},
                           weights=None)
    save_file({"base_model.model.lora_A.weight": torch.zeros(2, 2)}, folder / "adapter_model.safetensors")
    with pytest.raises(AdapterLoadError, match="its base model .* cannot be loaded"):
        load_lora(folder)


# -- a real adapter on the embedded model (slow: uses the embedded model) ----------------------------

def sequence_logprobs(model: TransformersChatModel, prompt: list[int], tokens: list[int]) -> list[float]:
    import torch

    with torch.inference_mode():
        logits = model.model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1:-1]  # (N, V)
    return torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(tokens)[:, None]).squeeze(1).tolist()


@pytest.mark.slow
def test_a_saved_adapter_loads_through_lora_spec_and_broken_ones_never_fall_back(
        tmp_path: Path, embedded_model: TransformersChatModel, lora_adapter_maker: Callable[..., str]) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "adapter"
    sha = lora_adapter_maker(folder)
    assert sha == hashlib.sha256((folder / "adapter_model.safetensors").read_bytes()).hexdigest()
    assert read_adapter_config(folder)["base_model_name_or_path"] == EMBEDDED_MODEL_ID

    policy = build_llm_policy(f"lora:{folder}", LLMOptions())
    info = policy.info
    assert (info.kind, info.model, info.adapter_path, info.adapter_sha256, info.load_status) == (
        "lora", EMBEDDED_MODEL_ID, str(folder.resolve()), sha, "ok")
    assert build_llm_policy(f"lora:{folder}", LLMOptions()).model is policy.model, "loaded adapters are cached"

    # The adapter changes the model, and the embedded model itself is untouched by loading it.
    lora_model = policy.model
    assert isinstance(lora_model, TransformersChatModel)
    conversation = [{"role": "user", "content": "Which service should we restart?"}]
    [generation] = lora_model.generate([conversation], None, SamplingParams(max_new_tokens=8, temperature=0))
    with_adapter = torch.tensor(generation.logprobs)
    without = torch.tensor(sequence_logprobs(embedded_model, generation.prompt_token_ids, generation.token_ids))
    assert (with_adapter - without).abs().max() > 0.05
    assert not any("lora" in name for name, _ in embedded_model.model.named_parameters())

    # Broken copies of the same adapter: each fails with its reason.
    tensors = load_file(folder / "adapter_model.safetensors")
    first = sorted(tensors)[0]

    renamed = write_adapter(tmp_path / "renamed", read_adapter_config(folder), weights=None)
    save_file({k.replace("q_proj", "qq_proj"): v for k, v in tensors.items()}, renamed / "adapter_model.safetensors")
    with pytest.raises(AdapterLoadError, match="match no LoRA layer"):
        load_lora(renamed)

    partial = write_adapter(tmp_path / "partial", read_adapter_config(folder), weights=None)
    save_file({k: v for k, v in tensors.items() if k != first}, partial / "adapter_model.safetensors")
    with pytest.raises(AdapterLoadError, match="lacks 1 LoRA tensors"):
        load_lora(partial)

    reshaped = tmp_path / "reshaped"
    shutil.copytree(folder, reshaped)
    (reshaped / "adapter_config.json").write_text(json.dumps({**read_adapter_config(folder), "r": 8}))
    with pytest.raises(AdapterLoadError, match="size mismatch"):
        load_lora(reshaped)

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(folder, elsewhere)
    (elsewhere / "adapter_config.json").write_text(json.dumps({**read_adapter_config(folder),
                                                                "target_modules": ["w_fancy_proj"]}))
    with pytest.raises(AdapterLoadError, match="PEFT could not apply the adapter"):
        load_lora(elsewhere)

    # Saving over an existing adapter replaces it whole.
    new_sha = lora_adapter_maker(folder, target_modules=["k_proj"])
    assert new_sha != sha and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert all("k_proj" in key for key in load_file(folder / "adapter_model.safetensors"))
