"""Prefix caching in the local backend: a later turn reuses the keys and values of the turn before it, and
generates exactly what a full prefill generates."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from drill.models import SamplingParams
from drill.models.adapters import load_lora
from drill.models.local import TransformersChatModel
from drill.models.prefix_cache import MIN_REUSE, PrefixCache, default_max_bytes

SYSTEM = {"role": "system", "content": "You answer questions about the on-call rota of a small SRE team. " * 4}
QUESTIONS = ["Who is on call on Saturday?", "List three things to check when the database pods crash-loop, "
                                            "one line each.", "Name a colour."]


def fake_layers(tokens: int, layers: int = 2) -> list[tuple[object, object]]:
    import torch

    return [(torch.full((1, tokens, 2), float(i)), torch.full((1, tokens, 2), float(i))) for i in range(layers)]


def test_lookup_finds_the_longest_shared_prefix_and_always_leaves_a_token_to_compute() -> None:
    cache = PrefixCache(max_bytes=10**6)
    base = list(range(100, 140))
    cache.add(base, fake_layers(len(base)))
    cache.add(base[:20] + [7] * 30, fake_layers(50))
    entry, length = cache.lookup(base + [1, 2, 3])
    assert length == 40 and list(entry.ids) == base
    entry, length = cache.lookup(base)  # the same prompt again: its last token is computed for the first logits
    assert length == 39 and list(entry.ids) == base
    entry, length = cache.lookup(base[:25] + [9] * 10)  # diverges after 25 tokens from both entries
    assert length == 25
    assert cache.lookup(base[:MIN_REUSE - 1] + [5] * 40) == (None, 0)  # too short a prefix to bother
    assert cache.lookup([1, 2, 3]) == (None, 0)
    assert cache.reused_tokens == 40 + 39 + 25 and cache.prompt_tokens == 43 + 40 + 35 + 55 + 3


def test_a_row_replaces_the_row_it_extends_and_the_byte_budget_evicts_the_least_recently_used() -> None:
    one_row = sum(k.element_size() * k.nelement() * 2 for k, _ in fake_layers(30))
    cache = PrefixCache(max_bytes=2 * one_row)
    cache.add(list(range(30)), fake_layers(30))
    cache.add(list(range(20)) + [99] * 10, fake_layers(30))
    assert len(cache.entries) == 2 and cache.nbytes == 2 * one_row
    cache.lookup(list(range(30)) + [1])  # the first row is now the most recently used
    cache.add([5] * 30, fake_layers(30))  # over budget: the second row goes
    assert [list(e.ids)[:21] for e in cache.entries.values()] == [list(range(21)), [5] * 21]
    cache.add(list(range(30)), fake_layers(30))  # the same tokens again replace the stored row, no duplicate
    assert len(cache.entries) == 2 and cache.nbytes == 2 * one_row
    cache.add(list(range(200)), fake_layers(200))  # larger than the whole budget: not stored, nothing evicted
    assert len(cache.entries) == 2


def test_the_budget_comes_from_the_environment_with_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("DRILL_PREFIX_CACHE_MB", "1.5")
    assert default_max_bytes() == int(1.5 * 2**20)
    monkeypatch.setenv("DRILL_PREFIX_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="DRILL_PREFIX_CACHE_MB='lots'"):
        default_max_bytes()
    monkeypatch.setenv("DRILL_PREFIX_CACHE_MB", "-1")
    with pytest.raises(ValueError, match="0 or more"):
        default_max_bytes()


def two_turns(model: TransformersChatModel, greedy: SamplingParams) -> tuple[list, list]:
    """The questions, then each conversation continued with its reply (one re-rendered with different words,
    as a parsed and re-rendered tool call can be) and a follow-up."""
    first = model.generate([[SYSTEM, {"role": "user", "content": q}] for q in QUESTIONS], None, greedy)
    replies = [g.text for g in first]
    replies[1] = "Check the deploy, the logs and the disk."
    second = [[SYSTEM, {"role": "user", "content": q}, {"role": "assistant", "content": r},
               {"role": "user", "content": "And on Sunday?"}] for q, r in zip(QUESTIONS, replies)]
    return first, second


@pytest.mark.slow
def test_a_later_turn_reuses_the_earlier_prefill_and_generates_what_a_full_prefill_does(
        embedded_model: TransformersChatModel, lora_adapter_maker, tmp_path) -> None:
    import torch

    lora_adapter_maker(tmp_path / "adapter")
    adapter, _ = load_lora(tmp_path / "adapter")
    greedy = SamplingParams(max_new_tokens=24, temperature=0)
    for model in (embedded_model, adapter):
        cache = model.prefix_cache
        assert cache is not None, "loaded models and adapters keep a prefix cache"
        cache.clear()
        first, second = two_turns(model, greedy)
        reused_before, looked_up_before = cache.reused_tokens, cache.prompt_tokens
        cached = model.generate(second, None, greedy)
        prompts = [model.prompt_token_ids(c, None) for c in second]
        # Every row reused at least its first turn's prompt (the changed reply only from where it differs).
        assert cache.reused_tokens - reused_before >= sum(len(g.prompt_token_ids) for g in first)
        assert cache.prompt_tokens - looked_up_before == sum(len(p) for p in prompts)

        model.prefix_cache = None
        try:
            full = model.generate(second, None, greedy)
        finally:
            model.prefix_cache = cache
        for with_cache, without in zip(cached, full):
            assert with_cache.prompt_token_ids == without.prompt_token_ids
            assert with_cache.token_ids == without.token_ids and with_cache.text == without.text
            assert np.allclose(with_cache.logprobs, without.logprobs, atol=1e-3)
        # The logprobs are still those of a forward pass over the whole row.
        row = cached[0]
        with torch.inference_mode():
            logits = model.model(torch.tensor([row.prompt_token_ids + row.token_ids])).logits[0]  # (T, V)
        expected = torch.log_softmax(logits[len(row.prompt_token_ids) - 1:-1].float(), -1)
        expected = expected.gather(1, torch.tensor(row.token_ids)[:, None]).squeeze(1)  # (N,)
        assert torch.allclose(expected, torch.tensor(row.logprobs), atol=1e-3)


@pytest.mark.slow
def test_a_model_built_for_training_keeps_no_prefix_cache(embedded_model: TransformersChatModel) -> None:
    trainee = TransformersChatModel(embedded_model.model, embedded_model.tokenizer, embedded_model.model_id)
    assert trainee.prefix_cache is None
    greedy = SamplingParams(max_new_tokens=4, temperature=0)
    assert trainee.generate([[SYSTEM, {"role": "user", "content": QUESTIONS[2]}]], None, greedy)[0].token_ids


def test_rows_repeating_a_prompt_share_one_prefill_and_generate_what_separate_prefills_do(
        embedded_model: TransformersChatModel, monkeypatch) -> None:
    """A GRPO group: G rows of one prompt in one batch, on a model built for training (no prefix cache). The
    prompt but its last token is computed once per distinct prompt; greedy rows are token for token those of a
    batch that prefills every row itself, and the model is handed back in the mode it was in."""
    import drill.models.local as local

    trainee = TransformersChatModel(embedded_model.model, embedded_model.tokenizer, embedded_model.model_id)
    assert trainee.prefix_cache is None and trainee.shared_prefill
    calls: list[int] = []
    real = local.prefill_entry
    monkeypatch.setattr(local, "prefill_entry", lambda model, ids: calls.append(len(ids)) or real(model, ids))
    conversations = [[SYSTEM, {"role": "user", "content": q}] for q in (QUESTIONS[0], QUESTIONS[2], QUESTIONS[0],
                                                                       QUESTIONS[1], QUESTIONS[0], QUESTIONS[2])]
    greedy = SamplingParams(max_new_tokens=12, temperature=0)
    was_training = trainee.model.training
    trainee.model.train()
    try:
        shared = trainee.generate(conversations, None, greedy)
        assert trainee.model.training, "generation hands the model back in training mode"
        prompts = {tuple(trainee.prompt_token_ids(c, None)) for c in conversations}
        assert sorted(calls) == sorted(len(p) - 1 for p in prompts if p != tuple(trainee.prompt_token_ids(
            conversations[3], None)))  # QUESTIONS[1] occurs once: its row prefills itself
        trainee.shared_prefill = False
        separate = trainee.generate(conversations, None, greedy)
    finally:
        trainee.model.train(was_training)
    assert len(calls) == 2
    for one, other in zip(shared, separate):
        assert one.prompt_token_ids == other.prompt_token_ids
        assert one.token_ids == other.token_ids and one.text == other.text
        assert np.allclose(one.logprobs, other.logprobs, atol=1e-3)
    assert shared[0].token_ids == shared[2].token_ids == shared[4].token_ids


def test_an_evaluation_empties_every_prefix_cache_when_a_policy_is_done(
        embedded_model: TransformersChatModel) -> None:
    from drill.models.local import clear_prefix_caches

    cache = embedded_model.prefix_cache
    assert cache is not None
    embedded_model.generate([[SYSTEM, {"role": "user", "content": QUESTIONS[0]}]], None,
                            SamplingParams(max_new_tokens=2, temperature=0))
    assert cache.entries and cache.nbytes > 0  # the row just generated is kept for its next turn
    clear_prefix_caches()
    assert not cache.entries and cache.nbytes == 0


def test_a_batch_that_outgrows_the_prefix_cache_is_warned_about_once(embedded_model: TransformersChatModel) -> None:
    cache = embedded_model.prefix_cache
    assert cache is not None
    greedy = SamplingParams(max_new_tokens=2, temperature=0)
    conversations = [[SYSTEM, {"role": "user", "content": q}] for q in QUESTIONS[:2]]
    embedded_model.prefix_cache = PrefixCache(max_bytes=2**20)  # a row of ~60 tokens holds ~2.7 MB here
    try:
        with pytest.warns(UserWarning, match=r"one batch's 2 rows hold \d+ MB .* more than the prefix cache's 1 MB"
                                             r".*DRILL_PREFIX_CACHE_MB"):
            embedded_model.generate(conversations, None, greedy)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            embedded_model.generate(conversations, None, greedy)  # once per model
    finally:
        embedded_model.prefix_cache = cache
        embedded_model._cache_outgrown = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embedded_model.generate(conversations, None, greedy)  # rows that fit the budget: no warning
