"""results.json: the fast encoder writes what the per-episode `json` dump wrote, and text it cannot encode is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drill.core.types import Action, Episode, Generation, Observation, Turn
from drill.envs import chaosops
from drill.envs.chaosops.env import TASKS
from drill.evaluate.matrix import play
from drill.evaluate.report import _REPORT_EXCLUDE, write_results


def test_results_hold_the_same_episodes_as_a_plain_json_dump(tmp_path: Path) -> None:
    policies = {name: dict.fromkeys(chaosops.ChaosOpsEnv.roles, chaosops.baselines[name]())
                for name in ("random", "oracle")}
    played = play(chaosops.load, policies, [(TASKS["test"][7], 0), (TASKS["test"][20], 1)], chaosops.rubric(), 8)
    episodes = [e for eps in played.values() for e in eps]
    write_results(tmp_path / "results.json", {"env": "chaosops"}, [{"policy": "oracle"}], episodes)
    written = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert written["meta"] == {"env": "chaosops"} and written["summary"] == [{"policy": "oracle"}]
    assert written["episodes"] == [e.model_dump(mode="json", exclude=_REPORT_EXCLUDE) for e in episodes]
    first = written["episodes"][0]["turns"][0]["observation"]
    assert first["content"] and "tools" not in first and "view" not in first


def test_a_lone_surrogate_in_a_generation_is_escaped_not_lost(tmp_path: Path) -> None:
    generation = Generation(text="call \ud800", prompt_token_ids=[1], token_ids=[2], model="m", finish_reason="stop")
    turn = Turn(index=0, role="sre", observation=Observation(role="sre", content="view", step=0),
                action=Action(tool="noop", generation=generation))
    write_results(tmp_path / "results.json", {}, [], [Episode(env="x", task_id="t", seed=0, turns=[turn])])
    raw = (tmp_path / "results.json").read_text(encoding="utf-8")
    assert "call \\ud800" in raw
    assert json.loads(raw)["episodes"][0]["turns"][0]["action"]["generation"]["text"] == "call \ud800"


def test_the_chart_process_draws_and_its_errors_reach_the_caller(tmp_path: Path) -> None:
    import sys

    from drill.evaluate.report import chart_process, grouped_bar_chart

    rows = [{"x": tier, "policy": p, "value": v} for tier in ("easy", "hard") for p, v in (("a", 1.0), ("b", 2.0))]
    with chart_process() as pool:
        assert (pool is None) == (sys.platform != "linux")
        if pool is None:
            pytest.skip("the chart process is Linux only")
        drawn = pool.submit(grouped_bar_chart, tmp_path / "c.png", rows, group="x", series="policy", value="value",
                            title="t", ylabel="y")
        broken = pool.submit(grouped_bar_chart, tmp_path / "d.png", [{**rows[0], "value": "high"}], group="x",
                             series="policy", value="value", title="t", ylabel="y")
        drawn.result()
        with pytest.raises(TypeError):
            broken.result()
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "d.png").exists()
    with chart_process(enabled=False) as none:
        assert none is None


def test_where_no_process_pool_can_be_made_the_chart_is_drawn_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    from drill.evaluate import report

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError("no semaphores in this sandbox")

    monkeypatch.setattr(report, "ProcessPoolExecutor", refused)
    with report.chart_process() as pool:
        assert pool is None
