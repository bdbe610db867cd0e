"""Prefix caching for the local backend: the next turn of an episode skips the prompt it has already read.

A multi-turn episode's prompt for turn k+1 starts with its prompt for turn k (the same system prompt, the same
earlier messages), and every prompt of an environment starts with the same system prompt. On the CPU the prompt
is most of the cost of a turn: an inbox roll-in of SmolLM2-135M spent 81% of its time in the prefill
(`benchmarks/prefix_cache_speed.py`). `PrefixCache` keeps the key/value tensors of the rows a model has generated
(prompt and reply), keyed by their token ids; `TransformersChatModel.generate_ids` looks up the longest stored
prefix of each new prompt, hands those tensors to `model.generate` as its cache, and computes only the rest.

* Exact by construction: the keys and values at positions < L depend only on tokens < L, so a stored row is
  reused up to its longest common prefix with the new prompt (a reply re-rendered from the parsed call, which
  can differ from the sampled tokens, is reused up to the first token that differs). The numbers differ from a
  full prefill only by float summation order (greedy rows match token for token in the tests).
* Rows are laid out as [pad][reused prefix][pad][new tokens] with the attention mask zero on the pads;
  transformers computes position ids from the mask's cumulative sum, so every token keeps its position.
* Only for a model whose weights do not change: a loaded model or adapter (`load_local`, `load_lora`), never one
  being trained (the trainers build their own `TransformersChatModel` without it), since a stored key would go
  stale after an optimizer step.
* Bounded by bytes (`DRILL_PREFIX_CACHE_MB`, default 2048 per model; 0 turns it off): a row whose prompt extends
  a stored one replaces it, and the least recently used rows go first. When one batch's rows alone outgrow the
  budget, their next turns find little of it and prefill their whole prompts again (32 rows of an inbox adapter
  that loops for all ten turns: a few thousand tokens each, about 46 KB a token on SmolLM2-135M); the model warns
  once.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_REUSE = 16
"""Prefixes shorter than this are computed again: not worth a cache lookup and a wider batch."""


def default_max_bytes() -> int:
    """`DRILL_PREFIX_CACHE_MB` in bytes (default 2048 MB); ValueError naming the variable when it is not a number."""
    raw = os.environ.get("DRILL_PREFIX_CACHE_MB", "2048")
    try:
        megabytes = float(raw)
    except ValueError:
        raise ValueError(f"DRILL_PREFIX_CACHE_MB={raw!r}: expected a number of megabytes (0 turns the cache off)")
    if megabytes < 0:
        raise ValueError(f"DRILL_PREFIX_CACHE_MB={raw!r}: must be 0 or more")
    return int(megabytes * 2**20)


@dataclass
class Entry:
    ids: np.ndarray
    """The row's tokens, (T,)."""
    layers: list[tuple[Any, Any]]
    """Per layer, the keys and values of those tokens, each (H, T, D)."""
    nbytes: int


class PrefixCache:
    """Recent rows' keys and values by token ids, least recently used first out. Counts what it saved."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[int, Entry] = OrderedDict()
        self.nbytes = 0
        self._next = 0
        self.prompt_tokens = 0
        """Prompt tokens looked up so far, and of those, `reused_tokens` were not computed again."""
        self.reused_tokens = 0

    def lookup(self, prompt: list[int]) -> tuple[Entry | None, int]:
        """The stored row sharing the longest prefix with `prompt`, and that length (at most len(prompt) - 1, so
        the last prompt token is always computed and gives the first reply token's logits); (None, 0) when
        no row shares MIN_REUSE tokens."""
        self.prompt_tokens += len(prompt)
        ids = np.asarray(prompt, dtype=np.int64)
        best, best_key, length = None, None, 0
        for key, entry in self.entries.items():
            n = min(len(entry.ids), len(ids) - 1)
            if n <= length:
                continue
            differ = np.flatnonzero(entry.ids[:n] != ids[:n])
            common = int(differ[0]) if differ.size else n
            if common > length:
                best, best_key, length = entry, key, common
        if best is None or length < MIN_REUSE:
            return None, 0
        self.entries.move_to_end(best_key)
        self.reused_tokens += length
        return best, length

    def add(self, ids: list[int], layers: list[tuple[Any, Any]]) -> int:
        """Store a row; rows it extends (their tokens are its prefix) are dropped, then the oldest beyond the
        byte budget. Returns the row's bytes (a row larger than the whole budget is not stored)."""
        array = np.asarray(ids, dtype=np.int64)
        nbytes = layers_nbytes(layers)
        if nbytes > self.max_bytes:
            return nbytes
        for key in [k for k, e in self.entries.items()
                    if len(e.ids) <= len(array) and np.array_equal(e.ids, array[:len(e.ids)])]:
            self._drop(key)
        self.entries[self._next] = Entry(array, layers, nbytes)
        self._next += 1
        self.nbytes += nbytes
        while self.nbytes > self.max_bytes:
            self._drop(next(iter(self.entries)))
        return nbytes

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0

    def _drop(self, key: int) -> None:
        self.nbytes -= self.entries.pop(key).nbytes


def plain_dynamic_cache(model: Any) -> bool:
    """Whether the model's cache is one plain `DynamicLayer` per layer (no sliding window, no linear attention),
    the only layout a stored prefix is handed back in."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    config = getattr(model, "config", None)
    if config is None:
        return False
    try:
        cache = DynamicCache(config=config)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)


def prefill_entry(model: Any, ids: list[int]) -> Entry:
    """`ids` run through `model` once (one row, no padding), kept as an `Entry`: the keys and values a row
    starting with these tokens would compute. The caller holds the model in eval and inference mode."""
    import torch

    device = next(model.parameters()).device
    out = model(input_ids=torch.tensor([ids], dtype=torch.long, device=device), use_cache=True, logits_to_keep=1)
    layers = [(layer.keys[0], layer.values[0]) for layer in out.past_key_values.layers]  # each (H, T, D)
    return Entry(np.asarray(ids, dtype=np.int64), layers, layers_nbytes(layers))


def layers_nbytes(layers: list[tuple[Any, Any]]) -> int:
    """Bytes held by per-layer (keys, values) tensors."""
    return sum(k.element_size() * k.nelement() + v.element_size() * v.nelement() for k, v in layers)


def batched_cache(reused: list[tuple[Entry | None, int]], width: int) -> Any:
    """A DynamicCache of `width` positions for the batch: row i's reused prefix right-aligned, zeros before it
    (masked out by the caller's attention mask)."""
    import torch
    from transformers import DynamicCache

    template = next(entry for entry, _ in reused if entry is not None)
    layers = []
    for index, (key0, value0) in enumerate(template.layers):
        heads, _, dim = key0.shape
        keys = key0.new_zeros((len(reused), heads, width, dim))  # (B, H, P, D)
        values = value0.new_zeros((len(reused), heads, width, value0.shape[-1]))  # (B, H, P, D)
        for row, (entry, length) in enumerate(reused):
            if entry is not None:
                key, value = entry.layers[index]
                keys[row, :, width - length:] = key[:, :length]
                values[row, :, width - length:] = value[:, :length]
        layers.append((keys, values))
    with torch.no_grad():
        return DynamicCache(ddp_cache_data=layers)


def row_layers(cache: Any, row: int, columns: Any) -> list[tuple[Any, Any]]:
    """Row `row`'s keys and values at `columns` (a 1-D index tensor) from a generate call's cache, as copies."""
    return [(layer.keys[row].index_select(1, columns).clone(), layer.values[row].index_select(1, columns).clone())
            for layer in cache.layers]
