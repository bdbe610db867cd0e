"""experiments/rl_chain.py's verdict on one column, the bar of issue 41 as written: an RL gain counts only when it
exceeds the max-min spread of the three SFT seeds; a column where lower is better counts a fall; a column with no
better direction is never counted; fewer than three SFT seeds give no verdict."""

from __future__ import annotations

import json

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture()
def verdict(experiment_script: Callable[[str], ModuleType]) -> Callable[..., str]:
    return experiment_script("rl_chain").verdict


def test_a_gain_counts_only_beyond_the_sft_spread(verdict: Callable[..., str]) -> None:
    line = verdict([0.20, 0.25, 0.30], [0.11, 0.10, -0.02])  # spread 0.10: +0.10 is not beyond it
    assert line.startswith("SFT 0.250 (spread 0.100 over 3 seeds); RL gain per seed +0.110, +0.100, -0.020")
    assert line.endswith(": 1 of 3 RL gains beat the spread")


def test_lower_is_better_counts_a_fall(verdict: Callable[..., str]) -> None:
    line = verdict([0.40, 0.41, 0.42], [-0.20, 0.05, -0.03], lower=True)
    assert "RL gain per seed +0.200, -0.050, +0.030" in line and line.endswith("(lower is better): 2 of 3 RL gains "
                                                                               "beat the spread")


def test_a_neutral_column_gets_no_verdict(verdict: Callable[..., str]) -> None:
    line = verdict([0.1, 0.2, 0.3], [0.5, 0.5, 0.5], neutral=True)
    assert line.endswith("RL change per seed +0.500, +0.500, +0.500 (no better direction: no verdict)")
    assert "beat" not in line


def test_too_few_seeds_or_rl_runs_are_said(verdict: Callable[..., str]) -> None:
    assert verdict([0.1, 0.2], [0.5, 0.5]).endswith(": fewer than 3 SFT seeds: no verdict")
    assert verdict([0.1, 0.2, 0.3], []).endswith(": no RL run")
    assert verdict([0.1, 0.2, 0.3], [0.5, 0.0]).endswith(
        ": 1 of 2 RL gains beat the spread (only 2 of 3 seeds have the RL stage)")


def test_no_change_in_a_lower_is_better_column_prints_as_zero(verdict: Callable[..., str]) -> None:
    assert "RL gain per seed +0.000, +0.100" in verdict([0.0, 0.0, 0.05], [0.0, -0.1], lower=True)


def test_the_gains_plot_draws_one_panel_per_column_with_a_verdict(experiment_script: Callable[[str], ModuleType],
                                                                  tmp_path: Path) -> None:
    chain = experiment_script("rl_chain")
    preset = chain.PRESETS["triage-explore3"]
    runs = {seed: {"1-sft": {"total": 0.3 + 0.01 * seed, "brier": 0.5, "success": None},
                   "2-grpo": {"total": 0.4, "brier": 0.2, "success": None}} for seed in range(3)}
    chain.plot_gains(preset, runs, "1-sft", "2-grpo", ("total", "brier", "success"), tmp_path / "chain.png")
    assert (tmp_path / "chain.png").stat().st_size > 1000
    assert chain.counted([0.30, 0.31, 0.32], [0.10, 0.09, 0.08]) == (pytest.approx(0.02), [0.10, 0.09, 0.08],
                                                                      [True, True, True])
    assert chain.counted([0.5, 0.5, 0.5], [-0.3, 0.0, 0.1], lower=True)[1:] == ([0.3, 0.0, -0.1], [True, False, False])
    chain.plot_gains(preset, runs, "1-sft", "2-grpo", ("success",), tmp_path / "none.png")  # nothing defined to draw
    assert not (tmp_path / "none.png").exists()


def test_every_preset_names_valid_stages(experiment_script: Callable[[str], ModuleType]) -> None:
    """A misspelled stage option would only fail an hour into a chain, after the SFT stage."""
    from drill.train.config import RunConfig
    from drill.train.stages import parse_stage

    chain = experiment_script("rl_chain")
    for name, preset in chain.PRESETS.items():
        config = RunConfig(env=preset.env)
        for index, spec in enumerate((preset.sft.format(source="teacher.json"), preset.rl), start=1):
            assert parse_stage(spec, index, config).method == spec.partition(":")[0], name


def test_zero_variance_reads_the_rl_stage_folders_when_the_run_wrote_no_metrics_file(
        experiment_script: Callable[[str], ModuleType], tmp_path: Path) -> None:
    """A run stopped in its RL stage (the H200 chain, twelfth try) has no run-level metrics.jsonl: the report reads
    the stage folder's own lines instead of failing after every row was played."""
    import json

    chain = experiment_script("rl_chain")
    stage = tmp_path / "stage-2-grpo-step1"
    stage.mkdir()
    (stage / "metrics.jsonl").write_text(json.dumps({"step": 1, "stage": "all", "group_flat/total": 0.125}) + "\n")
    sft = tmp_path / "stage-1-sft"
    sft.mkdir()
    (sft / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 0.5}) + "\n")
    assert chain.zero_variance(tmp_path, "grpo") == "12%"
    # with the run's file, only its lines of the RL method count
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in (
        {"method": "sft", "group_flat/total": 0.9}, {"method": "grpo", "group_flat/total": 0.5},
        {"method": "grpo", "group_flat/total": 0.25})) + "\n")
    assert chain.zero_variance(tmp_path, "grpo") == "50% 25%"
    assert chain.zero_variance(tmp_path, "rft") == "—"


def test_the_paired_interval_brackets_the_mean_change_and_is_seeded(
        experiment_script: Callable[[str], ModuleType]) -> None:
    interval = experiment_script("rl_chain").paired_interval
    assert interval([0.0] * 95) == (0.0, 0.0, 0.0)  # an adapter that changed no episode
    mean, low, high = interval([0.2] * 20 + [0.0] * 12)  # most episodes up: an interval above zero
    assert mean == pytest.approx(0.125) and 0.0 < low < mean < high <= 0.2
    mean, low, high = interval([1.0, -1.0] * 40)  # gains and losses that cancel: zero inside the interval
    assert low < 0.0 < high and mean == pytest.approx(0.0)
    assert interval([0.3, -0.1, 0.2, 0.0]) == interval([0.3, -0.1, 0.2, 0.0])


def test_teacher_only_writes_the_shared_teacher_file_and_trains_nothing(
        experiment_script: Callable[[str], ModuleType], tmp_path: Path) -> None:
    """Seeds that start side by side (experiments/rl_chain_gpu.sh) read one teacher file: written first, once, and
    refused when the environment's code has changed since (a stale file would train on old worlds)."""
    import subprocess
    import sys

    script = Path(__file__).parents[2] / "experiments" / "rl_chain.py"
    done = subprocess.run([sys.executable, str(script), "inbox-grpo-gpu", "--teacher-only", "--output-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "teacher-train.json"
    assert done.stdout.strip().endswith(str(path)) and "teacher on 240 training tasks" in done.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["teacher-train.json"]  # no seed folder: nothing trained
    chain = experiment_script("rl_chain")
    preset = chain.PRESETS["inbox-grpo-gpu"]
    assert chain.teacher_source(preset, tmp_path) == path  # the same code: read again, not played again
    stored = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**stored, "env_code": "0" * 16}), encoding="utf-8")
    with pytest.raises(SystemExit, match="written by other inbox code"):
        chain.teacher_source(preset, tmp_path)


def test_a_chain_with_further_rl_stages_trains_them_and_copies_what_it_repeats(
        experiment_script: Callable[[str], ModuleType], tmp_path: Path) -> None:
    chain = experiment_script("rl_chain")
    preset = chain.PRESETS["inbox-grpo-gpu-more"]
    assert preset.rl_name == "3-grpo" and chain.PRESETS["inbox-grpo-gpu"].rl_name == "2-grpo"
    command = chain.train_command(preset, 1, Path("teacher.json"), tmp_path / "seed-1", 0, False)
    assert [command[i + 1] for i, item in enumerate(command) if item == "--stage"] == [
        "sft:source=results:teacher.json,epochs=2", *preset.stages]
    earlier = tmp_path / "earlier" / "seed-1"
    for name in ("stage-1-sft", "stage-2-grpo", "stage-3-grpo"):
        (earlier / name).mkdir(parents=True)
        (earlier / name / "stage.json").write_text("{}")
    chain.copy_earlier_stages(preset, earlier, tmp_path / "seed-1")
    assert sorted(p.name for p in (tmp_path / "seed-1").iterdir()) == ["stage-1-sft", "stage-2-grpo"]  # never the last
    chain.copy_earlier_stages(chain.PRESETS["inbox-grpo-gpu"], earlier, tmp_path / "seed-2")
    assert sorted(p.name for p in (tmp_path / "seed-2").iterdir()) == ["stage-1-sft"]
