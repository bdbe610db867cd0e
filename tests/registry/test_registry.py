"""The registry: every registered environment passes the same checks, and a third-party environment registered
through the `drill.envs` entry point gets `drill eval`, `drill watch` and `drill train` with no change to Drill."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill import registry
from drill.cli import app
from drill.core import Action, PolicyInfo, PolicyInput, check_env, run_episodes
from drill.core.spec import EnvSpec
from drill.core.tools import random_arguments

TOY = Path(__file__).parent / "toy_plugin"
SPECS = list(registry.specs().values())
runner = CliRunner()




def test_the_bundled_environments_are_registered() -> None:
    assert {"chaosops", "triage", "inbox"} <= set(registry.env_names())
    with pytest.raises(registry.RegistryError, match="unknown environment 'nope'; installed: chaosops"):
        registry.get("nope")


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_environment_passes_check_env(spec: EnvSpec) -> None:
    check_env(spec.make({})(), n_tasks=2, seeds=(0,))


class FirstTool:
    """Degenerate: the first tool of every observation, with seeded random arguments."""

    info = PolicyInfo(name="first-tool")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        import random

        return [Action(tool=i.observation.tools[0].name,
                       arguments=random_arguments(i.observation.tools[0], random.Random(f"{i.task.id}:{len(i.history)}")))
                for i in inputs]


class Gibberish:
    """Degenerate: output that never parses."""

    info = PolicyInfo(name="gibberish")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [Action.unparseable(raw="I think the answer is probably fine.", error="no tool call") for _ in inputs]


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_the_oracle_beats_degenerate_policies(spec: EnvSpec) -> None:
    options = spec.parse_options({})
    make_env = spec.make(options)
    rubric = spec.rubric_for(options)
    tasks = make_env().tasks("test")[:6]
    jobs = [(task, 0) for task in tasks]

    def mean(policy: object) -> float:
        episodes = run_episodes(make_env, jobs, policy, rubric)  # type: ignore[arg-type]
        return sum(e.score.total for e in episodes if e.score) / len(episodes)

    oracle = mean(spec.baselines(options)["oracle"]())
    for degenerate in (FirstTool(), Gibberish(), spec.baselines(options)["random"]()):
        assert mean(degenerate) < oracle, f"{degenerate.info.name} scores at least the oracle on {spec.name}"


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_eval_and_watch_run_for_every_environment(spec: EnvSpec, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", spec.name, "--limit", "2", "--seeds", "1", "--policy", "oracle",
                                 "--policy", "random", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "results.json").read_text())
    assert [row["policy"] for row in payload["summary"]][:1] == ["oracle"] and payload["meta"]["env"] == spec.name
    assert all(e["score"] is not None for e in payload["episodes"])
    assert all((tmp_path / chart.filename).stat().st_size > 1000 for chart in spec.charts)
    watched = runner.invoke(app, ["watch", spec.name, "--policy", "oracle"])
    assert watched.exit_code == 0, watched.output
    assert "episode over after" in watched.output and "sees" in watched.output


# -- a third-party environment, registered from outside src/drill/envs ----------------------------------------


def _plugin_path(tmp_path: Path, entry: str) -> dict[str, str]:
    """A real installed distribution (a dist-info folder on the path) whose entry point registers `entry`."""
    info = tmp_path / "guess_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: guess-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[drill.envs]\n{entry}\n")
    paths = [str(tmp_path), str(TOY), *sys.path]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _drill(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drill.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.slow
def test_a_plugin_environment_gets_eval_watch_and_train(tmp_path: Path) -> None:
    env = _plugin_path(tmp_path, "guess = guess_env:SPEC")
    done = _drill(env, "eval", "guess", "--out", str(tmp_path / "report"), "--penalty", "0.05")
    assert done.returncode == 0, done.stderr
    rows = {r["policy"]: r for r in json.loads((tmp_path / "report" / "results.json").read_text())["summary"]}
    assert rows["oracle"]["solved"] == 1.0 and rows["oracle"]["guesses"] == 1.0
    assert rows["heuristic"]["solved"] == 1.0 and rows["random"]["reward"] < rows["heuristic"]["reward"]
    assert rows["oracle"]["reward"] == pytest.approx(0.95)  # --penalty reached the rubric
    watched = _drill(env, "watch", "guess", "--policy", "heuristic", "--max-turns", "5")
    assert watched.returncode == 0, watched.stderr
    assert "go higher" in watched.stdout or "go lower" in watched.stdout
    planned = subprocess.run([sys.executable, "-c", (
        "from drill.train.config import RunConfig; from drill.train.run import plan_run; "
        f"plan = plan_run(RunConfig(env='guess', env_options={{'max_turns': 4}}, output_dir={str(tmp_path / 'run')!r},"
        " weight_schedules=['penalty=0.2->0.1'])); print(plan.target.name, plan.target.options, plan.roles)")],
        capture_output=True, text=True, env=env, timeout=300)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.split() == ["guess", "{'max_turns':", "4}", "['player']"]


def test_a_broken_registration_is_named_in_the_error(tmp_path: Path) -> None:
    env = _plugin_path(tmp_path, "guess = guess_env:rubric")
    done = _drill(env, "eval", "--help")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "the entry point 'guess' (guess_env:rubric) is a function, not a drill.core.EnvSpec" in done.stderr


def test_bundled_imports_one_environment_and_gives_what_get_gives() -> None:
    assert registry.bundled("chaosops") is registry.get("chaosops")
    assert registry.bundled("nope") is None and registry.bundled("../chaosops") is None and registry.bundled("") is None
    done = subprocess.run([sys.executable, "-c", (
        "import sys; sys.argv = ['drill', 'eval', 'chaosops', '--help']; import drill.cli; "
        "print(' '.join(sorted({m.split('.')[2] for m in sys.modules if m.startswith('drill.envs.')})))")],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["chaosops"]  # `drill eval chaosops` imports no other environment


def test_a_plugin_named_like_a_bundled_environment_is_still_checked(tmp_path: Path) -> None:
    """`drill eval chaosops` with a plugin of that name takes the full path, which reads every registration."""
    env = _plugin_path(tmp_path, "chaosops = guess_env:SPEC")
    done = _drill(env, "eval", "chaosops", "--seeds", "1")
    assert done.returncode == 2 and "the entry point 'chaosops' names a spec called 'guess'" in done.stderr
