"""Fixtures for the whole test run."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # tests are offline: Ray's usage report stays off
if "PYTEST_XDIST_WORKER" in os.environ:  # one test worker per core: one torch thread each, or they oversubscribe
    os.environ.setdefault("OMP_NUM_THREADS", "1")


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


ROOT = Path(__file__).parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Where coderepair's jail cannot be built (no user namespaces), coderepair refuses to run agent code; its tests
    are skipped with that one-line reason, except those marked `without_jail` (the refusal itself, the weaker mode
    by name), and the rest of the suite runs. DRILL_REQUIRE_JAIL=1 (set by .ci/run) keeps them: a missing jail fails."""
    if os.environ.get("DRILL_REQUIRE_JAIL") == "1":
        return
    from drill.envs.coderepair import jail

    reason = jail.unavailable()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"coderepair's jail cannot be built here: {reason}")
    for item in items:
        if "coderepair" in item.nodeid and item.get_closest_marker("without_jail") is None:
            item.add_marker(skip)


def _script_loader(folder: Path) -> Callable[[str], ModuleType]:
    """Import a script of `folder` by name, once per test run, so a test can call its functions."""
    def load(name: str) -> ModuleType:
        module_name = f"{folder.name}_{name}"  # a benchmark and an experiment may share a name
        if module_name not in sys.modules:
            spec = importlib.util.spec_from_file_location(module_name, folder / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module  # dataclasses look their module up
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        return sys.modules[module_name]

    return load


@pytest.fixture(scope="session")
def benchmark_script() -> Callable[[str], ModuleType]:
    """Import a script of benchmarks/ (measurements) by name: `benchmark_script("serve_load")`."""
    return _script_loader(ROOT / "benchmarks")


@pytest.fixture(scope="session")
def experiment_script() -> Callable[[str], ModuleType]:
    """Import a script of experiments/ (proofs and experiments) by name: `experiment_script("inbox_extractive_sft")`."""
    return _script_loader(ROOT / "experiments")


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
