"""Training: GRPO with LoRA over Drill environments (single- and multi-turn), one readable loop.

    from drill.train import GRPOConfig, train
    result = train(GRPOConfig(env="triage", steps=30, output_dir=Path("runs/triage")))

`drill.train.grpo` holds the loop (and its departures from the papers), `config` the one config
dataclass, `objective` the math, `samples` the token bookkeeping, `schedules` curricula and weight
schedules, `shaping` training-only shaping rewards, `target` the environment resolved by name,
`rollouts` the rollout policies, `checkpoint` atomic checkpoints, `metrics` the JSONL log and curve,
`heldout` the closing evaluation, `cli` the `drill train` command. See docs/training.md. Heavy
imports (torch, transformers, peft) happen when these modules are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drill.train.config import GRPOConfig

if TYPE_CHECKING:
    from drill.train.grpo import BaseModel, TrainingStopped, TrainResult, train

__all__ = ["BaseModel", "GRPOConfig", "TrainResult", "TrainingStopped", "train"]


def __getattr__(name: str) -> Any:
    if name in ("BaseModel", "TrainingStopped", "TrainResult", "train"):
        from drill.train import grpo

        return getattr(grpo, name)
    raise AttributeError(f"module 'drill.train' has no attribute {name!r}")
