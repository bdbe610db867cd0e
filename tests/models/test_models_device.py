"""`--device` for LLM policies: auto/cpu/cuda parsing, clear errors without CUDA, and placement that never moves
or casts the cached model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from drill.cli import app
from drill.models.base import ModelLoadError
from drill.models.local import load_local, place, resolve_device
from drill.models.policy import build_llm_policy
from drill.models.prompt import LLMOptions

runner = CliRunner()


def test_device_names_resolve_or_fail_with_the_choices() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for bad in ("tpu", "gpu", "cuda:x", ""):
        with pytest.raises(ModelLoadError, match="use auto, cpu, cuda or cuda:N"):
            resolve_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_a_clear_error(tiny_model_dir: Path) -> None:
    with pytest.raises(ModelLoadError, match="CUDA is not available on this machine"):
        resolve_device("cuda:0")
    result = runner.invoke(app, ["eval", "triage", "--policy", "llm", "--model", str(tiny_model_dir), "--limit", "1",
                                 "--device", "cuda"])
    assert result.exit_code == 2 and "CUDA is not available" in result.output
    assert "Traceback" not in result.output


def test_a_bad_device_flag_stops_before_any_model_loads(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "chaosops", "--device", "gpu0", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--device 'gpu0': use auto, cpu, cuda or cuda:N" in result.output
    assert not any(tmp_path.iterdir())


def test_placing_on_the_cpu_keeps_the_cached_model(tiny_model_dir: Path) -> None:
    chat = load_local(str(tiny_model_dir))
    weights = {k: v.clone() for k, v in chat.model.state_dict().items()}
    assert place(chat, "cpu") is chat
    policy = build_llm_policy("llm", LLMOptions(model=str(tiny_model_dir), device="cpu"))
    assert policy.model is chat
    assert all(torch.equal(v, weights[k]) and v.dtype == torch.float32 for k, v in chat.model.state_dict().items())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_placing_on_cuda_copies_in_bfloat16_and_leaves_the_original(tiny_model_dir: Path) -> None:
    chat = load_local(str(tiny_model_dir))
    placed = place(chat, "cuda")
    assert placed is not chat and placed.model.device.type == "cuda" and placed.model.dtype == torch.bfloat16
    assert chat.model.device.type == "cpu" and chat.model.dtype == torch.float32
    assert place(chat, "cuda") is placed
