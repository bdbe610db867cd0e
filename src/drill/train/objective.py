"""The GRPO objective as small pure tensor functions: advantages, the clipped surrogate, k3 KL, reduction.

Shapes: G episodes in a group, B samples (one per model turn) in a batch, T completion tokens (padded).
Each function is unit-tested against hand-computed values in tests/train/test_train_objective.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

LossType = Literal["grpo", "dr_grpo"]
AdvantageScaling = Literal["group", "none"]

STD_EPSILON = 1e-4
"""Added to the group's standard deviation before dividing (as in TRL), so near-ties do not explode."""


def group_advantages(rewards: Tensor, scaling: AdvantageScaling) -> Tensor:
    """Group-relative advantages for one group of G rewards. # (G,) -> (G,)

    `group`: (r - mean) / (std + 1e-4), with the sample standard deviation (GRPO, and TRL's default).
    `none`: r - mean (Dr. GRPO: the std division up-weights easy and hopeless prompts).
    A zero-variance group (every reward equal) gets exactly zero advantages, hence zero policy gradient.
    """
    if rewards.ndim != 1 or rewards.numel() < 2:
        raise ValueError(f"group_advantages needs a 1-D group of at least 2 rewards, got shape {tuple(rewards.shape)}")
    if is_zero_variance(rewards):
        return torch.zeros_like(rewards)
    centered = rewards - rewards.mean()
    if scaling == "group":
        return centered / (rewards.std() + STD_EPSILON)
    if scaling == "none":
        return centered
    raise ValueError(f"unknown advantage scaling {scaling!r}; choose group or none")


def is_zero_variance(rewards: Tensor) -> bool:
    """True when every reward in the group is the same: the group teaches nothing."""
    return bool((rewards.max() - rewards.min()).abs() <= 1e-9 * max(1.0, float(rewards.abs().max())))


def kl_k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Per-token k3 estimator of KL(policy || reference): exp(ref - lp) - (ref - lp) - 1 >= 0. # (B, T)

    Unbiased for the KL when tokens are sampled from the policy, and never negative (Schulman 2020).
    """
    log_ratio = ref_logprobs - logprobs  # (B, T)
    return torch.exp(log_ratio) - log_ratio - 1.0


def clipped_surrogate(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                      clip_epsilon: float) -> tuple[Tensor, Tensor]:
    """Per-token PPO-clip loss -min(r A, clip(r, 1-eps, 1+eps) A) and where the clip binds. # (B, T) each

    `advantages` is one value per sample (B,), broadcast over its tokens.
    """
    ratio = torch.exp(logprobs - old_logprobs)  # (B, T)
    adv = advantages[:, None]  # (B, 1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon) * adv
    loss = -torch.minimum(unclipped, clipped)  # (B, T)
    binds = ((ratio > 1.0 + clip_epsilon) & (adv > 0)) | ((ratio < 1.0 - clip_epsilon) & (adv < 0))  # (B, T)
    return loss, binds


def reduce_tokens(per_token: Tensor, mask: Tensor, loss_type: LossType, num_samples: int,
                  max_new_tokens: int) -> Tensor:
    """Sum a (B, T) per-token loss to a scalar, normalised over the whole update of `num_samples` samples.

    `grpo`: each sample's masked token mean, summed over the batch, divided by num_samples (GRPO paper).
    `dr_grpo`: the masked token sum divided by num_samples * max_new_tokens, a constant (Dr. GRPO), so a
    token's weight does not depend on the length of the answer it sits in.
    Passing the update's total `num_samples` lets micro-batches be summed into the exact full-batch loss.
    """
    mask = mask.to(per_token.dtype)  # (B, T)
    if loss_type == "grpo":
        per_sample = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # (B,)
        return per_sample.sum() / num_samples
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (num_samples * max_new_tokens)
    raise ValueError(f"unknown loss type {loss_type!r}; choose grpo or dr_grpo")


@dataclass(frozen=True)
class LossTerms:
    loss: Tensor
    """The scalar to backpropagate: policy-gradient term plus kl_beta times the KL term."""
    kl_sum: float
    """Sum of per-token k3 KL over the masked tokens (for the logged mean)."""
    clipped_tokens: int
    tokens: int


def grpo_loss(logprobs: Tensor, old_logprobs: Tensor, ref_logprobs: Tensor | None, advantages: Tensor,
              mask: Tensor, *, loss_type: LossType, clip_epsilon: float, kl_beta: float, num_samples: int,
              max_new_tokens: int) -> LossTerms:
    """The full per-batch loss: reduce(clipped surrogate + kl_beta * k3). Inputs are (B, T) except advantages (B,)."""
    surrogate, binds = clipped_surrogate(logprobs, old_logprobs, advantages, clip_epsilon)  # (B, T)
    per_token = surrogate
    kl_sum = 0.0
    if ref_logprobs is not None:
        kl = kl_k3(logprobs, ref_logprobs)  # (B, T)
        kl_sum = float((kl.detach() * mask).sum())
        if kl_beta > 0:
            per_token = per_token + kl_beta * kl
    elif kl_beta > 0:
        raise ValueError("kl_beta > 0 needs reference log-probabilities")
    loss = reduce_tokens(per_token, mask, loss_type, num_samples, max_new_tokens)
    bool_mask = mask.bool()
    return LossTerms(loss=loss, kl_sum=kl_sum, clipped_tokens=int((binds & bool_mask).sum()),
                     tokens=int(bool_mask.sum()))
