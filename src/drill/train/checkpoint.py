"""Atomic training checkpoints: adapter, optimizer, RNG states, data position and step.

A checkpoint is a folder `OUTPUT/checkpoints/step-000010/` holding

* `adapter/`         the LoRA adapter (peft `save_pretrained`),
* `optimizer.pt`     the AdamW state,
* `rng.pt`           Python, NumPy and torch (CPU and CUDA) generator states,
* `state.json`       the step, the data position (`TaskSampler` cursors) and the config it ran with.

It is written into a hidden temporary folder, every file fsync'ed, then renamed into place with
`os.replace`, so a run killed at any moment (SIGKILL included) leaves either the whole checkpoint or
none of it. Only the newest `keep` checkpoints are kept.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

CHECKPOINTS = "checkpoints"
PREFIX = "step-"


@dataclass(frozen=True)
class TrainerState:
    step: int
    data_position: dict[str, int]
    config: dict[str, Any]


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        elif path.is_dir():
            _fsync_dir(path)
    _fsync_dir(folder)


def rng_state() -> dict[str, Any]:
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()  # type: ignore[misc]
    return {
        "python": [version, list(internal), gauss],
        "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(output_dir: Path, step: int, model: Any, optimizer: torch.optim.Optimizer,
                    data_position: dict[str, int], config: dict[str, Any], keep: int) -> Path:
    """Write the checkpoint for `step` atomically and prune old ones; returns its folder."""
    root = output_dir / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{PREFIX}{step:06d}"
    for leftover in [*root.glob(f".tmp-{PREFIX}*"), *root.glob(f".old-{PREFIX}*")]:  # from a run killed mid-write
        shutil.rmtree(leftover)
    tmp = root / f".tmp-{PREFIX}{step:06d}-{os.getpid()}"
    tmp.mkdir()
    model.save_pretrained(tmp / "adapter")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    state = {"step": step, "data_position": data_position, "config": config}
    (tmp / "state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    _fsync_tree(tmp)
    if final.exists():
        old = root / f".old-{PREFIX}{step:06d}-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old)
    else:
        os.replace(tmp, final)
    _fsync_dir(root)
    for stale in list_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(stale)
    return final


def list_checkpoints(output_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (temporary folders of interrupted writes are ignored)."""
    root = output_dir / CHECKPOINTS
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(PREFIX) and p.name[len(PREFIX):].isdigit()]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX):]))


def latest_checkpoint(output_dir: Path) -> Path | None:
    found = list_checkpoints(output_dir)
    return found[-1] if found else None


def load_checkpoint(folder: Path, model: Any, optimizer: torch.optim.Optimizer) -> TrainerState:
    """Restore the adapter weights, optimizer and RNG states in place; returns step, data position and config."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    weights = folder / "adapter" / "adapter_model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"checkpoint {folder} has no adapter weights at {weights}")
    result = set_peft_model_state_dict(model, load_file(weights))
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(f"checkpoint {folder} holds adapter weights this model does not have: {unexpected[:3]}")
    optimizer.load_state_dict(torch.load(folder / "optimizer.pt", weights_only=True))
    restore_rng_state(torch.load(folder / "rng.pt", weights_only=True))
    state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    return TrainerState(step=int(state["step"]), data_position=dict(state["data_position"]), config=state["config"])
