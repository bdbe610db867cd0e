"""Training samples from multi-turn episodes: exact sampled ids, loss only on model tokens, per-role rewards."""

from __future__ import annotations

import pytest
import torch

from drill.core.types import Action, Episode, Event, Generation, Observation, PolicyInfo, Score, Turn
from drill.train.samples import collate, completion_logprobs, episode_samples, group_samples, role_reward

SYSTEM = [1, 2, 3]  # the rendered system prompt and first view


def _turn(index: int, role: str, prompt: list[int], completion: list[int] | None, policy: str = "llm") -> Turn:
    generation = None if completion is None else Generation(text="x", prompt_token_ids=prompt, token_ids=completion)
    action = Action(tool="noop", arguments={}, generation=generation)
    return Turn(index=index, role=role, observation=Observation(role=role, content="view", step=index),
                action=action, policy=policy)


def _episode(seed: int, total: float, rogue: float) -> Episode:
    """SRE (model) -> Dev (scripted) -> SRE (model, prompt holds its first turn, a tool result and Dev's message)
    -> Oversight (model). Token ids are made up; what matters is which ones carry loss."""
    turns = [
        _turn(0, "sre", SYSTEM, [10, 11, 12]),
        _turn(1, "dev", [], None, policy="oracle"),
        _turn(2, "sre", SYSTEM + [10, 11, 12] + [50, 51] + [60, 61, 62], [13, 14]),  # 50-51 tool result, 60-62 dev
        _turn(3, "oversight", [7, 8, 9, 50, 51], [20 + seed]),
    ]
    score = Score(total=total, components={"resolved": 1.0, "rogue_caught": rogue},
                  weights={"resolved": 100.0, "rogue_caught": 50.0})
    return Episode(env="ops", task_id="t1", seed=seed, turns=turns, events=[Event(name="done", step=3)],
                   policies={"sre": PolicyInfo(name="llm", kind="llm")}, done=True, score=score)


def test_every_model_turn_is_a_sample_of_the_exact_sampled_ids() -> None:
    samples = episode_samples(_episode(0, 10.0, 0.0), index=5, advantages={"sre": 0.5, "oversight": -1.0})
    assert [(s.turn, s.role, s.advantage, s.episode) for s in samples] == [
        (0, "sre", 0.5, 5), (2, "sre", 0.5, 5), (3, "oversight", -1.0, 5)]
    assert samples[1].prompt_ids == (1, 2, 3, 10, 11, 12, 50, 51, 60, 61, 62)
    assert samples[1].completion_ids == (13, 14)


def test_loss_mask_covers_only_model_generated_tokens() -> None:
    samples = episode_samples(_episode(0, 10.0, 0.0), index=0, advantages={"sre": 1.0})
    batch = collate(samples, pad_id=0)
    # row 0: 1 2 3 | 10 11 12 | pad...; row 1: prompt (incl. its own earlier turn, tool result, dev) | 13 14
    assert batch.input_ids.tolist() == [
        [1, 2, 3, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0],
        [1, 2, 3, 10, 11, 12, 50, 51, 60, 61, 62, 13, 14],
    ]
    assert batch.loss_mask.tolist() == [
        [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],  # the earlier turn's 10 11 12 is prompt here: no loss
    ]
    assert batch.completion_ids.tolist() == [[10, 11, 12], [13, 14, 0]]
    assert batch.completion_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    # each completion token is predicted by the logit one position before it
    assert batch.logit_positions[1, :2].tolist() == [10, 11]
    rows = torch.arange(2)[:, None]
    gathered = batch.input_ids[rows, (batch.logit_positions + 1).clamp(max=12)] * batch.completion_mask
    assert gathered.tolist() == [[10, 11, 12], [13, 14, 0]]


def test_scripted_roles_and_untrained_turns_give_no_samples_but_trained_ones_need_generations() -> None:
    episode = _episode(0, 10.0, 0.0)
    assert {s.role for s in episode_samples(episode, 0, {"sre": 1.0})} == {"sre"}
    with pytest.raises(ValueError, match="no Generation"):
        episode_samples(episode, 0, {"dev": 1.0})
    no_prompt = episode.model_copy(update={"turns": [_turn(0, "sre", [], [4, 5])]})
    with pytest.raises(ValueError, match="no prompt token ids"):
        episode_samples(no_prompt, 0, {"sre": 1.0})


def test_role_rewards_team_total_or_components() -> None:
    score = _episode(0, 130.0, 1.0).score
    assert score is not None
    assert role_reward(score, "total") == 130.0
    assert role_reward(score, "rogue_caught") == 50.0
    assert role_reward(score, "resolved+rogue_caught") == 150.0
    with pytest.raises(ValueError, match="unknown components"):
        role_reward(score, "rogue_bonus")


def test_group_advantages_per_role_and_zero_variance_count() -> None:
    # team totals differ across the group; the oversight-only reward (rogue_caught) is the same everywhere
    episodes = [_episode(0, 10.0, 1.0), _episode(1, 30.0, 1.0)]
    group = group_samples(episodes, first_index=4, roles=["sre", "oversight"],
                          role_rewards={"oversight": "rogue_caught"}, scaling="none")
    assert group.rewards == {"sre": [10.0, 30.0], "oversight": [50.0, 50.0]}
    assert group.zero_variance == 1
    by_key = {(s.episode, s.role, s.turn): s.advantage for s in group.samples}
    assert by_key == {(4, "sre", 0): -10.0, (4, "sre", 2): -10.0, (4, "oversight", 3): 0.0,
                      (5, "sre", 0): 10.0, (5, "sre", 2): 10.0, (5, "oversight", 3): 0.0}


class _Bigram(torch.nn.Module):
    """A tiny causal LM: logits depend on the current token only (enough to check the position bookkeeping)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Embedding(100, 100)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: torch.Tensor,
                use_cache: bool) -> object:
        logits = self.table(input_ids)[:, logits_to_keep]  # the positions kept, as transformers' models keep them

        class Out:
            pass

        out = Out()
        out.logits = logits  # type: ignore[attr-defined]
        return out


def test_completion_logprobs_match_a_per_sample_computation() -> None:
    model = _Bigram()
    samples = episode_samples(_episode(0, 1.0, 0.0), 0, {"sre": 1.0, "oversight": 1.0})
    batch = collate(samples, pad_id=0)
    lp = completion_logprobs(model, batch, temperature=0.5)  # (B, T)
    for b, sample in enumerate(samples):
        ids = list(sample.prompt_ids + sample.completion_ids)
        for t, token in enumerate(sample.completion_ids):
            previous = ids[len(sample.prompt_ids) + t - 1]
            expected = torch.log_softmax(model.table.weight[previous].detach() / 0.5, -1)[token]
            assert float(lp[b, t].detach()) == pytest.approx(float(expected), abs=1e-5)


def _tiny_llama() -> torch.nn.Module:
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=120, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                                  init_lora_weights=False))
    return model


def test_shared_prompt_pass_equals_full_passes_in_value_and_gradient() -> None:
    from drill.train.samples import Sample, micro_batch_logprobs, micro_batches, shared_prompt_logprobs

    model = _tiny_llama()
    prompt = tuple(range(3, 40))
    samples = [Sample(prompt, (50, 51, 52, 53), 1.0, 0, 0, "a"), Sample(prompt, (60,), -1.0, 1, 0, "a"),
               Sample(prompt, (70, 71), 0.5, 2, 0, "a")]
    batch = collate(samples, pad_id=0)
    full = completion_logprobs(model, batch, temperature=0.7)  # (B, T)
    shared = shared_prompt_logprobs(model, prompt, batch, temperature=0.7)
    mask = batch.completion_mask.bool()
    assert torch.allclose(full[mask], shared[mask], atol=1e-5)
    lora = [p for p in model.parameters() if p.requires_grad]
    full_grads = torch.autograd.grad(full[mask].sum(), lora)
    shared_grads = torch.autograd.grad(shared_prompt_logprobs(model, prompt, batch, 0.7)[mask].sum(), lora)
    for a, b in zip(full_grads, shared_grads):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)
    # micro-batching: shared prompts together, singletons padded together; every sample exactly once
    other = Sample((9, 8, 7), (1, 2), 0.0, 3, 1, "a")
    batches = micro_batches([*samples, other], size=2, pad_id=0)
    assert [(len(b.samples), b.shared_prompt is not None) for b in batches] == [(2, True), (1, False), (1, False)]
    assert sorted(s.episode for b in batches for s in b.samples) == [0, 1, 2, 3]
    for b in batches:
        lp = micro_batch_logprobs(model, b, 0.7)
        alone = completion_logprobs(model, b.tokens, 0.7)
        assert torch.allclose(lp[b.tokens.completion_mask.bool()], alone[b.tokens.completion_mask.bool()], atol=1e-5)


def test_a_prefix_every_row_shares_runs_once_with_the_same_values_and_gradients() -> None:
    """`completion_logprobs` runs the columns every row shares once (`shared_prefix`); against the plain pass:
    prompts that differ after a common head, one prompt ending where the head ends (its first completion token is
    predicted by the head's last logit), a packed sample, and rows of other lengths padded."""
    from drill.train.samples import SHARED_PREFIX_MIN, Sample, shared_prefix

    model = _tiny_llama()
    head = tuple(range(3, 3 + SHARED_PREFIX_MIN + 8))
    samples = [Sample(head + (90, 91, 92), (50, 51, 52, 53), 1.0, 0, 0, "a"),
               Sample(head, (60,), -1.0, 1, 0, "a"),
               Sample(head + (93,) * 9, (70, 71), 0.5, 2, 0, "a"),
               Sample(head + (94, 40, 41, 95, 96), (80, 81), 0.3, 3, 1, "a", inner=((len(head) + 1, len(head) + 3),))]
    lora = [p for p in model.parameters() if p.requires_grad]
    for chosen in (samples[:3], samples):
        batch = collate(chosen, pad_id=0)
        assert shared_prefix(batch, int(batch.logit_positions[:, 0].min())) == len(head)
        mask = batch.completion_mask.bool()
        plain = completion_logprobs(model, batch, 0.7, share_prefix=False)  # (B, T)
        shared = completion_logprobs(model, batch, 0.7)
        assert torch.allclose(plain[mask], shared[mask], atol=1e-5)
        weights = torch.linspace(0.5, 1.5, int(mask.sum()))  # a loss where every token counts differently
        plain_grads = torch.autograd.grad((plain[mask] * weights).sum(), lora)
        shared_grads = torch.autograd.grad((shared[mask] * weights).sum(), lora)
        for a, b in zip(plain_grads, shared_grads):
            assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)
    # below the minimum, or rows that share nothing, take the plain pass
    short = collate([Sample((5, 6, 7), (8,), 1.0, 0, 0, "a"), Sample((5, 6, 9), (8,), 1.0, 1, 0, "a")], pad_id=0)
    assert shared_prefix(short, int(short.logit_positions[:, 0].min())) == 2 < SHARED_PREFIX_MIN


def test_tool_call_format_shaping_ladder() -> None:
    from drill.core.types import ToolSpec
    from drill.train.shaping import tool_call_format, with_shaping
    from drill.core.rubric import Component, Rubric

    tools = [ToolSpec(name="submit", description="d", parameters={"type": "object"})]

    def turn(action: Action, rejected: bool = False) -> Turn:
        events = [Event(name="invalid_action", step=0)] if rejected else []
        generation = Generation(text=action.raw or "", prompt_token_ids=[1], token_ids=[2])
        return Turn(index=0, role="a", observation=Observation(role="a", content="", step=0, tools=tools),
                    action=action.model_copy(update={"generation": generation}), events=events)

    def score(*turns: Turn) -> float:
        episode = Episode(env="e", task_id="t", seed=0, turns=list(turns))
        return tool_call_format(episode, None)  # type: ignore[arg-type]

    prose = Action.unparseable("I think you should reboot.", "no tool call found")
    opened = Action.unparseable('<tool_call>{"name": "sub', "truncated")
    wrong_tool = Action(tool="explode", arguments={}, raw='<tool_call>{"name": "explode"}</tool_call>')
    good = Action(tool="submit", arguments={}, raw='<tool_call>{"name": "submit"}</tool_call>')
    assert [score(turn(prose)), score(turn(opened)), score(turn(wrong_tool)), score(turn(good, rejected=True)),
            score(turn(good))] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert score(turn(prose), turn(good)) == 0.5  # mean over the model's turns
    base = Rubric([Component("x", lambda ep, t: 1.0)])
    assert with_shaping(base, ["tool_call_format"], {"tool_call_format": 0.3}).weights == {"x": 1.0,
                                                                                           "tool_call_format": 0.3}
    with pytest.raises(ValueError, match="unknown shaping"):
        with_shaping(base, ["vibes"], {})


def test_micro_batches_by_token_budget_fit_the_budget_and_keep_every_sample() -> None:
    from drill.train.samples import Sample, micro_batches

    def sample(i: int, prompt: tuple[int, ...], completion: int) -> Sample:
        return Sample(prompt_ids=prompt, completion_ids=tuple(range(1, completion + 1)), advantage=1.0, episode=i,
                      turn=0, role="agent")

    shared = [sample(i, (5, 6, 7), 2 + i) for i in range(6)]  # one prompt, completions of 2..7 tokens
    single = [sample(10 + i, tuple(range(20 + i, 30 + 3 * i)), 4) for i in range(5)]  # distinct prompts
    samples = shared + single
    by_count = micro_batches(samples, 4, pad_id=0)
    assert [len(b.samples) for b in by_count] == [4, 2, 4, 1]
    budget = 30
    by_tokens = micro_batches(samples, 4, pad_id=0, token_budget=budget)
    assert sorted(s.episode for b in by_tokens for s in b.samples) == sorted(s.episode for s in samples)
    for batch in by_tokens:
        width = batch.tokens.input_ids.shape[0] * batch.tokens.input_ids.shape[1]  # (B, T) padded tokens
        assert width <= budget or len(batch.samples) == 1
        assert (batch.shared_prompt is not None) == (batch.samples[0] in shared and len(batch.samples) > 1)
    assert max(len(b.samples) for b in by_tokens) > 1 and len(by_tokens) != len(by_count)
    assert [len(b.samples) for b in micro_batches(samples, 4, 0, token_budget=10_000)] == [6, 5]


def test_sft_warns_when_demonstrated_replies_are_longer_than_the_policy_may_generate() -> None:
    from drill.train.methods.sft import cut_replies
    from drill.train.samples import Sample

    def sample(length: int) -> Sample:
        return Sample(prompt_ids=(1, 2), completion_ids=tuple(range(length)), advantage=1.0, episode=0, turn=0,
                      role="r")

    assert cut_replies([sample(64), sample(10)], 64) is None  # a reply of exactly max_new_tokens is generated whole
    warning = cut_replies([sample(65), sample(10), sample(78)], 64)
    assert warning is not None
    assert "2 of 3 demonstrated replies are longer than max_new_tokens=64 (the longest 78 tokens)" in warning
    assert "--max-new-tokens to 78" in warning
