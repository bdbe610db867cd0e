"""Curriculum, reward-weight schedules, the task sampler's data position, and the config file."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from drill.core.types import Task
from drill.train.config import read_settings
from drill.train.methods import configure
from drill.train.schedules import Curriculum, TaskSampler, WeightSchedule, parse_schedules


class TierTask(Task):
    tier: str


TASKS = [TierTask(id=f"{tier}-{i}", split="train", tier=tier) for tier in ("easy", "hard") for i in range(3)]


def test_curriculum_stages_by_step() -> None:
    curriculum = Curriculum.parse("easy:2, hard:3")
    assert [curriculum.stage_at(s) for s in range(1, 8)] == ["easy", "easy", "hard", "hard", "hard", "hard", "hard"]
    pools = curriculum.pools(TASKS, "tier")
    assert [t.id for t in pools["hard"]] == ["hard-0", "hard-1", "hard-2"]


def test_a_stage_with_a_rate_advances_once_its_last_three_steps_reach_it() -> None:
    curriculum = Curriculum.parse("easy:10@0.7, hard:5")
    assert curriculum.gated and curriculum.stages[0].advance_at == 0.7
    assert curriculum.next_stage([]) == "easy"
    climbing = [("easy", r) for r in (0.2, 0.9, 0.9, 0.5, 0.8)]
    assert curriculum.next_stage(climbing[:3]) == "easy"  # (0.2+0.9+0.9)/3 = 0.67 < 0.7
    assert curriculum.next_stage(climbing[:4]) == "hard"  # (0.9+0.9+0.5)/3 = 0.77 >= 0.7
    assert curriculum.next_stage(climbing[:2]) == "easy"  # fewer than three steps never advance
    assert curriculum.next_stage([("easy", 0.0)] * 10) == "hard"  # at the latest after its steps
    assert curriculum.next_stage([("easy", 0.0)] * 10 + [("hard", 1.0)] * 9) == "hard"  # the last stage stays
    with pytest.raises(ValueError, match="resume with the same curriculum"):
        curriculum.next_stage([("hard", 1.0)])
    with pytest.raises(ValueError, match="use next_stage"):
        curriculum.stage_at(1)
    plain = Curriculum.parse("easy:2,hard:3")
    assert [plain.next_stage([(plain.stage_at(s), None) for s in range(1, n)]) for n in range(1, 8)] == \
        [plain.stage_at(n) for n in range(1, 8)]  # by steps, next_stage agrees with stage_at


@pytest.mark.parametrize("spec", ["easy", "easy:0", "easy:x", ":5", "easy:2,,hard:1", "easy:5@0", "easy:5@1.5",
                                  "easy:5@x", "easy:5@"])
def test_bad_curriculum_specs_say_how_to_write_one(spec: str) -> None:
    with pytest.raises(ValueError, match="NAME:STEPS"):
        Curriculum.parse(spec)


def test_curriculum_stage_that_selects_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="'medium' selects no training task; tier takes the values easy, hard"):
        Curriculum.parse("medium:5").pools(TASKS, "tier")
    with pytest.raises(ValueError, match="not an attribute"):
        Curriculum.parse("easy:5").pools(TASKS, "difficulty")


def test_weight_schedule_anneals_linearly_then_holds() -> None:
    whole_run = WeightSchedule.parse("rogue_multiplier=2.0->1.0")
    assert [whole_run.value_at(s, 5) for s in range(1, 6)] == pytest.approx([2.0, 1.75, 1.5, 1.25, 1.0])
    short = WeightSchedule.parse("format = 0 -> 1 @ 3")
    assert [short.value_at(s, 10) for s in (1, 2, 3, 4, 9)] == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0])
    constant = WeightSchedule.parse("parsimony=0.3")
    assert constant.value_at(1, 10) == constant.value_at(10, 10) == 0.3


@pytest.mark.parametrize("spec", ["rogue_multiplier", "x=a->b", "=1", "x=1->2@0", "x=1->"])
def test_bad_weight_schedules(spec: str) -> None:
    with pytest.raises(ValueError, match="weight schedule"):
        WeightSchedule.parse(spec)


def test_duplicate_schedules_rejected() -> None:
    with pytest.raises(ValueError, match="twice for format"):
        parse_schedules(["format=1", "format=0->1"])


def test_sampler_covers_each_pass_then_reshuffles_and_resumes_at_its_position() -> None:
    pools = Curriculum.parse("").pools(TASKS, "tier")
    sampler = TaskSampler(pools, seed=3)
    first_pass = [t.id for t in sampler.draw("all", 6)]
    assert sorted(first_pass) == sorted(t.id for t in TASKS)
    second_pass = [t.id for t in sampler.draw("all", 6)]
    assert sorted(second_pass) == sorted(first_pass) and second_pass != first_pass
    resumed = TaskSampler(pools, seed=3)
    resumed.load_state_dict(json.loads(json.dumps(TaskSampler(pools, seed=3).state_dict() | {"all": 4})))
    replay = TaskSampler(pools, seed=3)
    replay.draw("all", 4)
    assert [t.id for t in resumed.draw("all", 5)] == [t.id for t in replay.draw("all", 5)]
    with pytest.raises(ValueError, match="same curriculum"):
        resumed.load_state_dict({"easy": 1})


def test_config_file_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text('env = "chaosops"\ngroup_size = 4\nloss_type = "dr_grpo"\nroles = ["oversight"]\n'
                    'weight_schedules = ["rogue_multiplier=2.0->1.0"]\n[role_rewards]\noversight = "rogue_caught"\n')
    config, options = configure("grpo", **read_settings(toml))
    assert (config.env, config.group_size, options.loss_type, config.roles) == ("chaosops", 4, "dr_grpo", ["oversight"])
    assert config.role_rewards == {"oversight": "rogue_caught"}
    js = tmp_path / "run.json"
    js.write_text(json.dumps(config.to_dict() | asdict(options)))
    assert configure("grpo", **read_settings(js)) == (config, options)


@pytest.mark.parametrize(("text", "needle"), [
    ('group_size = 1', "group_size must be at least 2"),
    ('grup_size = 4', "unknown option(s) grup_size"),
    ('steps = "ten"', "steps must be int"),
    ('loss_type = "ppo"', "loss_type must be grpo or dr_grpo"),
    ('temperature = 0', "temperature must be > 0"),
    ('kl_beta = -1', "kl_beta must be >= 0"),
    ('group_size = [', "not valid TOML"),
])
def test_bad_config_files_say_what_is_wrong(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text + "\n")
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        configure("grpo", **read_settings(path))
