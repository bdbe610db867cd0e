"""GRPO math against hand-computed values: advantages, clipping, k3 KL, and the two loss reductions."""

from __future__ import annotations

import math

import pytest
import torch

from drill.train.objective import clipped_surrogate, group_advantages, grpo_loss, is_zero_variance, kl_k3, reduce_tokens


def test_group_advantages_standardise_with_the_sample_std() -> None:
    # mean 2.5; centred -1.5 -0.5 0.5 1.5; sample std sqrt(5/3) = 1.2909944
    adv = group_advantages(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64), "group")
    expected = [c / (1.2909944487358056 + 1e-4) for c in (-1.5, -0.5, 0.5, 1.5)]
    assert adv.tolist() == pytest.approx(expected, abs=1e-9)
    assert expected[3] == pytest.approx(1.16180, abs=1e-5)


def test_group_advantages_none_only_centre() -> None:
    adv = group_advantages(torch.tensor([0.0, 1.0, 5.0]), "none")
    assert adv.tolist() == pytest.approx([-2.0, -1.0, 3.0])


@pytest.mark.parametrize("scaling", ["group", "none"])
def test_zero_variance_group_gets_exactly_zero(scaling: str) -> None:
    rewards = torch.tensor([0.7, 0.7, 0.7])
    assert is_zero_variance(rewards)
    assert group_advantages(rewards, scaling).tolist() == [0.0, 0.0, 0.0]  # type: ignore[arg-type]
    assert not is_zero_variance(torch.tensor([0.7, 0.7, 0.7001]))


def test_group_advantages_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        group_advantages(torch.tensor([1.0]), "group")
    with pytest.raises(ValueError, match="unknown advantage scaling"):
        group_advantages(torch.tensor([1.0, 2.0]), "rank")  # type: ignore[arg-type]


def test_k3_kl_by_hand() -> None:
    lp = torch.tensor([[math.log(0.5), math.log(0.2)]])
    ref = torch.tensor([[math.log(0.25), math.log(0.2)]])
    # log r = log(0.25/0.5) = -0.693147; exp(log r) - log r - 1 = 0.5 + 0.693147 - 1
    assert kl_k3(lp, ref).tolist()[0] == pytest.approx([0.5 + math.log(2) - 1, 0.0], abs=1e-6)
    assert (kl_k3(torch.randn(4, 5), torch.randn(4, 5)) >= 0).all()


def test_clipped_surrogate_by_hand() -> None:
    old = torch.zeros(4, 1)
    lp = torch.log(torch.tensor([[1.5], [1.5], [0.5], [0.5]]))
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    loss, binds = clipped_surrogate(lp, old, adv, clip_epsilon=0.2)
    # r=1.5,A=+1: min(1.5, 1.2) -> -1.2 clipped | r=1.5,A=-1: min(-1.5,-1.2) -> 1.5 not clipped
    # r=0.5,A=+1: min(0.5, 0.8) -> -0.5 not clipped | r=0.5,A=-1: min(-0.5,-0.8) -> 0.8 clipped
    assert loss.squeeze(1).tolist() == pytest.approx([-1.2, 1.5, -0.5, 0.8], abs=1e-6)
    assert binds.squeeze(1).tolist() == [True, False, False, True]


def test_reductions_by_hand() -> None:
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    # grpo: (mean(1,2,3) + mean(4)) / 2 = (2 + 4) / 2
    assert float(reduce_tokens(per_token, mask, "grpo", num_samples=2, max_new_tokens=4)) == pytest.approx(3.0)
    # dr_grpo: (1+2+3+4) / (2 * 4)
    assert float(reduce_tokens(per_token, mask, "dr_grpo", num_samples=2, max_new_tokens=4)) == pytest.approx(1.25)


def test_micro_batches_sum_to_the_full_batch_loss() -> None:
    torch.manual_seed(0)
    lp, old, ref = torch.randn(6, 5), torch.randn(6, 5), torch.randn(6, 5)
    adv = torch.randn(6)
    mask = (torch.rand(6, 5) > 0.3).long()
    mask[:, 0] = 1
    for loss_type in ("grpo", "dr_grpo"):
        kwargs = dict(loss_type=loss_type, clip_epsilon=0.2, kl_beta=0.1, num_samples=6, max_new_tokens=5)
        full = grpo_loss(lp, old, ref, adv, mask, **kwargs).loss  # type: ignore[arg-type]
        parts = sum(grpo_loss(lp[i:i + 2], old[i:i + 2], ref[i:i + 2], adv[i:i + 2], mask[i:i + 2],
                              **kwargs).loss for i in (0, 2, 4))  # type: ignore[arg-type]
        assert float(parts) == pytest.approx(float(full), rel=1e-6)


def test_gradient_at_ratio_one_is_advantage_weighted_and_length_normalised() -> None:
    # At the first update logprobs == old logprobs: d loss / d lp_t = -A / (n_tokens_of_sample * num_samples) for grpo
    lp = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, 0.0, 0.0]], requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    terms = grpo_loss(lp, lp.detach(), None, torch.tensor([2.0, -1.0]), mask, loss_type="grpo", clip_epsilon=0.2,
                      kl_beta=0.0, num_samples=2, max_new_tokens=3)
    terms.loss.backward()
    assert lp.grad is not None
    assert lp.grad.flatten().tolist() == pytest.approx([-0.5, -0.5, 0.0, 0.5, 0.0, 0.0])
    assert terms.tokens == 3 and terms.clipped_tokens == 0 and terms.kl_sum == 0.0
    # dr_grpo: every token weighs -A / (num_samples * max_new_tokens), whatever the answer's length
    lp.grad = None
    grpo_loss(lp, lp.detach(), None, torch.tensor([2.0, -1.0]), mask, loss_type="dr_grpo", clip_epsilon=0.2,
              kl_beta=0.0, num_samples=2, max_new_tokens=3).loss.backward()
    assert lp.grad.flatten().tolist() == pytest.approx([-1 / 3, -1 / 3, 0.0, 1 / 6, 0.0, 0.0])


def test_kl_term_adds_beta_times_k3_and_is_zero_at_the_reference() -> None:
    lp = torch.tensor([[math.log(0.5)]])
    ref = torch.tensor([[math.log(0.25)]])
    zero_adv = torch.tensor([0.0])
    terms = grpo_loss(lp, lp, ref, zero_adv, torch.ones(1, 1), loss_type="grpo", clip_epsilon=0.2, kl_beta=0.1,
                      num_samples=1, max_new_tokens=1)
    assert float(terms.loss) == pytest.approx(0.1 * (0.5 + math.log(2) - 1), abs=1e-6)
    assert terms.kl_sum == pytest.approx(0.5 + math.log(2) - 1, abs=1e-6)
    same = grpo_loss(lp, lp, lp, zero_adv, torch.ones(1, 1), loss_type="grpo", clip_epsilon=0.2, kl_beta=0.1,
                     num_samples=1, max_new_tokens=1)
    assert float(same.loss) == 0.0
    with pytest.raises(ValueError, match="reference"):
        grpo_loss(lp, lp, None, zero_adv, torch.ones(1, 1), loss_type="grpo", clip_epsilon=0.2, kl_beta=0.1,
                  num_samples=1, max_new_tokens=1)
