"""A later stage of a method that draws environment tasks draws them with its own seed, not the first's order again."""

from __future__ import annotations

from pathlib import Path

from drill.train import RunConfig
from drill.train.schedules import TaskSampler
from drill.train.stages import REPEAT_SEED_OFFSET, plan_stages
from test_train_sft import WRITING  # type: ignore[import-not-found]


def _seeds(tmp_path: Path, stages: list[str]) -> list[int]:
    config = RunConfig(env="relay", roles=["writer"], scripted_policy="heuristic", output_dir=tmp_path / "run",
                       seed=7, stages=stages)
    planned, _ = plan_stages(config, WRITING)
    return [stage.config.seed for stage in planned]


def test_a_second_grpo_stage_draws_other_tasks_than_the_first(tmp_path: Path) -> None:
    stages = ["sft:source=oracle", "grpo:steps=2", "rft:rounds=1", "grpo:steps=2", "grpo:steps=1,seed=3",
              "sft:source=oracle"]
    seeds = _seeds(tmp_path, stages)
    assert seeds == [7, 7, 7, 7 + REPEAT_SEED_OFFSET, 3, 7]
    pools = {"all": [object() for _ in range(40)]}
    first, second = (TaskSampler(pools, seed).draw("all", 16) for seed in seeds[1::2][:2])
    assert [id(t) for t in first] != [id(t) for t in second]


def test_a_stage_never_draws_with_a_seed_an_earlier_stage_of_its_method_set(tmp_path: Path) -> None:
    assert _seeds(tmp_path, ["grpo:steps=1,seed=1007", "grpo:steps=1"]) == [1007, 2007]
    assert _seeds(tmp_path, ["rft:rounds=1", "grpo:steps=1", "rft:rounds=1"]) == [7, 7, 1007]
