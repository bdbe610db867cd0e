"""Drill environments inside TRL's GRPOTrainer (the real `trl` package): the same actions give the same episode
and score as `drill eval`, bad calls reach the environment, and a real GRPOTrainer step runs on the embedded model."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from transformers.utils import get_json_schema

from drill import registry
from drill.evaluate.matrix import play
from drill.integrations import trl as drill_trl

CASES = [("triage", {"mode": "agent"}, None), ("inbox", {}, None), ("chaosops", {}, "oversight"),
         ("coderepair", {}, None), ("copilot", {}, None)]


def _tools(environment: Any) -> list[str]:
    """The methods TRL offers the model as tools: every public function of the class but reset and get_reward."""
    return [name for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


@pytest.mark.parametrize(("name", "options", "role"), CASES, ids=[c[0] for c in CASES])
def test_the_oracles_actions_give_drill_evals_episode_and_score(name: str, options: dict, role: str | None) -> None:
    spec = registry.get(name)
    parsed = spec.parse_options(options)
    make_env = spec.make(parsed)
    env = make_env()
    task = env.tasks("test")[3]
    oracle = spec.baselines(parsed)["oracle"]
    played = play(make_env, {"oracle": {r: oracle() for r in env.roles}}, [(task, 1)], spec.rubric_for(parsed), 1)
    expected = played["oracle"][0]

    environment = drill_trl.environment_factory(name, role=role, **options)()
    environment.reset(task.id, 1)
    trained = role or env.roles[0]
    for turn in expected.turns:
        if turn.role == trained:
            getattr(environment, turn.action.tool)(**turn.action.arguments)
    reward = environment.get_reward()

    got = environment.episode
    assert got.done and expected.done
    assert [(t.role, t.action.tool, t.action.arguments, t.observation.content, t.events) for t in got.turns] == \
        [(t.role, t.action.tool, t.action.arguments, t.observation.content, t.events) for t in expected.turns]
    assert got.score == expected.score and reward == expected.score.total
    assert got.policies[trained].name == "trl"


@pytest.mark.parametrize(("name", "options", "role"), CASES, ids=[c[0] for c in CASES])
def test_the_methods_are_the_roles_tools_with_schemas_trl_can_render(name: str, options: dict,
                                                                      role: str | None) -> None:
    environment = drill_trl.environment_factory(name, role=role, **options)()
    env = environment.env
    first = env.tasks("train")[0]
    environment.reset(first.id, 0)
    offered = {t.name: t for t in environment._observation().tools}
    assert sorted(_tools(environment)) == sorted(offered)
    for tool in _tools(environment):
        schema = get_json_schema(getattr(environment, tool))["function"]
        assert schema["name"] == tool
        assert set(schema["parameters"]["properties"]) == set(offered[tool].parameters.get("properties", {}))
        assert set(schema["parameters"].get("required", [])) == set(offered[tool].parameters.get("required", []))


def test_a_call_that_does_not_fit_the_schema_is_the_environments_invalid_action() -> None:
    environment = drill_trl.environment_factory("inbox")()
    task = environment.env.tasks("test")[0]
    environment.reset(task.id, 0)
    shown = environment.read_email(message_id=12345, evil="x")
    assert shown.startswith("error: ")
    assert [e.name for e in environment.episode.events] == ["invalid_action"]
    environment.get_reward()
    assert environment.episode.done and environment.score is not None
    assert environment.score.components["correct"] == 0.0


def test_a_rollout_that_stops_early_is_finished_as_invalid_turns_never_an_unscored_zero() -> None:
    environment = drill_trl.environment_factory("triage", mode="agent")()
    task = environment.env.tasks("test")[0]
    environment.reset(task.id, 0)
    reward = environment.get_reward()
    assert environment.episode.done
    assert environment.episode.count("invalid_action") >= 1
    assert reward == environment.score.total
    assert environment.reset(task.id, 0) and environment.score is None  # a pooled instance starts afresh


def test_choices_are_checked_with_clear_errors() -> None:
    with pytest.raises(ValueError, match="several roles .* name the one to train"):
        drill_trl.environment_factory("chaosops")
    with pytest.raises(ValueError, match="no role 'pilot'"):
        drill_trl.environment_factory("chaosops", role="pilot")
    with pytest.raises(ValueError, match="no baseline 'genius'"):
        drill_trl.environment_factory("chaosops", role="oversight", others="genius")()


def test_the_dataset_holds_each_tasks_brief_and_id() -> None:
    rows = drill_trl.dataset("triage", mode="agent", seeds=2)
    spec = registry.get("triage")
    tasks = spec.make(spec.parse_options({"mode": "agent"}))().tasks("train")
    assert len(rows) == 2 * len(tasks)
    assert rows[0]["task_id"] == tasks[0].id and [rows[0]["seed"], rows[1]["seed"]] == [0, 1]
    system, user = rows[0]["prompt"]
    assert system["role"] == "system" and "submit_resolution" in system["content"] or system["content"]
    assert user == {"role": "user", "content": ""}


@pytest.mark.slow
def test_a_real_grpo_trainer_step_on_the_embedded_model(tmp_path: Path) -> None:
    import torch
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from drill.models.local import EMBEDDED_MODEL_ID, fresh_model

    torch.manual_seed(0)
    model, tokenizer, _ = fresh_model(EMBEDDED_MODEL_ID)
    tokenizer = drill_trl.chatml_tools(tokenizer)
    tokenizer.padding_side = "left"
    components = drill_trl.component_rewards("inbox")
    names = [f"rewards/{c.__name__}/mean" for c in components]  # TRL appends the env's own reward to the list
    factory = drill_trl.environment_factory("inbox")
    made: list[Any] = []

    def tracked() -> Any:
        made.append(factory())
        return made[-1]

    args = GRPOConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=24, max_tool_calling_iterations=1, learning_rate=1e-5, logging_steps=1,
                      gradient_checkpointing=False,
                      report_to=[], use_cpu=True, bf16=False, save_strategy="no", temperature=1.0,
                      reward_weights=[0.0] * len(components))
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, reward_funcs=components,
                          train_dataset=drill_trl.dataset("inbox").select(range(2)), environment_factory=tracked,
                          peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    trainer.train()
    logged = {k for row in trainer.state.log_history for k in row}
    assert "rewards/DrillInboxEnvironment/mean" in logged
    assert set(names) <= logged
    played = [e for e in made if e.task is not None]
    assert played and all(e.episode.done and e.score is not None for e in played)
