"""The GRPO loop end to end on a small multi-turn environment written for the test.

A two-role "relay" (writer, critic, writer) where the model plays the writer and a scripted critic
answers; the reward reads the writer's raw outputs, so groups differ. The model is a tiny random
Llama with the embedded SmolLM2 tokenizer (saved once per module), so steps take a fraction of a
second; one test runs the embedded model itself through `drill train`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from drill.core import Action, Component, Env, Event, Observation, PolicyInfo, Rubric, StepResult, Task, Tool
from drill.core import check_split
from drill.train import BaseModel, RunConfig, TrainingStopped, TrainResult
from drill.train.methods import configure, grpo
from drill.train.methods import train as train_method
from drill.train.checkpoint import list_checkpoints
from drill.core.spec import Column, EnvOption, EnvSpec
from drill.train.target import TrainTarget

pytestmark = pytest.mark.slow


def say(text: str) -> None:
    """Say something.

    Args:
        text: What to say.
    """


class RelayTask(Task):
    tier: str


class RelayEnv(Env[RelayTask]):
    task_type = RelayTask
    name = "relay"
    roles = ("writer", "critic")
    _TOOLS = {"say": Tool.from_function(say)}

    def tasks(self, split: str = "test") -> list[Task]:
        check_split(split)
        return [RelayTask(id=f"{split}-{i}", split=split, tier="easy" if i % 2 else "hard") for i in range(4)]

    def _obs(self, error: str | None = None) -> Observation:
        return Observation(role=self.roles[self.turn % 2], content=f"Turn {self.turn} of {self.task.id}.",
                           step=self.turn, error=error, tools=[t.spec for t in self._TOOLS.values()],
                           instructions="Say something.")

    def _reset(self, task: Task, seed: int) -> Observation:
        self.task, self.turn = task, 0
        return self._obs()

    def _tools(self) -> Mapping[str, Tool]:
        return self._TOOLS

    def _next(self, events: list[Event]) -> StepResult:
        self.turn += 1
        return StepResult(observation=self._obs(), events=events, done=self.turn >= 3)

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        return self._next([Event(name="said", step=self.turn)])

    def _acting(self) -> tuple[str, int]:
        return self.roles[self.turn % 2], self.turn

    def _reject(self, message: str, event: Event) -> StepResult:
        return self._next([event])


class Critic:
    info = PolicyInfo(name="critic")

    def act(self, inputs: Any) -> list[Action]:
        return [Action.call("say", text="ok") for _ in inputs]


def _writer_text(episode: Any) -> str:
    return "".join(t.action.raw or "" for t in episode.turns if t.role == "writer")


def relay_rubric(bonus: float = 1.0, constant: bool = False) -> Rubric:
    if constant:
        return Rubric([Component("flat", lambda ep, task: 1.0)])
    return Rubric([Component("length", lambda ep, task: len(_writer_text(ep)) / 100, bonus),
                   Component("e_count", lambda ep, task: _writer_text(ep).count("e") / 10, 1.0)])


def relay_target(constant: bool = False, baselines: dict[str, Any] | None = None) -> TrainTarget:
    """The relay env as a training target (its own spec, as a registered env would have)."""
    baselines = baselines or {"oracle": Critic, "heuristic": Critic, "random": Critic}
    spec = EnvSpec(name="relay", summary="a toy relay", load=RelayEnv,
                   rubric=lambda options, params: relay_rubric(params["bonus"], constant),
                   baselines=lambda options: baselines,
                   summarize=lambda episodes, tasks: {"total": sum(e.score.total for e in episodes) / len(episodes)},
                   columns=(Column("total"),), describe=lambda task: task.id,
                   rubric_params=(EnvOption("bonus", float, 1.0, "the length bonus"),))
    return TrainTarget(spec=spec, options={}, make_env=RelayEnv, baselines=baselines)


RELAY = relay_target()
FLAT = relay_target(constant=True)


@pytest.fixture()
def tiny_base(tiny_model_dir: Path) -> Iterator[BaseModel]:
    from drill.models.local import fresh_model, load_local

    load_local(str(tiny_model_dir))
    model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
    yield BaseModel(model=model, tokenizer=tokenizer, model_id=model_id)


def _config(tiny_model_dir: Path, out: Path, **changes: Any) -> tuple[RunConfig, grpo.Options]:
    settings: dict[str, Any] = dict(
        env="relay", model=str(tiny_model_dir), roles=["writer"], group_size=3, tasks_per_step=2, max_new_tokens=12,
        steps=3, checkpoint_every=1, output_dir=out, eval_tasks=0, curriculum="easy:2,hard:2",
        weight_schedules=["bonus=2->1@3", "e_count=0.5"], kl_beta=0.04, ppo_epochs=2)
    settings.update(changes)
    return configure("grpo", **settings)


def train(settings: tuple[RunConfig, grpo.Options], **kwargs: Any) -> TrainResult:
    """GRPO on a `_config`'s run config and options."""
    config, options = settings
    return train_method(config, "grpo", options, **kwargs)


def _adapter(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path / "adapter_model.safetensors")


def test_tiny_run_trains_logs_checkpoints_and_resumes_exactly(tiny_model_dir: Path, tiny_base: BaseModel,
                                                               tmp_path: Path) -> None:
    from drill.models.local import fresh_model

    straight = train(_config(tiny_model_dir, tmp_path / "straight", eval_tasks=2, eval_baselines=["oracle"]),
                     target=RELAY, base=tiny_base)
    records = straight.metrics
    assert [r["step"] for r in records] == [1, 2, 3]
    assert [r["stage"] for r in records] == ["easy", "easy", "hard"]
    assert [r["weight/bonus"] for r in records] == [2.0, 1.5, 1.0]
    for r in records:
        assert {"reward/total", "reward/length", "reward/e_count", "loss", "kl", "clip_fraction", "tokens_per_s",
                "step_s", "completion_tokens_mean", "zero_variance_groups"} <= set(r)
        assert r["samples"] == 12  # 2 tasks x 3 episodes x 2 writer turns; the critic's turns give none
    assert records[0]["kl"] == 0.0 and records[-1]["kl"] > 0.0  # the adapter starts as the base model
    assert (tmp_path / "straight" / "learning_curve.png").stat().st_size > 0
    lora_b = {k: v for k, v in _adapter(straight.adapter_dir).items() if "lora_B" in k}
    assert lora_b and all(v.abs().max() > 0 for v in lora_b.values())  # LoRA B starts at zero: it moved
    config = json.loads((straight.adapter_dir / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_model_dir)
    assert [row["policy"] for row in straight.evaluation] == ["trained", "untrained", "oracle"]
    assert straight.evaluation[0]["adapter"] != "—"
    heldout = json.loads((tmp_path / "straight" / "heldout.json").read_text())["meta"]
    assert heldout["split"] == "validation" and all(t.startswith("validation-") for t in heldout["tasks"])

    # the same run killed after step 2 and resumed: identical steps, data order and final weights
    model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
    train(_config(tiny_model_dir, tmp_path / "split", steps=2), target=RELAY,
          base=BaseModel(model, tokenizer, model_id))
    assert [p.name for p in list_checkpoints(tmp_path / "split")] == ["step-000001", "step-000002"]
    state = json.loads((tmp_path / "split" / "checkpoints" / "step-000002" / "state.json").read_text())
    assert state["step"] == 2 and state["data_position"] == {"easy": 4, "hard": 0}
    with pytest.raises(ValueError, match="already holds a training run"):
        train(_config(tiny_model_dir, tmp_path / "split"), target=RELAY, base=BaseModel(model, tokenizer, model_id))
    with pytest.raises(ValueError, match=r"seed differ from the checkpoint's run.*`seed=0` in its --stage"):
        train(_config(tiny_model_dir, tmp_path / "split", resume=True, seed=1000), target=RELAY,
              base=BaseModel(*fresh_model(str(tiny_model_dir))))  # as a stage repeated under fresh_draws would
    model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
    resumed = train(_config(tiny_model_dir, tmp_path / "split", resume=True), target=RELAY,
                    base=BaseModel(model, tokenizer, model_id))
    assert [r["step"] for r in resumed.metrics] == [1, 2, 3]
    assert [r["tasks"] for r in resumed.metrics] == [r["tasks"] for r in records]
    assert resumed.metrics[-1]["reward/total"] == records[-1]["reward/total"]
    final, expected = _adapter(resumed.adapter_dir), _adapter(straight.adapter_dir)
    assert all(torch.equal(final[k], expected[k]) for k in expected)


def test_zero_variance_groups_are_counted_and_give_no_update(tiny_model_dir: Path, tiny_base: BaseModel,
                                                             tmp_path: Path) -> None:
    result = train(_config(tiny_model_dir, tmp_path, steps=2, kl_beta=0.0, weight_schedules=[], ppo_epochs=1),
                   target=FLAT, base=tiny_base)
    for record in result.metrics:
        assert record["zero_variance_groups"] == record["groups"] == 2
        assert record["trained_samples"] == 0 and record["samples"] == 12 and record["grad_norm"] == 0.0
    assert all(v.abs().max() == 0 for k, v in _adapter(result.adapter_dir).items() if "lora_B" in k)


def test_kl_beta_zero_runs_the_reference_on_one_micro_batch_per_step(tiny_model_dir: Path, tiny_base: BaseModel,
                                                                     tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import peft

    passes: list[int] = []
    original = peft.PeftModel.disable_adapter

    def counting(self: Any) -> Any:
        passes.append(1)
        return original(self)

    monkeypatch.setattr(peft.PeftModel, "disable_adapter", counting)
    result = train(_config(tiny_model_dir, tmp_path, steps=2, kl_beta=0.0, ppo_epochs=1, micro_batch_size=1),
                   target=RELAY, base=tiny_base)
    stepped = [r for r in result.metrics if r["trained_samples"] > 1]
    assert stepped, "the relay run should train on several micro-batches"
    assert len(passes) == sum(1 for r in result.metrics if r["trained_samples"] > 0)  # one reference pass a step
    assert all(r["kl"] is not None and math.isfinite(r["kl"]) for r in stepped)


def test_a_run_from_a_saved_adapter_is_anchored_to_it_and_keeps_that_anchor_on_resume(tiny_model_dir: Path,
                                                                                       tmp_path: Path) -> None:
    """RL after SFT: the KL reference is the adapter the run started from, not the base model."""
    from drill.models.local import fresh_model

    def base() -> BaseModel:
        return BaseModel(*fresh_model(str(tiny_model_dir)))

    start = train(_config(tiny_model_dir, tmp_path / "sft", steps=2), target=RELAY, base=base()).adapter_dir
    settings = dict(steps=3, init_adapter=str(start), kl_beta=0.5)
    straight = train(_config(tiny_model_dir, tmp_path / "rl", **settings), target=RELAY, base=base())
    assert straight.metrics[0]["kl"] == 0.0  # step 1's policy is the start: against the base weights it is not
    assert straight.metrics[-1]["kl"] > 0.0
    train(_config(tiny_model_dir, tmp_path / "split", **(settings | {"steps": 1})), target=RELAY, base=base())
    resumed = train(_config(tiny_model_dir, tmp_path / "split", **settings, resume=True), target=RELAY, base=base())
    assert [r["kl"] for r in resumed.metrics] == [r["kl"] for r in straight.metrics]  # the anchor is not the checkpoint
    final, expected = _adapter(resumed.adapter_dir), _adapter(straight.adapter_dir)
    assert all(torch.equal(final[k], expected[k]) for k in expected)
    # online DPO too: at its first step the policy is the reference, so every pair's loss is -log sigmoid(0)
    config, options = configure("dpo", env="relay", model=str(tiny_model_dir), roles=["writer"], group_size=3,
                                tasks_per_step=2, max_new_tokens=12, steps=1, output_dir=tmp_path / "dpo",
                                eval_tasks=0, init_adapter=str(start), temperature=1.0)
    first = train_method(config, "dpo", options, target=RELAY, base=base()).metrics[0]
    assert first["pairs"] > 0 and first["loss"] == pytest.approx(math.log(2), abs=1e-5)


def _hook_training_logits(model: Any, change: Any) -> None:
    """Alter the logits only in gradient-enabled passes (the training forward), not in generation or the reference."""
    def hook(module: Any, inputs: Any, output: torch.Tensor) -> torch.Tensor:
        return change(output) if torch.is_grad_enabled() else output

    model.lm_head.register_forward_hook(hook)


def test_nan_guard_stops_with_the_step_number(tiny_model_dir: Path, tiny_base: BaseModel, tmp_path: Path) -> None:
    _hook_training_logits(tiny_base.model, lambda out: out * float("nan"))
    with pytest.raises(TrainingStopped, match="step 1: the loss is nan") as stopped:
        train(_config(tiny_model_dir, tmp_path), target=RELAY, base=tiny_base)
    assert stopped.value.step == 1
    assert not list_checkpoints(tmp_path)


def test_kl_abort_threshold_stops_the_run(tiny_model_dir: Path, tiny_base: BaseModel, tmp_path: Path) -> None:
    _hook_training_logits(tiny_base.model, lambda out: out + 3.0 * torch.sin(torch.arange(out.shape[-1]) * 1.0))
    with pytest.raises(TrainingStopped, match="exceeds kl_abort=0.5") as stopped:
        train(_config(tiny_model_dir, tmp_path, kl_abort=0.5), target=RELAY, base=tiny_base)
    assert stopped.value.step == 1


def test_embedded_model_tiny_run_saves_an_adapter_that_lora_loading_accepts(tmp_path: Path) -> None:
    """The real embedded SmolLM2 (G=2, one task per step, 16 new tokens): weights move, metrics and a
    checkpoint are written, --resume continues the count, and `lora:` loads the adapter for the evaluation."""
    from drill.models.local import EMBEDDED_MODEL_ID

    config = RunConfig(env="relay", roles=["writer"], group_size=2, tasks_per_step=1, max_new_tokens=16,
                       checkpoint_every=2, eval_tasks=0, output_dir=tmp_path, learning_rate=1e-3)
    first = train((config, grpo.Options(steps=2)), target=RELAY)
    assert [r["step"] for r in first.metrics] == [1, 2]
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-000002"]
    resumed = train((config.updated(resume=True, eval_tasks=1, eval_baselines=[]), grpo.Options(steps=3)),
                    target=RELAY)
    assert [r["step"] for r in resumed.metrics] == [1, 2, 3]
    assert json.loads((resumed.adapter_dir / "adapter_config.json").read_text())["base_model_name_or_path"] == \
        EMBEDDED_MODEL_ID
    assert any(v.abs().max() > 0 for k, v in _adapter(resumed.adapter_dir).items() if "lora_B" in k)
    trained, untrained = resumed.evaluation
    assert (trained["policy"], untrained["policy"]) == ("trained", "untrained")
    assert trained["model"] == EMBEDDED_MODEL_ID and len(trained["adapter"]) == 12 and untrained["adapter"] == "—"


def test_prompt_options_shape_rollouts_and_the_heldout_rows_alike(tiny_model_dir: Path, tiny_base: BaseModel,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefill, compact listing and oracle demonstrations reach every prompt (rollouts and the held-out rows) and the
    held-out LLM rows parse prefill + generated text."""
    from drill.train import rollouts

    prefill = '<tool_call>\n{"name": "say", "arguments": {"text": "'
    seen: list[Any] = []
    original = rollouts.LLMPolicy.act

    def spy(self: Any, inputs: Any) -> Any:  # the test seam: record each rollout prompt as rendered
        seen.extend(self.model.template.render(self.conversation(item), None) for item in inputs)
        return original(self, inputs)

    config = _config(tiny_model_dir, tmp_path / "run", steps=1, curriculum="", weight_schedules=[], eval_tasks=1,
                     eval_baselines=[], tool_listing="compact", prefill=prefill, demos=1)
    monkeypatch.setattr(rollouts.LLMPolicy, "act", spy)
    result = train(config, target=RELAY, base=tiny_base)
    assert seen and all(p.endswith(prefill) for p in seen)
    assert all("say(text: string)" in p and '"properties"' not in p for p in seen)  # compact listing
    demo = '<tool_call>\n{"name": "say", "arguments": {"text": "ok"}}\n</tool_call>'  # the oracle's writer turn
    assert all(demo in p for p in seen)
    episodes = json.loads((tmp_path / "run" / "heldout.json").read_text())["episodes"]
    writer_turns = [t for e in episodes for t in e["turns"] if t["role"] == "writer"]
    assert len(writer_turns) == 4 and all(t["action"]["raw"].startswith(prefill) for t in writer_turns)
    assert [row["policy"] for row in result.evaluation] == ["trained", "untrained"]


def test_micro_batches_by_token_budget_give_the_same_update(tiny_model_dir: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Gradients accumulate over micro-batches as a sum normalised by the step's sample count, so sizing them by
    a token budget changes the work per pass, not the update (up to float summation order)."""
    from drill.models.local import fresh_model

    sizes: list[list[int]] = []
    original = grpo.micro_batches
    monkeypatch.setattr(grpo, "micro_batches", lambda *a, **k: sizes.append(
        [len(b.samples) for b in original(*a, **k)]) or original(*a, **k))
    runs = {}
    for name, changes in {"count": {}, "tokens": {"micro_batch_tokens": 300}}.items():
        model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
        result = train(_config(tiny_model_dir, tmp_path / name, steps=2, ppo_epochs=1, checkpoint_every=2, **changes),
                       target=RELAY, base=BaseModel(model, tokenizer, model_id))
        runs[name] = (result.metrics, _adapter(result.adapter_dir))
    (count_metrics, count_weights), (token_metrics, token_weights) = runs["count"], runs["tokens"]
    assert [m["reward/total"] for m in count_metrics] == [m["reward/total"] for m in token_metrics]
    assert all(torch.allclose(count_weights[k], token_weights[k], atol=1e-5) for k in count_weights)
    assert any(v.abs().max() > 0 for k, v in token_weights.items() if "lora_B" in k)
    assert sizes[:2] == [[3, 3, 6], [3, 3, 6]] and sizes[2:] != sizes[:2], sizes  # the micro-batches did differ


def test_store_keeps_every_rollout_and_memory_shows_its_successes_in_rollouts_and_heldout_rows(
        tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--store writes each step's episodes (method grpo@STEP, success against the oracle); --memory puts the most
    similar stored successes of other training tasks in the trained policy's prompts, in rollouts and held out."""
    from drill.memory import TrajectoryStore
    from drill.memory.policy import EXAMPLE_NOTE, MemoryPolicy
    from drill.models.local import fresh_model

    store_path = tmp_path / "store.sqlite"
    model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
    train(_config(tiny_model_dir, tmp_path / "first", steps=2, curriculum="", weight_schedules=[],
                  store=str(store_path)), target=RELAY, base=BaseModel(model, tokenizer, model_id))
    rows = TrajectoryStore(store_path).episodes(env="relay")
    assert [r.method for r in rows] == ["grpo@1"] * 6 + ["grpo@2"] * 6
    assert {r.split for r in rows} == {"train"} and all(r.total == r.episode().score.total for r in rows)
    successes = [r for r in rows if r.success]
    assert successes, "the relay's length reward lets some rollouts reach half the oracle's total"

    # memory shows valid calls only (the tiny model's own rollouts are not): a store of scripted successes
    from drill.core.rollout import run_episodes

    memory_path = tmp_path / "memory.sqlite"
    scripted = run_episodes(RelayEnv, [(t, 0) for t in RELAY.tasks("train")], Critic(), RELAY.rubric({}))
    memory_store = TrajectoryStore(memory_path)
    memory_store.add(scripted, {t.id: t for t in RELAY.tasks("train")}, {}, lambda e, t: True, method="critic")
    memory_store.close()
    seen: list[str] = []
    original = MemoryPolicy.act

    def spy(self: Any, inputs: Any) -> Any:  # the test seam: each trained prompt as rendered
        seen.extend(self.model.template.render(self.conversation(item), None) for item in inputs)
        return original(self, inputs)

    monkeypatch.setattr(MemoryPolicy, "act", spy)
    model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
    result = train(_config(tiny_model_dir, tmp_path / "second", steps=1, curriculum="", weight_schedules=[],
                           eval_tasks=1, eval_baselines=[], memory=str(memory_path), memory_k=1),
                   target=RELAY, base=BaseModel(model, tokenizer, model_id))
    assert len(seen) == 12 + 2 * 2  # 6 rollouts x 2 writer turns, then 2 held-out LLM rows x 2 writer turns
    demo = '<tool_call>\n{"name": "say", "arguments": {"text": "ok"}}\n</tool_call>'
    assert all(EXAMPLE_NOTE.strip() in p and demo in p for p in seen)
    assert [row["policy"] for row in result.evaluation] == ["trained", "untrained"]
    with pytest.raises(ValueError, match="no trajectory store there"):
        _config(tiny_model_dir, tmp_path / "third", memory=str(tmp_path / "missing.sqlite"))


def test_a_curriculum_stage_advances_on_success_and_a_resumed_run_follows_the_same_stages(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    """`easy:5@0.5`: the run moves to `hard` once three steps in a row average 50% success (against half the
    oracle's total), before the 5 steps are up; the stages are read back from metrics.jsonl on resume."""
    from drill.models.local import fresh_model

    def run(out: Path, steps: int, resume: bool = False) -> list[dict[str, Any]]:
        model, tokenizer, model_id = fresh_model(str(tiny_model_dir))
        config = _config(tiny_model_dir, out, steps=steps, curriculum="easy:5@0.5,hard:5", weight_schedules=[],
                         checkpoint_every=1, resume=resume)
        return train(config, target=RELAY, base=BaseModel(model, tokenizer, model_id)).metrics

    records = run(tmp_path / "straight", 5)
    rates = [r["success"] for r in records]
    stages = [r["stage"] for r in records]
    assert all(0.0 <= r <= 1.0 for r in rates)
    first_hard = stages.index("hard")
    assert 3 <= first_hard < 5 and sum(rates[first_hard - 3:first_hard]) / 3 >= 0.5  # early, and earned
    assert all(sum(rates[k - 3:k]) / 3 < 0.5 for k in range(3, first_hard))  # not earlier than earned
    run(tmp_path / "split", first_hard)  # killed just before the switch...
    resumed = run(tmp_path / "split", 5, resume=True)  # ...and resumed: the same stages and draws
    assert [r["stage"] for r in resumed] == stages and [r["tasks"] for r in resumed] == [r["tasks"] for r in records]
