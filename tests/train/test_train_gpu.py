"""The CUDA paths of the trainer: bf16 training, and vLLM rollouts with the adapter hot-loaded each step.

Skipped without a GPU (and, for vLLM, without the `vllm` extra). They reuse the relay environment of
test_train_loop.py, with a small instruct model from the hub cache named by DRILL_GPU_TEST_MODEL.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
import torch

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _relay() -> object:
    from test_train_loop import RELAY  # type: ignore[import-not-found]

    return RELAY


def test_bf16_training_on_cuda(tmp_path: Path) -> None:
    from drill.train import RunConfig, train
    from drill.train.methods import grpo

    result = train(RunConfig(env="relay", model=os.environ.get("DRILL_GPU_TEST_MODEL"), roles=["writer"],
                             group_size=4, tasks_per_step=2, max_new_tokens=16, eval_tasks=0,
                             output_dir=tmp_path, device="cuda", bf16=True), "grpo", grpo.Options(steps=2),
                   target=_relay())  # type: ignore[arg-type]
    assert [r["step"] for r in result.metrics] == [1, 2]
    assert all(r["step_s"] > 0 for r in result.metrics)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs the vllm extra")
@pytest.mark.skipif(not os.environ.get("DRILL_GPU_TEST_MODEL"), reason="vLLM needs an HF model: DRILL_GPU_TEST_MODEL")
def test_vllm_rollouts_follow_the_trained_adapter(tmp_path: Path) -> None:
    from drill.train import RunConfig, train
    from drill.train.methods import grpo

    result = train(RunConfig(env="relay", model=os.environ["DRILL_GPU_TEST_MODEL"], roles=["writer"], group_size=4,
                             tasks_per_step=2, max_new_tokens=16, eval_tasks=0, output_dir=tmp_path,
                             device="cuda", bf16=True, generation_backend="vllm"), "grpo", grpo.Options(steps=2),
                   target=_relay())  # type: ignore[arg-type]
    assert [r["step"] for r in result.metrics] == [1, 2]
    assert (tmp_path / "rollout_adapter" / "step-000002" / "adapter_config.json").is_file()
