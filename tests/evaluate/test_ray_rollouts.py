"""Rollouts on a real single-node Ray (drill.evaluate.distributed): the same seeds give byte-identical episodes
and rewards with and without Ray, through the player and through `drill eval --ray-workers`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill import registry
from drill.cli import app
from drill.evaluate.distributed import WORKER_OPTIONS, ray_player
from drill.evaluate.matrix import play
from drill.policies import resolve_policies

ray = pytest.importorskip("ray")  # a dev dependency: installed in CI, so this runs there
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_ray_workers_play_byte_identical_episodes(local_ray: None) -> None:
    spec = registry.get("chaosops")  # four roles, a rogue fleet agent, and a random policy with per-episode draws
    options = spec.parse_options({})
    make_env = spec.make(options)
    rubric = spec.rubric_for(options)
    baselines = spec.baselines(options)
    roles = make_env().roles
    tasks = make_env().tasks("test")[:7]
    jobs = [(task, seed) for task in tasks for seed in range(2)]
    names = ["random", "heuristic", "oracle"]
    policies = {name: resolve_policies(name, roles, baselines, llm=None) for name in names}
    build = lambda text: resolve_policies(text, roles, baselines, llm=None)  # noqa: E731  (shipped to the workers)

    local = play(make_env, policies, jobs, rubric, batch=3)
    done: list[str] = []
    remote = ray_player(build, workers=2)(make_env, policies, jobs, rubric, 3,
                                          on_episode_done=lambda e: done.append(e.task_id))

    assert list(remote) == names
    for name in names:
        assert [e.model_dump_json() for e in remote[name]] == [e.model_dump_json() for e in local[name]]
        assert [(e.task_id, e.seed) for e in remote[name]] == [(t.id, s) for t, s in jobs]
    assert len(done) == len(jobs) * len(names)
    assert len({e.score.total for e in local["random"]}) > 1  # the comparison covers episodes that differ
    assert ray.is_initialized()  # a Ray it did not start is left running


def test_a_rollout_worker_runs_one_thread_whatever_the_driver_exported(monkeypatch: pytest.MonkeyPatch) -> None:
    def _threads() -> int:  # defined here so that Ray ships it by value (the tests folder is not importable there)
        import torch

        return torch.get_num_threads()

    ray.shutdown()  # a Ray started from a driver that exported two threads, as a training job on two cores does
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        assert ray.get(ray.remote(**WORKER_OPTIONS)(_threads).remote()) == 1
        plain = {"num_cpus": 1}
        assert ray.get(ray.remote(**plain)(_threads).remote()) == 2  # what Ray alone does: the worker inherits it
    finally:
        ray.shutdown()


def test_drill_eval_with_ray_workers_writes_the_same_results(tmp_path: Path) -> None:
    ray.shutdown()  # the module's Ray above: this command starts its own, and must shut it down
    runner = CliRunner()
    common = ["eval", "chaosops", "--tier", "easy", "--seeds", "2", "--policy", "random", "--policy", "heuristic"]
    local = runner.invoke(app, [*common, "--out", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    remote = runner.invoke(app, [*common, "--out", str(tmp_path / "ray"), "--ray-workers", "2"])
    assert remote.exit_code == 0, remote.output
    assert not ray.is_initialized()  # the Ray it started is shut down

    def results(name: str) -> dict:
        return json.loads((tmp_path / name / "results.json").read_text())

    a, b = results("local"), results("ray")
    assert a["episodes"] == b["episodes"] and a["summary"] == b["summary"]
    assert len(a["episodes"]) == 9 * 2 * 2


def test_ray_flags_are_checked_before_anything_runs(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "chaosops", "--ray-address", "ray://127.0.0.1:1", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--ray-address needs --ray-workers N" in result.output
    result = runner.invoke(app, ["eval", "chaosops", "--ray-workers", "2", "--attempts", "2", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "in-process" in result.output
    assert not any(tmp_path.iterdir())
