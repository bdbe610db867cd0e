"""Packed turns (`samples.pack_turns`, SFT's pack=true): an episode's turns as one sequence give the same loss and
gradient as one sample per turn, and SFT batches them by turns."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from drill.train import BaseModel
from drill.train.lora import lora_training
from drill.train.rollouts import prompt_options
from drill.train.samples import Sample, collate, completion_logprobs, episode_samples, pack_turns
from drill.train.methods import train
from drill.train.methods.sft import Options as SFTOptions
from drill.train.methods.sft import source_episodes, step_plan
from drill.train.sources import teacher_prompter
from test_train_loop import tiny_base  # type: ignore[import-not-found]
from test_train_sft import WRITING, _config  # type: ignore[import-not-found]

pytestmark = pytest.mark.slow
__all__ = ["tiny_base"]  # a fixture, used by name


def _writer_samples(tiny_model_dir: Path, tiny_base: BaseModel, tmp_path: Path) -> list[Sample]:
    config = _config(tiny_model_dir, tmp_path / "run")
    prompter = teacher_prompter(tiny_base.model, tiny_base, prompt_options(config, WRITING))
    episodes = source_episodes(config, SFTOptions(source="oracle"), WRITING, ["writer"], prompter)
    return [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {"writer": 1.0})]


def _loss_and_grads(model: torch.nn.Module, samples: list[Sample]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    batch = collate(samples, pad_id=0)
    logprobs = completion_logprobs(model, batch, 1.0)  # (B, T)
    loss = -(logprobs * batch.completion_mask).sum()
    loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    return logprobs[batch.completion_mask.bool()].detach(), [p.grad.clone() for p in params]


def test_packed_turns_give_each_token_the_same_logprob_and_gradient(tiny_model_dir: Path, tiny_base: BaseModel,
                                                                   tmp_path: Path) -> None:
    samples = _writer_samples(tiny_model_dir, tiny_base, tmp_path)  # 4 training tasks x 2 writer turns
    packed = pack_turns(samples)
    assert [s.turns for s in packed] == [2, 2, 2, 2]
    for first, second, both in zip(samples[::2], samples[1::2], packed):
        assert both.prompt_ids == second.prompt_ids
        assert both.trained_ids == first.completion_ids + second.completion_ids
        assert both.inner == ((len(first.prompt_ids), len(first.prompt_ids) + len(first.completion_ids)),)
    tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    assert sum(len(s.prompt_ids) + len(s.completion_ids) for s in packed) < 0.75 * tokens

    config = _config(tiny_model_dir, tmp_path / "run", learning_rate=3e-2, device="cpu")
    model = lora_training(tiny_base, config)[0]
    torch.nn.init.normal_(next(p for n, p in model.named_parameters() if "lora_B" in n))  # a non-zero adapter
    # a packed sample padded next to a plain one of another length, against one sample per turn
    mixed = [packed[0], samples[2]]
    plain = [samples[0], samples[1], samples[2]]
    batch = collate(mixed, pad_id=0)
    mask = batch.completion_mask.bool()
    predicted = batch.input_ids.gather(1, (batch.logit_positions + 1).clamp(max=batch.input_ids.shape[1] - 1))
    assert torch.equal(predicted[mask], batch.completion_ids[mask])  # each logit predicts the token it is scored on
    assert int(batch.loss_mask[0].sum()) == len(packed[0].trained_ids)
    packed_logprobs, packed_grads = _loss_and_grads(model, mixed)
    plain_logprobs, plain_grads = _loss_and_grads(model, plain)
    assert torch.allclose(packed_logprobs, plain_logprobs, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(packed_grads, plain_grads))


def test_only_a_prompt_that_extends_the_last_turn_is_packed(tiny_model_dir: Path, tiny_base: BaseModel,
                                                            tmp_path: Path) -> None:
    first, second = _writer_samples(tiny_model_dir, tiny_base, tmp_path)[:2]
    dropped = replace(second, prompt_ids=second.prompt_ids[:5] + second.prompt_ids[6:])  # history shortened
    assert pack_turns([first, dropped]) == [first, dropped]
    assert pack_turns([first, replace(second, episode=7)]) == [first, replace(second, episode=7)]
    assert pack_turns([first, replace(second, advantage=-1.0)]) == [first, replace(second, advantage=-1.0)]


def test_step_plan_cuts_batches_by_turns_and_covers_every_sample_each_epoch(tiny_model_dir: Path,
                                                                           tiny_base: BaseModel,
                                                                           tmp_path: Path) -> None:
    samples = _writer_samples(tiny_model_dir, tiny_base, tmp_path)
    plain = step_plan(samples, 3, seed=0, epochs=2)
    assert [len(b) for _, b in plain] == [3, 3, 2, 3, 3, 2]  # unpacked: plain batches of batch_size samples
    packed = pack_turns(samples)
    plan = step_plan(packed, 3, seed=0, epochs=2)
    assert [e for e, _ in plan] == [0, 0, 1, 1]
    for epoch in (0, 1):
        batches = [b for e, b in plan if e == epoch]
        assert sorted(i for b in batches for i in b) == [0, 1, 2, 3]
        assert all(sum(packed[i].turns for i in b) >= 3 for b in batches[:-1])


def test_sft_with_packed_turns_trains_on_every_turn(tiny_model_dir: Path, tiny_base: BaseModel,
                                                    tmp_path: Path) -> None:
    config = _config(tiny_model_dir, tmp_path / "run", learning_rate=3e-2)
    result = train(config, "sft", SFTOptions(source="oracle", epochs=3, batch_size=4, pack=True), target=WRITING,
                   base=tiny_base)
    assert [(r["samples"], r["sequences"]) for r in result.metrics] == [(4, 2)] * 6
    losses = [r["loss"] for r in result.metrics]
    assert losses[-1] < losses[0] - 0.05
