"""DPO's loss and pairs, RFT's filter and rationalization prompts: hand-computed values, no model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
import torch

from drill.core.policy import PolicyInput
from drill.core.types import Action, Episode, Event, Generation, Observation, PolicyInfo, Score, Task, Turn
from drill.models.policy import LLMPolicy, PolicyOptions
from drill.train.methods.dpo import chosen_nll, dpo_loss, preference_pairs
from drill.train.methods.rft import HINT, HintedPolicy, kept_episodes, kept_samples, round_tasks


def _episode(index: int, total: float, prompts: Sequence[tuple[int, ...]] = ((1, 2, 3),)) -> Episode:
    turns = [Turn(index=k, role="agent", observation=Observation(role="agent", content="v", step=k), policy="llm",
                  action=Action(tool="noop", generation=Generation(text="x", prompt_token_ids=list(p),
                                                                   token_ids=[10 + index, k])))
             for k, p in enumerate(prompts)]
    return Episode(env="toy", task_id="train-0", seed=7, turns=turns, policies={}, done=True,
                   score=Score(total=total, components={"c": total}, weights={"c": 1.0}))


def test_dpo_loss_matches_hand_computed_values() -> None:
    chosen, rejected = torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -1.0])
    ref_chosen, ref_rejected = torch.tensor([-1.5, -2.0]), torch.tensor([-1.5, -2.0])
    # pair 1: 0.5 * ((-1 + 1.5) - (-2 + 1.5)) = 0.5;  pair 2: 0.5 * ((-3 + 2) - (-1 + 2)) = -1.0
    expected = (math.log1p(math.exp(-0.5)) + math.log1p(math.exp(1.0))) / 2
    assert float(dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.5)) == pytest.approx(expected, rel=1e-6)
    # identical policy and reference: log 2, whatever the sequences
    assert float(dpo_loss(chosen, rejected, chosen, rejected, beta=0.1)) == pytest.approx(math.log(2), rel=1e-6)
    # the gradient pushes the chosen sequence up and the rejected one down
    c, r = torch.tensor([-1.0], requires_grad=True), torch.tensor([-1.0], requires_grad=True)
    dpo_loss(c, r, torch.tensor([-1.0]), torch.tensor([-1.0]), beta=1.0).backward()
    assert c.grad is not None and r.grad is not None and float(c.grad) < 0 < float(r.grad)


def test_the_chosen_nll_is_the_mean_token_nll_of_the_chosen_completions() -> None:
    (pair,) = preference_pairs([_episode(0, 0.2), _episode(1, 0.9)], ["agent"], {}, min_margin=0.0)
    longer = replace(pair, chosen=replace(pair.chosen, completion_ids=(5, 6, 7, 8)))
    # pair 1: 2 chosen tokens, -(-3.0) / 2 = 1.5;  pair 2: 4 chosen tokens, -(-2.0) / 4 = 0.5;  mean 1.0
    assert float(chosen_nll(torch.tensor([-3.0, -2.0]), [pair, longer])) == pytest.approx(1.0)


def test_pairs_are_best_against_worst_and_equal_rewards_never_pair() -> None:
    group = [_episode(0, 0.2), _episode(1, 0.9), _episode(2, 0.5)]
    pairs = preference_pairs(group, ["agent"], {}, min_margin=0.0)
    assert len(pairs) == 1
    assert (pairs[0].chosen.completion_ids, pairs[0].rejected.completion_ids) == ((11, 0), (10, 0))
    assert pairs[0].margin == pytest.approx(0.7)
    assert preference_pairs(group, ["agent"], {}, min_margin=0.7) == []  # the margin must exceed min_margin
    assert preference_pairs([_episode(0, 0.5), _episode(1, 0.5), _episode(2, 0.5)], ["agent"], {}, 0.0) == []


def test_pairs_share_a_prompt_exactly() -> None:
    # two-turn episodes: the first turns share a prompt; the second turns saw different things, so never pair
    group = [_episode(0, 0.1, [(1, 2), (1, 2, 10, 5)]), _episode(1, 0.8, [(1, 2), (1, 2, 11, 6)])]
    pairs = preference_pairs(group, ["agent"], {}, min_margin=0.0)
    assert [(p.chosen.prompt_ids, p.chosen.episode, p.rejected.episode) for p in pairs] == [((1, 2), 1, 0)]


def test_a_filtered_round_keeps_only_episodes_above_the_bar() -> None:
    group = [_episode(i, t) for i, t in enumerate([0.1, 0.6, 0.35, 0.6])]
    assert kept_episodes(group, "absolute:0.6") == [1, 3]
    assert kept_episodes(group, "group_mean") == [1, 3]  # mean 0.4125
    assert kept_episodes(group, "heuristic", baseline=0.3) == [1, 2, 3]
    assert kept_episodes([_episode(i, 0.5) for i in range(3)], "group_mean") == []  # zero variance keeps none
    with pytest.raises(ValueError, match="needs the heuristic"):
        kept_episodes(group, "heuristic")


def test_a_floor_keeps_no_failure_however_it_stands_in_its_group() -> None:
    failures = [_episode(i, t) for i, t in enumerate([-1.0, -0.8, -0.55, -1.0])]  # mean -0.8375
    assert kept_episodes(failures, "group_mean") == [1, 2]  # the least bad of four failures clear the mean
    assert kept_episodes(failures, "group_mean", floor=0.0) == []
    mixed = [_episode(i, t) for i, t in enumerate([-1.0, 0.1, 1.2, 0.0])]  # mean 0.075
    assert kept_episodes(mixed, "group_mean", floor=0.5) == [2]
    assert kept_episodes(mixed, "absolute:0.0", floor=0.1) == [1, 2]
    assert kept_episodes(mixed, "group_mean", floor=1.2) == [2]  # at the floor is kept


def test_a_kept_episodes_invalid_turns_are_not_trained_on() -> None:
    episode = _episode(0, 1.2, prompts=((1,), (1, 2), (1, 2, 3)))  # three turns; the second was answered as invalid
    episode.turns[1].events.append(Event(name="invalid_action", step=1, role="agent", data={"why": "no answer"}))
    samples, skipped = kept_samples([episode], ["agent"], skip_invalid=True)
    assert [s.turn for s in samples] == [0, 2] and skipped == 1
    assert samples[1].prompt_ids == (1, 2, 3)  # the turn after it still sees the invalid call in its prompt
    samples, skipped = kept_samples([episode], ["agent"], skip_invalid=False)
    assert [s.turn for s in samples] == [0, 1, 2] and skipped == 0


def test_rounds_draw_only_training_tasks_and_cover_them_before_repeating() -> None:
    train = [Task(id=f"train-{i}", split="train") for i in range(5)]
    drawn = [t.id for r in (1, 2) for t in round_tasks(train, 2, seed=0, round_=r)]
    assert len(set(drawn)) == 4 and all(d.startswith("train-") for d in drawn)
    assert round_tasks(train, 2, 0, 1) == round_tasks(train, 2, 0, 1)  # the same after a resume


class _LengthChat:
    """Prompt ids are the message lengths: enough to tell a hinted prompt from a plain one."""

    model_id = "toy"
    native_tools = False

    def prompt_token_ids(self, conversation: Any, tools: Any) -> list[int]:
        return [len(m["content"]) for m in conversation]

    def generate(self, conversations: Any, tools: Any, params: Any) -> list[Generation]:
        self.seen = [c[-1]["content"] for c in conversations]
        return [Generation(text='<tool_call>{"name": "noop", "arguments": {}}</tool_call>',
                           prompt_token_ids=self.prompt_token_ids(c, tools), token_ids=[5]) for c in conversations]


class _Oracle:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Any) -> list[Action]:
        return [Action.call("noop") for _ in inputs]


def test_rationalization_samples_with_the_hint_and_trains_without_it() -> None:
    chat = _LengthChat()
    llm = LLMPolicy(chat, PolicyInfo(name="llm", kind="llm"), PolicyOptions())  # type: ignore[arg-type]
    item = PolicyInput(task=Task(id="train-0"), seed=0, observation=Observation(role="agent", content="ticket", step=0),
                       history=())
    action = HintedPolicy(llm, _Oracle()).act([item])[0]
    assert HINT.split("{")[0] in chat.seen[0] and '"name": "noop"' in chat.seen[0]  # sampled with the hint
    assert action.generation is not None
    assert action.generation.prompt_token_ids == chat.prompt_token_ids(llm.conversation(item), None)  # trained without


def test_group_std_shows_a_component_that_never_varies_within_a_group() -> None:
    from drill.train.exploration import component_group_std, group_signal

    def scored(c: float, d: float) -> Episode:
        return _episode(0, c + d).model_copy(update={"score": Score(total=c + d, components={"c": c, "d": d},
                                                                    weights={"c": 1.0, "d": 1.0})})

    # two groups of two: c varies in the first group only, d never varies
    record = component_group_std([scored(0.0, 1.0), scored(1.0, 1.0), scored(0.5, 0.0), scored(0.5, 0.0)], 2)
    assert record["group_std/c"] == pytest.approx(0.25) and record["group_flat/c"] == 0.5
    assert record["group_std/d"] == 0.0 and record["group_flat/d"] == 1.0
    assert record["group_flat/total"] == 0.5  # the second group's totals are equal: a zero-variance group
    assert group_signal(record) == "flat 50%  std[c=0.25 d=0.00]"  # the printed step line's part
    # c and d trade off: every component moves, yet the group's total does not, so GRPO gets no gradient from it
    traded = component_group_std([scored(0.0, 1.0), scored(1.0, 0.0)], 2)
    assert traded["group_flat/total"] == 1.0 and traded["group_flat/c"] == 0.0
    assert group_signal(traded) == "flat 100%  std[c=0.50 d=0.50]"
    with pytest.raises(ValueError, match="groups of 3"):
        component_group_std([scored(0, 0)] * 4, 3)


def test_diverse_demonstrations_show_different_decisions() -> None:
    from drill.envs import triage
    from drill.train.exploration import diverse_demo_tasks

    make = lambda: triage.load(k=1)  # noqa: E731
    train = make().tasks("train")
    first = [oracle_decision(t) for t in train[:2]]
    assert first[0][0] == first[1][0] == 1.0  # the first two both say confidence 1.0: what the model copied
    chosen = diverse_demo_tasks(make, train, triage.baselines["oracle"](), 3)
    assert all(t.split == "train" for t in chosen) and len(chosen) == 3
    decisions = {oracle_decision(t) for t in chosen}
    assert len(decisions) == 3 and {c for c, _ in decisions} == {0.0, 1.0} and {e for _, e in decisions} == {True, False}


def oracle_decision(task: Any) -> tuple[float, bool]:
    from drill.envs.triage import OraclePolicy

    arguments = OraclePolicy.answer(task).arguments
    return arguments["confidence"], arguments["escalate"]
