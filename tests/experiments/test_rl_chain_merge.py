"""experiments/rl_chain.py's `--evaluate-only` adds the rows a seed's held-out file lacks to the ones it has
(`merged`): the stored rows first, every episode kept, and nothing merged that was played on other tasks or twice."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from drill.core.types import Episode


@pytest.fixture()
def merged(experiment_script: Callable[[str], ModuleType]) -> Callable[..., Any]:
    return experiment_script("rl_chain").merged


def held_out(rows: dict[str, list[str]], tasks: list[str], split: str = "validation") -> dict[str, Any]:
    """A held-out file's contents: per row, one episode per task, each tagged with its row in its seed."""
    episodes = [Episode(env="inbox", task_id=task, seed=len(name)).model_dump(mode="json")
                for name, ids in rows.items() for task in ids]
    return {"meta": {"env": "inbox", "adapter": {name: f"runs/x/{name}" for name in rows if name[0].isdigit()},
                     "split": split, "tasks": tasks},
            "summary": [{"policy": name, "episodes": len(ids)} for name, ids in rows.items()],
            "episodes": episodes}


def test_the_stored_rows_come_first_and_every_episode_stays(merged: Callable[..., Any]) -> None:
    old = held_out({"1-sft": ["q1", "q2"], "heuristic": ["q1", "q2"]}, ["q1", "q2"])
    new = held_out({"2-rft": ["q1", "q2"]}, ["q1", "q2"])
    meta, summary, episodes = merged(old, new)
    assert [row["policy"] for row in summary] == ["1-sft", "heuristic", "2-rft"]
    assert [(e.task_id, e.seed) for e in episodes] == [("q1", 5), ("q2", 5), ("q1", 9), ("q2", 9), ("q1", 5),
                                                       ("q2", 5)]
    assert meta["adapter"] == {"1-sft": "runs/x/1-sft", "2-rft": "runs/x/2-rft"}
    assert meta["tasks"] == ["q1", "q2"] and meta["split"] == "validation"


@pytest.mark.parametrize("new", [held_out({"2-rft": ["q1", "q3"]}, ["q1", "q3"]),
                                 held_out({"2-rft": ["q1", "q2"]}, ["q1", "q2"], split="test")],
                         ids=["other tasks", "other split"])
def test_rows_played_elsewhere_are_refused(merged: Callable[..., Any], new: dict[str, Any]) -> None:
    old = held_out({"1-sft": ["q1", "q2"]}, ["q1", "q2"])
    with pytest.raises(SystemExit, match="played on other"):
        merged(old, new)


def test_a_row_in_both_files_is_refused(merged: Callable[..., Any]) -> None:
    old = held_out({"1-sft": ["q1"]}, ["q1"])
    with pytest.raises(SystemExit, match=r"\['1-sft'\] are both stored and new"):
        merged(old, held_out({"1-sft": ["q1"]}, ["q1"]))


def test_rows_played_at_another_precision_are_refused(merged: Callable[..., Any],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Greedy rows played in bfloat16 on a GPU and in float32 on the CPU differ (the twelfth try: 0.046 on an inbox
    total), so a verdict must not compare them: the merge refuses two recorded precisions and says so when one file
    predates the record."""
    old = held_out({"1-sft": ["q1"]}, ["q1"])
    new = held_out({"2-grpo": ["q1"]}, ["q1"])
    old["meta"]["precision"], new["meta"]["precision"] = "cuda bfloat16", "cpu float32"
    with pytest.raises(SystemExit, match="played at cpu float32, the stored ones at cuda bfloat16"):
        merged(old, new)
    new["meta"]["precision"] = "cuda bfloat16"
    assert merged(old, new)[0]["precision"] == "cuda bfloat16"
    del old["meta"]["precision"]
    assert merged(old, new)[0]["precision"] == "cuda bfloat16"
    assert "precision of the stored held-out rows is not recorded" in capsys.readouterr().out
