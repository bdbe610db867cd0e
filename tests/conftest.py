"""Fixtures for the whole test run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # tests are offline: Ray's usage report stays off


@pytest.fixture(autouse=True, scope="session")
def _private_drill_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Environments that build data on first use (the synthetic inbox) build it once per test run in a private
    folder, never in the user's cache, which another process may be using."""
    old = os.environ.get("DRILL_CACHE")
    os.environ["DRILL_CACHE"] = str(tmp_path_factory.mktemp("drill-cache"))
    yield
    if old is None:
        os.environ.pop("DRILL_CACHE")
    else:
        os.environ["DRILL_CACHE"] = old


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama (2 layers, width 32) with the embedded SmolLM2 tokenizer, saved once per test run: a
    training step takes a fraction of a second."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from drill.models.local import EMBEDDED_GGUF, embedded_model_folder

    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = AutoTokenizer.from_pretrained(embedded_model_folder(), gguf_file=EMBEDDED_GGUF)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
