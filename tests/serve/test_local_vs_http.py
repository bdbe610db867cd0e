"""The same task, seed and actions give the same episode, byte for byte, locally and over HTTP/WebSocket; and
`drill eval ENV --env-url URL` writes the same results as `drill eval ENV`."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill import registry
from drill.cli import app
from drill.core import Action, PolicyInfo, PolicyInput, run_episodes
from drill.core.spec import EnvSpec
from drill.serve import RemoteEnv

BUNDLED = [s for s in registry.specs().values() if s.load.__module__.startswith("drill.envs.")]  # every one Drill ships


class Hostile:
    """Every kind of bad input, one per turn, then the oracle: lone surrogates, NaN, a megabyte-free long string,
    an unknown tool, a parse error, a non-object argument list."""

    info = PolicyInfo(name="hostile")

    def __init__(self, oracle) -> None:
        self.oracle = oracle

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for i in inputs:
            tool = i.observation.tools[0].name
            bad = [Action(tool=tool, arguments={"q": "\ud800 evil"}), Action(tool=tool, arguments={"x": math.nan}),
                   Action(tool="nope\u0000", arguments={}), Action.unparseable("<tool_call>{", "unterminated JSON"),
                   Action(tool=tool, arguments=["not", "an", "object"]), Action(tool=tool, arguments={"s": "é" * 3000})]
            n = len(i.own_turns())
            actions.append(bad[n] if n < len(bad) else self.oracle.act([i])[0])
        return actions


@pytest.mark.parametrize("spec", BUNDLED, ids=[s.name for s in BUNDLED])
def test_the_same_episode_byte_for_byte_locally_and_over_http(serve, spec: EnvSpec) -> None:
    server = serve(spec.name)
    local_env = spec.make({})
    tasks = local_env().tasks("test")
    jobs = [(tasks[0], 0), (tasks[-1], 2)]
    rubric = spec.rubric_for({})
    baselines = spec.baselines({})
    for policy in (baselines["random"](), baselines["heuristic"](), Hostile(baselines["oracle"]())):
        remotes: list[RemoteEnv] = []

        def make_remote(remotes: list[RemoteEnv] = remotes) -> RemoteEnv:
            remotes.append(RemoteEnv(server.url, spec.make({})()))
            return remotes[-1]

        over_http = run_episodes(make_remote, jobs, policy, rubric)
        local = run_episodes(local_env, jobs, policy, rubric)
        assert [e.model_dump_json() for e in over_http] == [e.model_dump_json() for e in local], policy.info.name
        # the server scored the episode with its own copy of the rubric and the task: the same score
        assert [r.final_score for r in remotes] == [e.score for e in local]


def test_drill_eval_with_env_url_writes_what_a_local_eval_writes(serve, tmp_path) -> None:
    server = serve("triage", "--mode", "agent")
    runner = CliRunner()
    args = ["eval", "triage", "--mode", "agent", "--policy", "heuristic", "--policy", "oracle", "--limit", "4",
            "--seeds", "2"]
    local = runner.invoke(app, [*args, "--out", str(tmp_path / "local")])
    remote = runner.invoke(app, [*args, "--out", str(tmp_path / "remote"), "--env-url", server.url])
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("local", "remote"))
    assert a["summary"] == b["summary"] and a["episodes"] == b["episodes"]
    assert len(b["episodes"]) == 16


def test_drill_eval_with_an_unreachable_env_url_says_so(tmp_path) -> None:
    result = CliRunner().invoke(app, ["eval", "triage", "--policy", "oracle", "--limit", "1", "--out", str(tmp_path),
                                      "--env-url", "http://127.0.0.1:9"])
    assert result.exit_code == 2 and "cannot reach a served environment at http://127.0.0.1:9" in result.output


def test_drill_eval_against_a_server_of_another_environment_says_so(serve, tmp_path) -> None:
    server = serve("triage", "--mode", "agent")
    result = CliRunner().invoke(app, ["eval", "chaosops", "--limit", "1", "--out", str(tmp_path),
                                      "--env-url", server.url])
    assert result.exit_code == 2 and "serves 'triage', not 'chaosops'" in result.output


def test_drill_eval_against_a_server_with_other_options_says_so(serve, tmp_path) -> None:
    server = serve("triage", "--mode", "agent")
    result = CliRunner().invoke(app, ["eval", "triage", "--limit", "1", "--out", str(tmp_path), "--env-url", server.url])
    assert result.exit_code == 2 and "give the same -E options on both sides" in result.output


TIMINGS = ("rollout_s", "train_s", "step_s", "tokens_per_s")


def _train(args: list[str], out: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(app, [*args, "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in line.items() if k not in TIMINGS} for line in lines]


@pytest.mark.slow
def test_drill_train_with_env_url_trains_exactly_as_a_local_run(serve, tiny_model_dir: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Rollouts played on the served environment give the metrics of rollouts played in this process: the same
    tasks, rewards per component, completion lengths and losses for the same seed; an unreachable URL is one line."""
    server = serve("triage", "--mode", "agent")
    args = ["train", "triage", "-E", "mode=agent", "--model", str(tiny_model_dir), "--steps", "2", "-G", "2",
            "--tasks-per-step", "2", "--max-new-tokens", "8", "--kl-beta", "0",
            "--eval-tasks", "0"]
    local = _train(args, tmp_path / "local")
    played: list[str] = []
    reset = RemoteEnv.reset
    monkeypatch.setattr(RemoteEnv, "reset", lambda self, task, seed: played.append(task.id) or reset(self, task, seed))
    remote = _train([*args, "--env-url", server.url], tmp_path / "remote")
    assert len(played) == 2 * 2 * 2  # every rollout of both steps went over the WebSocket
    assert len(local) == 2 and remote == local
    assert all(line["tasks"] and line["samples"] for line in local)
    unreachable = CliRunner().invoke(app, [*args, "--env-url", "http://127.0.0.1:9", "--output-dir",
                                           str(tmp_path / "none")])
    assert unreachable.exit_code == 1 and "cannot reach a served environment" in unreachable.output
    assert "Traceback" not in unreachable.output
