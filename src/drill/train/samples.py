"""Training samples from episodes: one per model turn, built from the exact sampled token ids.

A turn's `Generation` carries `prompt_token_ids` (what the model was conditioned on: system prompt,
the role's view, earlier turns, tool results, other roles' messages) and `token_ids` (what it sampled).
A sample is prompt_token_ids + token_ids, never re-tokenized text, and only the sampled `token_ids`
carry loss; everything in the prompt is masked. Turns of roles that are not trained give no samples.

Every trained turn of an episode gets that episode's advantage for its role: the group-relative
advantage of the role's reward (the team total, or a sum of chosen components, see `role_reward`).

Samples that share a prompt (a GRPO group's first turns: same task, same seed) are forwarded as one
prompt pass whose KV cache the G completions attend to (`shared_prompt_logprobs`), so the prompt is
computed, and backpropagated through, once per group instead of G times. The result equals the
plain per-sample forward (`completion_logprobs`) up to float rounding; a test checks both. Any other micro-batch
runs the leading tokens all its rows share (the system prompt, tool listing and instructions) once in the same way
(`shared_prefix`).

The turns of one episode can also be packed (`pack_turns`, SFT's `pack=true`): where a turn's prompt is the
previous turn's prompt and completion followed by the new observation (the LLM policy's history, nothing
dropped), the two turns are one sequence whose loss sits on both completions. Causal attention gives every
completion token the same context as its own sample, so the loss and its gradient are unchanged, and the
shared prefix is computed once instead of once per turn (inbox: 2.6x fewer tokens).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import groupby
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from drill.core.types import Episode, Score
from drill.train.config import RunConfig
from drill.train.objective import AdvantageScaling, group_advantages, is_zero_variance


@dataclass(frozen=True)
class Sample:
    """One model turn to train on."""

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    advantage: float
    episode: int
    """Index of the episode in the step's rollout batch."""
    turn: int
    role: str
    inner: tuple[tuple[int, int], ...] = ()
    """Earlier turns packed into this sample (`pack_turns`): the [start, end) positions in `prompt_ids` of their
    completions, which carry loss too."""

    @property
    def turns(self) -> int:
        return len(self.inner) + 1

    @property
    def trained_ids(self) -> tuple[int, ...]:
        """Every token that carries loss, in order: the packed turns' completions, then this one's."""
        return tuple(t for a, b in self.inner for t in self.prompt_ids[a:b]) + self.completion_ids

    @property
    def trained_positions(self) -> list[int]:
        """The position in prompt + completion of each token of `trained_ids`."""
        prompt = len(self.prompt_ids)
        return [p for a, b in self.inner for p in range(a, b)] + list(range(prompt, prompt + len(self.completion_ids)))


def pack_turns(samples: Sequence[Sample]) -> list[Sample]:
    """Consecutive samples of one episode and role with one advantage, each whose prompt starts with the previous
    sample's prompt + completion, merged into one sample (see the module docstring); the rest stay as they are."""
    packed: list[Sample] = []
    for sample in samples:
        last = packed[-1] if packed else None
        if last is not None and (last.episode, last.role, last.advantage) == (sample.episode, sample.role,
                                                                              sample.advantage):
            sequence = last.prompt_ids + last.completion_ids
            if sample.prompt_ids[:len(sequence)] == sequence and len(sample.prompt_ids) > len(sequence):
                span = (len(last.prompt_ids), len(sequence))
                packed[-1] = Sample(prompt_ids=sample.prompt_ids, completion_ids=sample.completion_ids,
                                    advantage=sample.advantage, episode=sample.episode, turn=sample.turn,
                                    role=sample.role, inner=(*last.inner, span))
                continue
        packed.append(sample)
    return packed


def role_reward(score: Score, spec: str) -> float:
    """A role's reward from an episode's score: `total`, or the sum of the named components' weighted contributions.

    E.g. `rogue_caught+rogue_false_positive` gives ChaosOps' Oversight a reward for flagging alone.
    """
    if spec == "total":
        return score.total
    names = [part.strip() for part in spec.split("+")]
    unknown = [n for n in names if n not in score.components]
    if unknown:
        raise ValueError(f"role reward {spec!r} names unknown components {unknown}; "
                         f"known: total, {', '.join(score.components)}")
    return sum(score.contribution(n) for n in names)


@dataclass(frozen=True)
class GroupSamples:
    samples: list[Sample]
    rewards: dict[str, list[float]]
    """Per trained role, each episode's reward."""
    zero_variance: int
    """Number of trained roles whose rewards were identical across the group (zero advantage, zero gradient)."""


def group_samples(episodes: Sequence[Episode], first_index: int, roles: Collection[str],
                  role_rewards: Mapping[str, str], scaling: AdvantageScaling) -> GroupSamples:
    """Samples of one group (G episodes of the same task and seed), with group-relative advantages per role.

    `first_index` is the index of the group's first episode in the rollout batch.
    """
    rewards: dict[str, list[float]] = {}
    advantages: dict[str, list[float]] = {}
    zero_variance = 0
    for role in roles:
        values = []
        for episode in episodes:
            if episode.score is None:
                raise ValueError(f"episode of task {episode.task_id} seed {episode.seed} was not scored")
            values.append(role_reward(episode.score, role_rewards.get(role, "total")))
        tensor = torch.tensor(values, dtype=torch.float64)  # (G,)
        zero_variance += is_zero_variance(tensor)
        rewards[role] = values
        advantages[role] = group_advantages(tensor, scaling).tolist()
    samples = []
    for offset, episode in enumerate(episodes):
        adv = {role: advantages[role][offset] for role in roles}
        samples.extend(episode_samples(episode, first_index + offset, adv))
    return GroupSamples(samples=samples, rewards=rewards, zero_variance=zero_variance)


def episode_samples(episode: Episode, index: int, advantages: Mapping[str, float]) -> list[Sample]:
    """One sample per turn of a role in `advantages`, from the turn's Generation token ids as sampled."""
    samples = []
    for turn in episode.turns:
        if turn.role not in advantages:
            continue
        generation = turn.action.generation
        if generation is None:
            raise ValueError(
                f"turn {turn.index} of role {turn.role!r} (task {episode.task_id}) has no Generation: trained "
                f"roles must be played by the model being trained, not by {turn.policy!r}")
        if not generation.prompt_token_ids:
            raise ValueError(
                f"turn {turn.index} of role {turn.role!r} has no prompt token ids; the backend "
                f"{generation.model!r} does not report them, so it cannot be trained on")
        if not generation.token_ids:
            continue
        samples.append(Sample(prompt_ids=tuple(generation.prompt_token_ids), completion_ids=tuple(generation.token_ids),
                              advantage=advantages[turn.role], episode=index, turn=turn.index, role=turn.role))
    return samples


@dataclass(frozen=True)
class TokenBatch:
    """Samples padded into tensors. B samples, L = longest prompt + completion, T = longest completion."""

    input_ids: Tensor  # (B, L) prompt then completion, right-padded
    attention_mask: Tensor  # (B, L)
    completion_ids: Tensor  # (B, T)
    completion_mask: Tensor  # (B, T) 1 on sampled tokens, 0 on padding
    logit_positions: Tensor  # (B, T) index in L of the logit that predicts each completion token
    advantages: Tensor  # (B,)

    @property
    def loss_mask(self) -> Tensor:
        """(B, L): 1 exactly where a sampled completion token sits in `input_ids`, 0 on prompt and padding."""
        mask = torch.zeros_like(self.attention_mask)
        rows = torch.arange(mask.shape[0])[:, None].expand_as(self.logit_positions)
        mask[rows[self.completion_mask.bool()], (self.logit_positions + 1)[self.completion_mask.bool()]] = 1
        return mask


def collate(samples: Sequence[Sample], pad_id: int) -> TokenBatch:
    if not samples:
        raise ValueError("collate needs at least one sample")
    length = max(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    width = max(len(s.trained_ids) for s in samples)
    input_ids = torch.full((len(samples), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(samples), length), dtype=torch.long)
    completion_ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((len(samples), width), dtype=torch.long)
    logit_positions = torch.zeros((len(samples), width), dtype=torch.long)
    for b, s in enumerate(samples):
        p, c, n = len(s.prompt_ids), len(s.completion_ids), len(s.trained_ids)
        input_ids[b, : p + c] = torch.tensor(s.prompt_ids + s.completion_ids)
        attention_mask[b, : p + c] = 1
        completion_ids[b, :n] = torch.tensor(s.trained_ids)
        completion_mask[b, :n] = 1
        positions = [q - 1 for q in s.trained_positions]  # the logit at q - 1 predicts the token at q
        logit_positions[b] = torch.tensor(positions + list(range(p + c - 1, p + c - 1 + width - n))).clamp(
            max=length - 1)
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return TokenBatch(input_ids=input_ids, attention_mask=attention_mask, completion_ids=completion_ids,
                      completion_mask=completion_mask, logit_positions=logit_positions, advantages=advantages)


SHARED_PREFIX_MIN = 32
"""Fewest leading tokens all rows of a batch must share before `completion_logprobs` runs them once: below it, the
second model call costs more than the repeated columns save."""


def completion_logprobs(model: torch.nn.Module, batch: TokenBatch, temperature: float,
                        share_prefix: bool = True) -> Tensor:
    """Log-probabilities of the sampled completion tokens under `model`, at the sampling temperature. # (B, T)

    One forward pass over prompt + completion; only the logits that predict completion tokens are
    computed (`logits_to_keep`: the positions themselves), so the vocabulary projection costs at most B x T
    positions, not L: rows whose prompts end at different places, or packed turns with prompts between their
    completions, keep no prompt position's logits (a ChaosOps Oversight batch of 8 prompts of 770-1,870 tokens kept
    ~1,100 positions per row when it kept every one from the earliest completion on).

    The leading tokens every row shares (`shared_prefix`: the system prompt, tool listing and instructions of one
    environment's turns, 643 of a ChaosOps Oversight sample's ~1,140 prompt tokens) run once, and the rest of each
    row runs on that pass's KV cache repeated B times (`share_prefix`, at `SHARED_PREFIX_MIN` tokens or more).
    Gradients flow through the shared pass, so the values and gradients are those of the plain pass up to float
    rounding (a test checks both), on B-1 fewer copies of the prefix.
    """
    device = next(model.parameters()).device
    keep = torch.unique(batch.logit_positions)  # (K,) sorted: every position whose logit some row needs
    first = int(keep[0])
    shared = prefix_run_once(batch, first) if share_prefix else 0
    if shared:
        logits = _logits_on_shared_prefix(model, batch, shared, keep)  # (B, K, V)
    else:
        logits = model(input_ids=batch.input_ids.to(device), attention_mask=batch.attention_mask.to(device),
                       logits_to_keep=keep.to(device), use_cache=False).logits  # (B, K, V)
    where = torch.searchsorted(keep, batch.logit_positions)  # (B, T) the column of each position's logit
    index = where.to(device)[..., None].expand(-1, -1, logits.shape[-1])  # (B, T, V)
    picked = torch.gather(logits, 1, index).float() / temperature  # (B, T, V)
    chosen = torch.gather(picked, -1, batch.completion_ids.to(device)[..., None]).squeeze(-1)  # (B, T)
    return chosen - torch.logsumexp(picked, dim=-1)  # (B, T)


def shared_prefix(batch: TokenBatch, first: int) -> int:
    """How many leading columns every row of `batch` holds, with the same tokens: at most `first` + 1 (the logit at
    `first`, the earliest one kept, must come from the prefix pass or after it) and at most L - 1 (a row's rest is
    never empty)."""
    same = (batch.input_ids == batch.input_ids[:1]).all(0) & batch.attention_mask.bool().all(0)  # (L,)
    run = int(same.long().cumprod(0).sum())
    return min(run, first + 1, batch.input_ids.shape[1] - 1)


def prefix_run_once(batch: TokenBatch, first: int, minimum: int | None = None) -> int:
    """The columns `completion_logprobs` runs once for every row: the shared prefix, where the batch has more than one
    row and it is at least `minimum` (`SHARED_PREFIX_MIN`) long; else 0."""
    shared = shared_prefix(batch, first) if batch.input_ids.shape[0] > 1 else 0
    return shared if shared >= (SHARED_PREFIX_MIN if minimum is None else minimum) else 0


def _logits_on_shared_prefix(model: torch.nn.Module, batch: TokenBatch, shared: int, positions: Tensor) -> Tensor:
    """The logits at `positions` (sorted, all >= `shared` - 1) of every row: the first `shared` columns run once
    (1, S), their KV cache repeated B times, then each row's remaining columns (B, L - S) on it. # (B, K, V)"""
    device = next(model.parameters()).device
    rows, length = batch.input_ids.shape
    head = model(input_ids=batch.input_ids[:1, :shared].to(device), use_cache=True, logits_to_keep=1)
    cache = head.past_key_values
    cache.batch_repeat_interleave(rows)
    later = positions[positions >= shared] - shared  # (K',) columns of the rest
    rest = model(input_ids=batch.input_ids[:, shared:].to(device), attention_mask=batch.attention_mask.to(device),
                 position_ids=torch.arange(shared, length, device=device)[None].expand(rows, -1),
                 past_key_values=cache, use_cache=True, logits_to_keep=later.to(device)).logits  # (B, K', V)
    if int(positions[0]) == shared - 1:  # the last prefix token's logit predicts some row's first completion token
        return torch.cat([head.logits.expand(rows, -1, -1), rest], dim=1)
    return rest


def shared_prompt_logprobs(model: torch.nn.Module, prompt_ids: Sequence[int], batch: TokenBatch,
                           temperature: float) -> Tensor:
    """Like `completion_logprobs` for B samples that all have `prompt_ids` as their prompt. # (B, T)

    The prompt runs once (1, P), its KV cache is repeated B times, and the completions (B, T) run on it.
    Gradients flow through the shared prompt pass, so the result and its gradient are those of B full passes.
    """
    device = next(model.parameters()).device
    width = batch.completion_ids.shape[1]
    rows = batch.completion_ids.shape[0]
    prompt = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)  # (1, P)
    head = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
    cache = head.past_key_values
    cache.batch_repeat_interleave(rows)
    first = head.logits[:, -1:].expand(rows, -1, -1)  # (B, 1, V) predicts completion token 0
    completion_mask = batch.completion_mask.to(device)  # (B, T)
    attention = torch.cat([torch.ones((rows, prompt.shape[1]), dtype=torch.long, device=device),
                           completion_mask], dim=1)  # (B, P + T)
    positions = (prompt.shape[1] + torch.arange(width, device=device))[None].expand(rows, -1)  # (B, T)
    logits = first
    if width > 1:
        rest = model(input_ids=batch.completion_ids[:, :-1].to(device), attention_mask=attention[:, :-1],
                     position_ids=positions[:, :-1], past_key_values=cache, use_cache=True).logits  # (B, T-1, V)
        logits = torch.cat([first, rest], dim=1)  # (B, T, V)
    logits = logits.float() / temperature
    chosen = torch.gather(logits, -1, batch.completion_ids.to(device)[..., None]).squeeze(-1)  # (B, T)
    return chosen - torch.logsumexp(logits, dim=-1)  # (B, T)


@dataclass(frozen=True)
class MicroBatch:
    """Samples forwarded together: either all sharing one prompt, or a padded batch of different prompts."""

    samples: list[Sample]
    tokens: TokenBatch
    shared_prompt: tuple[int, ...] | None


def micro_batches(samples: Sequence[Sample], size: int, pad_id: int, token_budget: int = 0) -> list[MicroBatch]:
    """Split samples into micro-batches: samples with a common prompt go together (one shared prompt pass each);
    the rest are padded together. Each holds at most `size` samples, or, with a `token_budget`, as many as fit in
    that many padded tokens (samples x the longest prompt + completion; at least one sample, longest first)."""
    by_prompt = sorted(samples, key=lambda s: s.prompt_ids)
    shared: list[list[Sample]] = []
    single: list[Sample] = []
    for _, same in groupby(by_prompt, key=lambda s: s.prompt_ids):
        members = list(same)
        (shared.append(members) if len(members) > 1 and not members[0].inner else single.extend(members))
    batches = []
    for members in shared:
        for chunk in _chunks(members, size, token_budget):
            batches.append(MicroBatch(chunk, collate(chunk, pad_id), chunk[0].prompt_ids if len(chunk) > 1 else None))
    for chunk in _chunks(single, size, token_budget):
        batches.append(MicroBatch(chunk, collate(chunk, pad_id), None))
    return batches


def _chunks(samples: list[Sample], size: int, token_budget: int) -> list[list[Sample]]:
    if token_budget <= 0:
        return [samples[i:i + size] for i in range(0, len(samples), size)]
    chunks: list[list[Sample]] = []
    longest = 0
    for sample in sorted(samples, key=lambda s: -(len(s.prompt_ids) + len(s.completion_ids))):
        length = len(sample.prompt_ids) + len(sample.completion_ids)
        if chunks and (len(chunks[-1]) + 1) * max(longest, length) <= token_budget:
            chunks[-1].append(sample)
        else:
            chunks.append([sample])
            longest = length
        longest = max(longest, length)
    return chunks


def token_budget(setting: int | None, model: torch.nn.Module, device: torch.device) -> int:
    """The micro-batch token budget: `setting` when given (0: count samples instead); by default none on the CPU
    (micro-batches of `micro_batch_size`, as always), and on CUDA what half the free memory holds of the
    float32 full-vocabulary logits and their log-softmax, the largest activations of a forward (clamped to
    1,024..262,144 tokens)."""
    if setting is not None:
        return setting
    if device.type != "cuda":
        return 0
    free, _ = torch.cuda.mem_get_info(device)
    vocab = int(getattr(model.config, "vocab_size", 50_000))
    return max(1024, min(262_144, int(free * 0.5 / (vocab * 4 * 3))))


def micro_batch_logprobs(model: torch.nn.Module, batch: MicroBatch, temperature: float) -> Tensor:
    """Completion log-probabilities of a micro-batch, by the shared-prompt path where it applies. # (B, T)"""
    if batch.shared_prompt is not None:
        return shared_prompt_logprobs(model, batch.shared_prompt, batch.tokens, temperature)
    return completion_logprobs(model, batch.tokens, temperature)


def nll_update(model: Any, optimizer: torch.optim.Optimizer, params: list[torch.Tensor], samples: Sequence[Sample],
               pad_id: int, config: RunConfig) -> tuple[float, int, float]:
    """One optimizer step on the mean NLL per completion token of `samples` (each weighted by its advantage,
    1 for plain SFT); returns the loss, the completion tokens and the gradient norm. Stops on a non-finite loss."""
    optimizer.zero_grad(set_to_none=True)
    device = next(model.parameters()).device
    batches = micro_batches(samples, config.micro_batch_size, pad_id,
                            token_budget(config.micro_batch_tokens, model, device))  # --micro-batch-tokens
    tokens = sum(len(s.trained_ids) for s in samples)
    loss_sum = 0.0
    for batch in batches:
        logprobs = micro_batch_logprobs(model, batch, 1.0)  # (B, T) at temperature 1: the model's own distribution
        mask = batch.tokens.completion_mask.to(logprobs.device).float()  # (B, T)
        weights = batch.tokens.advantages.to(logprobs.device)[:, None]  # (B, 1)
        loss = -(logprobs * mask * weights).sum() / tokens
        loss.backward()
        loss_sum += float(loss.detach())
    if not np.isfinite(loss_sum):
        raise FloatingPointError(f"the SFT loss is {loss_sum}; no update was applied")
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm))
    if not np.isfinite(grad_norm):
        raise FloatingPointError(f"the SFT gradient norm is {grad_norm}; no update was applied")
    optimizer.step()
    return loss_sum, tokens, grad_norm


