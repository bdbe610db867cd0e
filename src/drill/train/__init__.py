"""Training: LoRA adapters over Drill environments with GRPO, SFT, RFT or DPO, each one readable loop.

    from drill.train import RunConfig, train
    result = train(RunConfig(env="triage", output_dir=Path("runs/triage")), "grpo")

`run` holds what every method shares (`RunConfig` in `config`, `Run`: open, play groups, finish),
`methods` one module per method (`Options` + `train(run, options)`, named in `METHODS`), `stages` chains
them, `objective` the math, `samples` the token bookkeeping, `sources` demonstrations, `schedules`
curricula and weight schedules, `shaping` training-only shaping rewards, `target` the environment resolved
by name, `rollouts` the rollout policies, `checkpoint` atomic checkpoints, `metrics` the JSONL log and
curve, `heldout` the closing evaluation, `cli` the `drill train` command. See docs/training.md. Heavy
imports (torch, transformers, peft) happen when these modules are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drill.train.config import RunConfig

if TYPE_CHECKING:
    from drill.train.methods import METHODS, train
    from drill.train.run import BaseModel, TrainingStopped, TrainResult

__all__ = ["METHODS", "BaseModel", "RunConfig", "TrainResult", "TrainingStopped", "train"]


def __getattr__(name: str) -> Any:
    if name in ("METHODS", "train"):
        from drill.train import methods

        return getattr(methods, name)
    if name in ("BaseModel", "TrainingStopped", "TrainResult"):
        from drill.train import run

        return getattr(run, name)
    raise AttributeError(f"module 'drill.train' has no attribute {name!r}")
