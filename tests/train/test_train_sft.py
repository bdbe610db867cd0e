"""SFT on episodes: samples are exactly what the LLM policy prompts, loss only on the replies, train split only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from drill.core.types import Action, Generation, PolicyInfo
from drill.models.local import TransformersChatModel
from drill.models.policy import LLMPolicy, PolicyOptions, render_react
from drill.train import BaseModel, RunConfig, train
from drill.train.samples import collate, episode_samples
from drill.train.methods.sft import Options as SFTOptions
from drill.train.methods.sft import source_episodes
from drill.train.sources import _stored, teacher_prompter
from test_train_loop import Critic, RelayEnv, relay_target, tiny_base  # type: ignore[import-not-found]

pytestmark = pytest.mark.slow
__all__ = ["tiny_base"]  # a fixture, used by name

PREFILL = '<tool_call>\n{"name": "say", "arguments": {"text": "'


class Writer:
    """The writer's demonstrations: a different line for every task and turn."""

    info = PolicyInfo(name="writer")

    def act(self, inputs: Any) -> list[Action]:
        return [Action.call("say", text=f"{i.task.id} line {len(i.own_turns())}") for i in inputs]


WRITING = relay_target(baselines={"oracle": Writer, "heuristic": Critic, "random": Critic})


def _config(model_dir: Path, out: Path, **changes: Any) -> RunConfig:
    settings: dict[str, Any] = dict(env="relay", model=str(model_dir), roles=["writer"], scripted_policy="heuristic",
                                    max_new_tokens=24, output_dir=out, eval_tasks=0, tool_listing="compact",
                                    prefill=PREFILL, checkpoint_every=2, micro_batch_size=3)
    settings.update(changes)
    return RunConfig(**settings)


class _CannedChat(TransformersChatModel):
    """The real chat model's prompt path (`prompt_token_ids` of each conversation, as `generate` computes it),
    with the writer's line as the 'generated' text, so an LLMPolicy plays the same episode as the teacher."""

    def generate(self, conversations: Any, tools: Any, params: Any) -> list[Generation]:
        replies = []
        for conversation in conversations:
            prompt = self.prompt_token_ids(conversation, tools)
            view = conversation[-2]["content"]  # the current observation, before the prefill
            turn, task = view.removeprefix("Turn ").rstrip(".").split(" of ")  # "Turn 2 of train-0."
            turn = str(int(turn) // 2)  # the writer acts on env turns 0 and 2
            text = f'{task} line {turn}"}}}}\n</tool_call>'
            replies.append(Generation(text=text, prompt_token_ids=prompt, token_ids=[1], model=self.model_id))
        return replies


def test_sft_samples_are_the_policy_prompts_with_loss_only_on_the_replies(tiny_model_dir: Path, tiny_base: BaseModel,
                                                                          tmp_path: Path) -> None:
    from drill.core.rollout import run_episodes
    from drill.train.rollouts import prompt_options

    config = _config(tiny_model_dir, tmp_path / "run", demos=1)
    prompting = prompt_options(config, WRITING)
    prompter = teacher_prompter(tiny_base.model, tiny_base, prompting)
    episodes = source_episodes(config, SFTOptions(source="oracle"), WRITING, ["writer"], prompter)
    assert [e.task_id for e in episodes] == [t.id for t in WRITING.tasks("train")]  # the training split only
    samples = [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {"writer": 1.0})]
    assert [(s.episode, s.turn, s.role) for s in samples[:2]] == [(0, 0, "writer"), (0, 2, "writer")]  # 1 per turn

    # The LLM policy, prompted the same way, conditions generation on exactly these prompt ids, turn by turn.
    chat = _CannedChat(tiny_base.model, tiny_base.tokenizer, tiny_base.model_id)
    llm = LLMPolicy(chat, PolicyInfo(name="llm", kind="llm"), PolicyOptions(**prompting))
    played = run_episodes(RelayEnv, [(t, 0) for t in WRITING.tasks("train")], {"writer": llm, "critic": Critic()})
    llm_samples = [s for i, e in enumerate(played) for s in episode_samples(e, i, {"writer": 1.0})]
    assert [s.prompt_ids for s in samples] == [s.prompt_ids for s in llm_samples]
    assert [t.action.raw for e in episodes for t in e.turns] == [t.action.raw for e in played for t in e.turns]

    # Loss only on the reply's tokens: the prompt (system, demonstration, the writer's own first reply, the
    # prefill) and the critic's turns carry none.
    tokenizer = tiny_base.tokenizer
    batch = collate(samples[:2], pad_id=0)
    for row, sample in enumerate(samples[:2]):
        ids = batch.input_ids[row][batch.loss_mask[row].bool()].tolist()
        assert tokenizer.decode(ids) == f'train-0 line {sample.turn // 2}"}}}}\n</tool_call>'
        prompt = tokenizer.decode(list(sample.prompt_ids))
        assert prompt.endswith(PREFILL) and "say(text: string)" in prompt
        assert '<tool_call>\n{"name": "say", "arguments": {"text": "train-0 line 0"}}\n</tool_call>' in prompt  # demo
    second = tokenizer.decode(list(samples[1].prompt_ids))
    assert 'train-0 line 0"}}\n</tool_call>' in second  # the first reply is prompt in the second turn: no loss
    assert int(batch.loss_mask.sum()) == sum(len(s.completion_ids) for s in samples[:2])


def test_a_source_that_cannot_be_written_after_the_prefill_stops_the_run(tiny_model_dir: Path, tiny_base: BaseModel,
                                                                        tmp_path: Path) -> None:
    config = _config(tiny_model_dir, tmp_path / "run", prefill='<tool_call>\n{"name": "shout"')
    prompter = teacher_prompter(tiny_base.model, tiny_base, {"tool_listing": "compact", "prefill": config.prefill,
                                                             "demonstrations": ()})
    with pytest.raises(ValueError, match="does not start with the prefill"):
        source_episodes(config, SFTOptions(source="oracle"), WRITING, ["writer"], prompter)


def test_stored_episodes_of_test_tasks_are_never_trained_on(tmp_path: Path) -> None:
    stored = {"episodes": [{"task_id": "train-1", "seed": 3, "turns": []}, {"task_id": "test-0", "seed": 0, "turns": []}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(stored))
    _, jobs = _stored(path, WRITING.tasks("train"))
    assert [(t.id, s) for t, s in jobs] == [("train-1", 3)]
    path.write_text(json.dumps({"episodes": [{"task_id": "test-0", "seed": 0, "turns": []}]}))
    with pytest.raises(ValueError, match="no episode of a training task"):
        _stored(path, WRITING.tasks("train"))
    # a model's stored turn is replayed as it wrote it (later prompts show its raw text, even when it did not parse)
    turn = {"role": "writer", "action": {"tool": "", "arguments": {}, "parse_error": "no tool call",
                                         "raw": "<tool_call>\n{\"name\": \"say\", \"argu"}}
    path.write_text(json.dumps({"episodes": [{"task_id": "train-1", "seed": 0, "turns": [turn]}] * 2}))
    with pytest.raises(ValueError, match="two stored episodes of task train-1 seed 0"):
        _stored(path, WRITING.tasks("train"))
    path.write_text(json.dumps({"episodes": [{"task_id": "train-1", "seed": 0, "turns": [turn]}]}))
    replay, _ = _stored(path, WRITING.tasks("train"))
    action = replay.actions[("train-1", 0, "writer", 0)]
    assert (action.raw, action.parse_error) == (turn["action"]["raw"], "no tool call")


def test_sft_lowers_the_reply_nll_checkpoints_and_resumes(tiny_model_dir: Path, tiny_base: BaseModel,
                                                          tmp_path: Path) -> None:
    from drill.models.local import fresh_model

    config = _config(tiny_model_dir, tmp_path / "run", learning_rate=3e-2)
    result = train(config, "sft", SFTOptions(source="oracle", epochs=4, batch_size=4), target=WRITING, base=tiny_base)
    losses = [r["loss"] for r in result.metrics]
    assert len(losses) == 8 and losses[-1] < losses[0] - 0.05  # a tiny random model learns slowly, but it learns
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    # a run resumed from step 6 ends where the uninterrupted one did
    again = tmp_path / "again"
    first = train(_config(tiny_model_dir, again, learning_rate=3e-2), "sft",
                  SFTOptions(source="oracle", epochs=3, batch_size=4), target=WRITING,
                  base=BaseModel(*fresh_model(str(tiny_model_dir))))
    assert [r["step"] for r in first.metrics] == list(range(1, 7))
    resumed = train(_config(tiny_model_dir, again, learning_rate=3e-2, resume=True), "sft",
                    SFTOptions(source="oracle", epochs=4, batch_size=4), target=WRITING,
                    base=BaseModel(*fresh_model(str(tiny_model_dir))))
    assert [r["step"] for r in resumed.metrics] == list(range(1, 9))
    assert resumed.metrics[-1]["loss"] == pytest.approx(losses[-1], rel=1e-4)
    from safetensors.torch import load_file

    a, b = load_file(result.adapter_dir / "adapter_model.safetensors"), load_file(
        resumed.adapter_dir / "adapter_model.safetensors")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_a_trajectory_store_is_a_source_of_its_successful_training_episodes(tiny_model_dir: Path,
                                                                            tiny_base: BaseModel,
                                                                            tmp_path: Path) -> None:
    """`store:PATH` (drill eval --store, LATS finds included) replays the store's successes on this environment's
    training tasks with the same options; failures, test tasks and other options are left out."""
    from drill.core.rollout import run_episodes
    from drill.memory import TrajectoryStore

    train_tasks, test_tasks = WRITING.tasks("train"), WRITING.tasks("test")
    tasks = {t.id: t for t in [*train_tasks, *test_tasks]}
    played = run_episodes(RelayEnv, [(t, 5) for t in [*train_tasks[:3], test_tasks[0]]],
                          {"writer": Writer(), "critic": Critic()}, WRITING.rubric({}))
    store = TrajectoryStore(tmp_path / "memory.sqlite")
    store.add(played[:2], tasks, {}, lambda e, t: True, method="lats:llm@8")  # two successes, kept
    store.add(played[2:3], tasks, {}, lambda e, t: False, method="llm")  # a failure
    store.add(played[3:], tasks, {}, lambda e, t: True, method="llm")  # a test-split task
    store.add(played[:1], tasks, {"other": 1}, lambda e, t: True, method="llm")  # other env options
    store.close()
    config = _config(tiny_model_dir, tmp_path / "run")
    prompter = teacher_prompter(tiny_base.model, tiny_base, {"tool_listing": "compact", "prefill": config.prefill,
                                                             "demonstrations": ()})
    episodes = source_episodes(config, SFTOptions(source=f"store:{tmp_path / 'memory.sqlite'}"), WRITING,
                               ["writer"], prompter)
    assert [(e.task_id, e.seed) for e in episodes] == [(played[0].task_id, 5), (played[1].task_id, 5)]
    for replayed, original in zip(episodes, played):
        assert ([(t.action.tool, t.action.arguments) for t in replayed.turns]
                == [(t.action.tool, t.action.arguments) for t in original.turns])
    with pytest.raises(ValueError, match="does not exist"):
        source_episodes(config, SFTOptions(source=f"store:{tmp_path / 'none.sqlite'}"), WRITING, ["writer"], prompter)
    assert not (tmp_path / "none.sqlite").exists()


def test_dagger_trains_the_experts_calls_on_the_states_the_source_reached(tiny_model_dir: Path,
                                                                          tiny_base: BaseModel, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`expert=BASELINE`: the source drives the episodes, each trained turn carries the expert's call at that state,
    so a later turn's prompt holds the source's earlier reply and the completion is the expert's."""
    config = _config(tiny_model_dir, tmp_path / "run")
    prompter = teacher_prompter(tiny_base.model, tiny_base, {"tool_listing": "compact", "prefill": config.prefill,
                                                             "demonstrations": ()})
    episodes = source_episodes(config, SFTOptions(source="heuristic", expert="oracle"), WRITING, ["writer"], prompter)
    assert "oracle labelled 8 states the source reached; it would have acted differently in 8" in capsys.readouterr().out
    for episode in episodes:
        writer = [t for t in episode.turns if t.role == "writer"]
        assert [t.action.arguments for t in writer] == [{"text": f"{episode.task_id} line {k}"} for k in range(2)]
        assert all(t.action.arguments == {"text": "ok"} for t in episode.turns if t.role == "critic")
    samples = [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {"writer": 1.0})]
    second = tiny_base.tokenizer.decode(list(samples[1].prompt_ids))
    assert '{"text": "ok"}' in second and "line 0" not in second  # the source's first reply, not the expert's
    assert tiny_base.tokenizer.decode(list(samples[1].completion_ids)) == 'train-0 line 1"}}\n</tool_call>'
    with pytest.raises(ValueError, match="unknown expert 'sage'"):
        source_episodes(config, SFTOptions(source="heuristic", expert="sage"), WRITING, ["writer"], prompter)
    with pytest.raises(ValueError, match="use one of them"):
        SFTOptions(source="heuristic", expert="oracle", min_reward=0.5)


class ThinkingWriter:
    """The writer's demonstrations in the ReAct form: a thought (its own line per turn), then the call."""

    info = PolicyInfo(name="thinking-writer")

    def act(self, inputs: Any) -> list[Action]:
        actions = []
        for i in inputs:
            action = Action.call("say", text=f"{i.task.id} line {len(i.own_turns())}")
            thought = f"turn {len(i.own_turns())} of {i.task.id} needs a line."
            actions.append(action.model_copy(update={"raw": render_react(thought, "say", action.arguments)}))
        return actions


def test_react_sft_trains_on_the_sources_thought_and_call_through_the_stop_string(tiny_model_dir: Path,
                                                                                  tiny_base: BaseModel,
                                                                                  tmp_path: Path) -> None:
    from drill.train.rollouts import prompt_options

    thinking = relay_target(baselines={"oracle": ThinkingWriter, "heuristic": Critic, "random": Critic})
    config = _config(tiny_model_dir, tmp_path / "run", react=True, prefill="Thought:")
    prompter = teacher_prompter(tiny_base.model, tiny_base, prompt_options(config, thinking))
    episodes = source_episodes(config, SFTOptions(source="oracle"), thinking, ["writer"], prompter)
    samples = [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {"writer": 1.0})]
    tokenizer = tiny_base.tokenizer
    batch = collate(samples[:2], pad_id=0)
    for row, sample in enumerate(samples[:2]):
        k = sample.turn // 2
        trained = tokenizer.decode(batch.input_ids[row][batch.loss_mask[row].bool()].tolist())
        assert trained == (f' turn {k} of train-0 needs a line.\nAction: {{"name": "say", "arguments": '
                           f'{{"text": "train-0 line {k}"}}}}\nObservation:')  # after the prefill, through the stop
        prompt = tokenizer.decode(list(sample.prompt_ids))
        assert prompt.endswith("Thought:") and "Thought: <your reasoning" in prompt  # the ReAct reply format
    assert "Thought: turn 0 of train-0 needs a line." in tokenizer.decode(list(samples[1].prompt_ids))  # history
    assert [t.action.tool for t in episodes[0].turns if t.role == "writer"] == ["say", "say"]


def test_react_sft_refuses_a_source_without_thoughts_and_demos_in_the_hermes_form(tiny_model_dir: Path,
                                                                                  tiny_base: BaseModel,
                                                                                  tmp_path: Path) -> None:
    from drill.train.rollouts import prompt_options

    config = _config(tiny_model_dir, tmp_path / "run", react=True, prefill="Thought:")
    prompter = teacher_prompter(tiny_base.model, tiny_base, prompt_options(config, WRITING))
    with pytest.raises(ValueError, match="trains on the thought as well as the call, and the source's action on "
                                         "task train-0 carries none"):
        source_episodes(config, SFTOptions(source="oracle"), WRITING, ["writer"], prompter)
    with pytest.raises(ValueError, match="with react give demos 0"):
        _config(tiny_model_dir, tmp_path / "run", react=True, demos=1)


def test_render_react_writes_one_thought_line_that_parses_back() -> None:
    from drill.models.parsing import parse_action

    reply = render_react('The mail says: "Flight: PJ292"', "answer", {"answer": "PJ292"})
    parsed = parse_action(reply)
    assert (parsed.tool, parsed.arguments, parsed.raw) == ("answer", {"answer": "PJ292"}, reply)
    for bad in ("two\nlines", "  "):
        with pytest.raises(ValueError, match="one non-empty line"):
            render_react(bad, "answer", {})


def test_sft_says_when_the_sources_replies_do_not_fit_max_new_tokens(tiny_model_dir: Path, tiny_base: BaseModel,
                                                                    tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    train(_config(tiny_model_dir, tmp_path / "run", max_new_tokens=4), "sft", SFTOptions(source="oracle", epochs=1),
          target=WRITING, base=tiny_base)
    out = capsys.readouterr().out
    assert "demonstrated replies are longer than max_new_tokens=4" in out
    train(_config(tiny_model_dir, tmp_path / "fits"), "sft", SFTOptions(source="oracle", epochs=1), target=WRITING,
          base=tiny_base)
    assert "longer than max_new_tokens" not in capsys.readouterr().out
