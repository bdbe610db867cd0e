"""The LoRA-wrapped model every trainer starts from: a fresh adapter, or the previous stage's adapter.

`attach_lora(base, config, init_adapter)` puts the base model on the run's device and dtype, wraps it with
a LoRA adapter of the config's shape and, when `init_adapter` is a saved adapter folder (a stage's
`adapter/`, or any `lora:` folder of the same shape), loads its weights strictly: a tensor the model lacks,
or a LoRA tensor the file does not hold, raises, so a chained stage never silently restarts from zero.
With `--autocast` the wrapped model's forward (every training forward: NLL, GRPO, DPO) runs under
`torch.autocast` in bfloat16 with float32 weights, gradients and AdamW state; generation, which PEFT sends to
the base model's own forward, stays float32. On the CPU it is refused where bfloat16 matmuls are slower than
float32 ones (`cpu_bf16_slowdown`, measured at start): without fast bfloat16 kernels PyTorch runs them slower,
up to about 77x on an AVX2-only AMD EPYC, which would turn a speed option into a run that never ends.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from drill.train.config import RunConfig


def run_device(config: RunConfig) -> tuple[torch.device, bool]:
    """The device and whether to use bfloat16, as `Run` decides them."""
    cuda = config.device == "cuda" or (config.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    return device, config.bf16 if config.bf16 is not None else device.type == "cuda"


def attach_lora(model: Any, config: RunConfig, init_adapter: Path | None = None) -> Any:
    """`model` (a base model of its own) wrapped with a LoRA adapter: fresh, or loaded from `init_adapter`, or
    else from the config's `init_adapter` (`--init-adapter`)."""
    from peft import LoraConfig, get_peft_model

    init_adapter = starting_adapter(config, init_adapter)

    device, bf16 = run_device(config)
    check_autocast(config)
    model = model.to(device=device, dtype=torch.bfloat16 if bf16 else torch.float32)
    model = get_peft_model(model, LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0,
                                             target_modules=list(config.lora_target_modules), task_type="CAUSAL_LM"))
    if config.autocast:  # this wrapper's forward only: the shared base model is left as it was
        model.forward = torch.autocast(device.type, dtype=torch.bfloat16)(model.forward)
    if init_adapter is not None:
        load_adapter_weights(model, init_adapter)
    return model


AUTOCAST_MAX_SLOWDOWN = 1.5  # bf16 / fp32 matmul time above which --autocast is refused on the CPU


def check_autocast(config: RunConfig) -> None:
    """Raise ValueError where `--autocast` cannot work as meant: with a bfloat16 model, or on a CPU whose bfloat16
    matmuls are slower than its float32 ones. `plan_run` calls it before any model loads."""
    if not config.autocast:
        return
    device, bf16 = run_device(config)
    if bf16:
        raise ValueError("--autocast runs a float32 model's matmuls in bfloat16; with --bf16 (the default on CUDA) "
                         "the weights are bfloat16 already. Pass --no-bf16 --autocast, or drop --autocast")
    if device.type == "cpu":
        slowdown = cpu_bf16_slowdown()
        if slowdown > AUTOCAST_MAX_SLOWDOWN:
            raise ValueError(f"--autocast: on this CPU ({torch.backends.cpu.get_cpu_capability()}) a bfloat16 matmul "
                             f"takes {slowdown:.1f}x as long as a float32 one (measured just now), so autocast would "
                             "slow training down, not speed it up. Drop --autocast")


@functools.cache
def cpu_bf16_slowdown(size: int = 384, repeats: int = 3) -> float:
    """How many times as long a `size` x `size` matmul takes in bfloat16 as in float32 on this CPU, with the
    torch threads of the first call (the best of `repeats` after a warm-up each; measured once per process, in
    about 0.3 s). About 0.5 on a Xeon with AMX and on an AMD EPYC with AVX512-BF16; 1.9 on a Xeon whose flags list
    AVX512-BF16 without AMX; far above 1 where PyTorch has no fast bfloat16 kernels
    for the CPU (28-77 on an AVX2-only AMD EPYC). The flag alone does not decide it: the measurement does."""
    def best(dtype: torch.dtype) -> float:
        a = torch.ones(size, size, dtype=dtype)
        a @ a
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            a @ a
            times.append(time.perf_counter() - start)
        return max(min(times), 1e-9)

    return best(torch.bfloat16) / best(torch.float32)


def lora_training(base: Any, config: RunConfig, init_adapter: Path | None = None) -> tuple[Any, list, Any, int]:
    """What every trainer updates, from a loaded base (`grpo.load_base`): `(model, params, optimizer, pad_id)` =
    the LoRA-wrapped model (`attach_lora`), its trainable parameters, AdamW over them at the config's learning
    rate and weight decay, and the tokenizer's pad id (0 when it has none)."""
    model = attach_lora(base.model, config, init_adapter)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    pad_id = base.tokenizer.pad_token_id if base.tokenizer.pad_token_id is not None else 0
    return model, params, optimizer, pad_id


def starting_adapter(config: RunConfig, init_adapter: Path | None) -> Path | None:
    """The saved adapter `attach_lora` loads for this run, or None for a fresh one."""
    return init_adapter if init_adapter is not None else Path(config.init_adapter) if config.init_adapter else None


class Reference:
    """The policy a stage started from, for the KL and DPO reference passes (`with run.reference():`).

    From a fresh adapter (its B matrices are zero) the start is the base model, reached by disabling the adapter, as
    before. From a saved adapter (`--stage` after an earlier stage, `--init-adapter`) the start is that adapter: the
    standard reference for RL after SFT. Penalising the KL to the base weights there pulls the policy back past
    everything SFT taught. A copy of its LoRA weights is kept (a few MB) and swapped in for the pass, then the current
    weights are put back. The swap writes the parameters in place, so it must not happen while a forward pass of them
    waits for its backward: autograd's version check then raises, so a misordered call fails loudly.
    """

    def __init__(self, model: Any, params: list[Any], started_from: Path | None) -> None:
        self.model, self.params, self.started_from = model, params, started_from
        self.start = None if started_from is None else [p.detach().clone() for p in params]

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        if self.start is None:
            with torch.no_grad(), self.model.disable_adapter():
                yield
            return
        with torch.no_grad():
            current = [p.detach().clone() for p in self.params]
            for param, start in zip(self.params, self.start, strict=True):
                param.copy_(start)
            try:
                yield
            finally:
                for param, now in zip(self.params, current, strict=True):
                    param.copy_(now)

    def describe(self) -> str:
        return "the base weights" if self.started_from is None else f"the starting adapter {self.started_from}"


def load_adapter_weights(model: Any, folder: Path) -> None:
    """Load a saved adapter's weights into `model`'s LoRA adapter, in place; every LoRA tensor must match."""
    from peft import get_peft_model_state_dict, set_peft_model_state_dict
    from safetensors.torch import load_file

    from drill.models.adapters import adapter_weights_file

    weights = load_file(adapter_weights_file(Path(folder)))
    expected = set(get_peft_model_state_dict(model))
    missing = sorted(expected - set(weights))
    if missing:
        raise ValueError(f"adapter {folder} lacks {len(missing)} LoRA tensors this run's adapter has (e.g. "
                         f"{missing[0]}); the previous stage must use the same LoRA rank and target modules")
    for name, tensor in weights.items():
        if name in expected and tuple(tensor.shape) != tuple(get_peft_model_state_dict(model)[name].shape):
            raise ValueError(f"adapter {folder}: {name} has shape {tuple(tensor.shape)}, this run's adapter "
                             f"{tuple(get_peft_model_state_dict(model)[name].shape)}; use the same LoRA rank")
    result = set_peft_model_state_dict(model, weights)
    unexpected = list(getattr(result, "unexpected_keys", []))
    if unexpected:
        raise ValueError(f"adapter {folder} holds tensors this model does not have: {unexpected[:3]}")
