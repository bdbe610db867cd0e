"""pass^k: the chance that every one of k trials of a task succeeds, reported beside the mean for every env."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from drill.core.types import Action, Episode, Event, Observation, Task, Turn
from drill.evaluate.matrix import pass_k
from drill import registry

TOY = Path(__file__).parents[1] / "registry" / "toy_plugin"
sys.path.insert(0, str(TOY))
import guess_env  # noqa: E402


def _episode(task_id: str, seed: int, solved: bool) -> Episode:
    turn = Turn(index=0, role="player", observation=Observation(role="player", content="", step=0),
                action=Action.call("guess", number=1))
    events = [Event(name="solved", step=0)] if solved else []
    return Episode(env="guess", task_id=task_id, seed=seed, turns=[turn], events=events)


def test_pass_k_is_the_unbiased_all_of_j_trials_estimate() -> None:
    outcomes = {"a": [True, True, False], "b": [True, True, True], "c": [False, False, False]}
    episodes = [_episode(t, s, ok) for t, row in outcomes.items() for s, ok in enumerate(row)]
    tasks = {t: Task(id=t) for t in outcomes}
    got = pass_k(guess_env.SPEC, episodes, tasks)
    # a: 2 of 3 -> C(2,j)/C(3,j) = 2/3, 1/3, 0; b: 1, 1, 1; c: 0, 0, 0
    assert got == pytest.approx({"pass^1": (2 / 3 + 1) / 3, "pass^2": (1 / 3 + 1) / 3, "pass^3": 1 / 3})
    assert list(got) == ["pass^1", "pass^2", "pass^3"]


@pytest.mark.parametrize("name", registry.env_names())
def test_every_bundled_environment_defines_success(name: str) -> None:
    assert registry.get(name).success is not None, f"{name} has no success definition, so no pass^k"


def test_drill_eval_reports_pass_k_in_the_table_results_and_chart(tmp_path: Path) -> None:
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "drill.cli", "eval", "chaosops", "--seeds", "3", "--failure",
                           "autoscaler_cost_cut", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "pass^3" in done.stdout
    rows = json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"]
    for row in rows:
        values = [row[f"pass^{j}"] for j in (1, 2, 3)]
        assert values == sorted(values, reverse=True), row  # all of j trials: never likelier as j grows
    by_policy = {(r["policy"], r["tier"]): r for r in rows}
    assert by_policy[("oracle", "hard")]["pass^3"] == 1.0
    assert by_policy[("random", "hard")]["pass^1"] < 1.0
    assert (out / "pass_k.png").stat().st_size > 0


def test_a_run_with_other_settings_gets_its_own_report_folder() -> None:
    from drill.evaluate.commands import report_folder

    triage = registry.get("triage")
    plain = triage.parse_options({})
    assert report_folder(triage, plain, {}) == "triage-reader"
    agent = triage.parse_options({"mode": "agent"})
    assert report_folder(triage, agent, {"mode": "agent"}) == "triage-agent"
    assert report_folder(triage, plain, {"k": 1, "parsimony": 0.3}) == "triage-reader.k=1.parsimony=0.3"
    chaos = registry.get("chaosops")
    assert report_folder(chaos, chaos.parse_options({}), {"failure": ["a/b", "c"]}) == "chaosops.failure=a-b+c"
    long = report_folder(chaos, chaos.parse_options({}), {"failure": ["x" * 60, "y" * 60]})
    assert len(long) < 120 and long != report_folder(chaos, chaos.parse_options({}), {"failure": ["x" * 60, "z" * 60]})


def test_results_json_names_the_precision_local_models_played_at(tmp_path: Path) -> None:
    """Greedy rows played in bfloat16 on a GPU and in float32 on the CPU differ, so results.json says which: every
    local model policy's device and dtype, and None for a matrix of scripted policies alone."""
    from types import SimpleNamespace

    import torch

    from drill.evaluate.matrix import evaluate

    class LocalStandIn:
        """Plays as the heuristic; its `model.model` is where an LLMPolicy keeps its torch weights."""

        def __init__(self) -> None:
            self.inner = guess_env.Bisect()
            self.model = SimpleNamespace(model=torch.nn.Linear(2, 2).to(torch.bfloat16))

        @property
        def info(self) -> Any:
            return self.inner.info

        def act(self, inputs: Any) -> Any:
            return self.inner.act(inputs)

    spec = guess_env.SPEC
    tasks = spec.make({})().tasks("test")[:2]
    for name, policies, expected in (("scripted", {"heuristic": {"player": guess_env.Bisect()}}, None),
                                     ("local", {"heuristic": {"player": guess_env.Bisect()},
                                                "local": {"player": LocalStandIn()}}, "cpu bfloat16")):
        evaluate(spec, {}, policies, tasks, 1, spec.rubric_for({}), tmp_path / name, name, quiet=True)
        meta = json.loads((tmp_path / name / "results.json").read_text(encoding="utf-8"))["meta"]
        assert meta["precision"] == expected, name
