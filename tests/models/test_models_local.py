"""The local backend on the embedded model: batched left-padded generation returns exact per-row tokens."""

from __future__ import annotations

import pytest

from drill.models import SamplingParams
from drill.models.local import EMBEDDED_MODEL_ID, TransformersChatModel, canonical_model_id, embedded_model_folder

CONVERSATIONS = [
    [{"role": "user", "content": "What is 2 + 2? Answer with the number only."}],
    [{"role": "system", "content": "You are an SRE. Be brief."},
     {"role": "user", "content": "The database pods are crash-looping after the 14:02 deploy and the auth service "
                                 "reports timeouts. List three things to check, one line each."}],
    [{"role": "user", "content": "Name a colour."}],
]


def test_the_embedded_model_has_one_stable_id_however_it_is_named() -> None:
    folder = embedded_model_folder()
    names = [EMBEDDED_MODEL_ID, "embedded", str(folder), str(folder / "SmolLM2-135M-Instruct.Q4_1.gguf")]
    assert {canonical_model_id(name) for name in names} == {EMBEDDED_MODEL_ID}


@pytest.mark.slow
def test_batched_generation_matches_each_row_alone_and_a_forward_pass(embedded_model: TransformersChatModel) -> None:
    import torch

    model = embedded_model
    assert model.model_id == EMBEDDED_MODEL_ID and not model.native_tools, "SmolLM2's template has no tools"
    greedy = SamplingParams(max_new_tokens=24, temperature=0)
    rng_before = torch.random.get_rng_state()
    batch = model.generate(CONVERSATIONS, None, greedy)

    for conversation, row in zip(CONVERSATIONS, batch):
        # Prompts come back unpadded, exactly as the template renders them.
        assert row.prompt_token_ids == model.prompt_token_ids(conversation, None)
        assert row.prompt_token_ids[0] != model.pad_token_id
        # Left padding changes nothing: the row alone samples the same tokens.
        [alone] = model.generate([conversation], None, greedy)
        assert alone.token_ids == row.token_ids and alone.text == row.text
        # Logprobs are the raw model's, token for token, as a training forward pass computes them.
        with torch.inference_mode():
            logits = model.model(torch.tensor([row.prompt_token_ids + row.token_ids])).logits[0]  # (T, V)
        expected = torch.log_softmax(logits[len(row.prompt_token_ids) - 1:-1].float(), -1)
        expected = expected.gather(1, torch.tensor(row.token_ids)[:, None]).squeeze(1)  # (N,)
        assert torch.allclose(expected, torch.tensor(row.logprobs), atol=1e-3)
        assert len(row.logprobs) == len(row.token_ids) and row.model == EMBEDDED_MODEL_ID

    short = batch[0]
    assert short.finish_reason == "stop" and short.token_ids[-1] in model.stop_token_ids
    assert "4" in short.text and "<|im_end|>" not in short.text
    long = batch[1]
    assert long.finish_reason == "length" and len(long.token_ids) == greedy.max_new_tokens
    assert long.text == model.tokenizer.decode(long.token_ids)

    # Seeded sampling is reproducible, differs across seeds, and leaves the global RNG alone.
    sampled = SamplingParams(max_new_tokens=16, temperature=1.0, seed=7)
    first = [g.token_ids for g in model.generate(CONVERSATIONS, None, sampled)]
    assert first == [g.token_ids for g in model.generate(CONVERSATIONS, None, sampled)]
    other = SamplingParams(max_new_tokens=16, temperature=1.0, seed=8)
    assert first != [g.token_ids for g in model.generate(CONVERSATIONS, None, other)]
    assert torch.equal(rng_before, torch.random.get_rng_state())

    # A stop string ends the row on the token that completes it; the model's train/eval mode is kept.
    model.model.train()
    [stopped] = model.generate([CONVERSATIONS[1]], None, SamplingParams(max_new_tokens=40, temperature=0, stop=(".",)))
    assert model.model.training
    model.model.eval()
    assert stopped.finish_reason == "stop" and "." in stopped.text
    assert "." not in model.tokenizer.decode(stopped.token_ids[:-1])


@pytest.mark.slow
def test_the_embedded_models_cached_copy_is_the_gguf_model_bit_for_bit(embedded_model: TransformersChatModel) -> None:
    """A start reads the dequantized copy under the cache (seconds), not the GGUF file (about 20 s): same tensors,
    same tokenizer and chat template, same config."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from drill.cache import cache_dir
    from drill.models.local import EMBEDDED_GGUF, embedded_copy

    folder = embedded_copy()
    assert folder is not None and folder.parent == cache_dir() / "models" and (folder / "complete").is_file()
    assert embedded_copy() == folder  # built once, then reused
    gguf_model = AutoModelForCausalLM.from_pretrained(embedded_model_folder(), gguf_file=EMBEDDED_GGUF)
    gguf_tokenizer = AutoTokenizer.from_pretrained(embedded_model_folder(), gguf_file=EMBEDDED_GGUF)
    expected, loaded = gguf_model.state_dict(), embedded_model.model.state_dict()
    assert expected.keys() == loaded.keys()
    assert all(torch.equal(expected[k], loaded[k]) and loaded[k].dtype == expected[k].dtype for k in expected)
    copy_tokenizer = AutoTokenizer.from_pretrained(folder)
    assert copy_tokenizer.chat_template == gguf_tokenizer.chat_template
    for conversation in CONVERSATIONS:
        assert (copy_tokenizer.apply_chat_template(conversation, add_generation_prompt=True)
                == gguf_tokenizer.apply_chat_template(conversation, add_generation_prompt=True))
    drop = {"_name_or_path", "quantization_config"}  # the copy holds float32 tensors: it does not claim to be GGUF
    assert "quantization_config" not in embedded_model.model.config.to_dict()
    assert ({k: v for k, v in gguf_model.config.to_dict().items() if k not in drop}
            == {k: v for k, v in embedded_model.model.config.to_dict().items() if k not in drop})


def test_an_unwritable_cache_falls_back_to_the_gguf_file_with_a_warning(tmp_path, monkeypatch) -> None:
    from drill.models.local import embedded_copy

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DRILL_CACHE", str(blocker))
    with pytest.warns(UserWarning, match="cannot keep a dequantized copy of the embedded model"):
        assert embedded_copy() is None
    assert blocker.read_text() == "not a folder"


def test_large_buffers_come_from_the_reused_heap_once_a_local_model_runs() -> None:
    """A decoding step reallocates every layer's key/value cache; above glibc's default mmap threshold each such
    buffer would be fresh pages, every 4 KB of them a page fault. After `keep_large_buffers_in_heap` a 60 MB buffer
    allocated and freed again and again reuses the same memory."""
    import os
    import platform
    import resource

    import torch

    from drill.models.local import keep_large_buffers_in_heap

    if platform.libc_ver()[0] != "glibc" or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        pytest.skip("glibc only, and only where the threshold is not the user's own setting")
    assert keep_large_buffers_in_heap() and keep_large_buffers_in_heap()  # once per process, the same answer after
    pages = 60 * 2**20 // resource.getpagesize()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(40):
        buffer = torch.empty(60 * 2**20 // 4)
        buffer.fill_(1.0)
        del buffer
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 40
    assert faults < pages / 4, f"{faults:.0f} page faults per buffer of {pages} pages"
