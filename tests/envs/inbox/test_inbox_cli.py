"""The `drill inbox ...`, `drill eval inbox` and `drill watch inbox` commands, run in-process."""

from __future__ import annotations

import json
import mailbox
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill.cli import app
from drill.envs import inbox

runner = CliRunner()

MESSAGE = """Message-ID: <{n}@example.com>
Date: Mon, 14 May 2001 16:39:00 -0700
From: Phillip Allen <phillip.allen@enron.com>
To: tim.belden@enron.com
Subject: Forecast {n}

The forecast number {n} is ready.
"""


@pytest.fixture
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path_factory.getbasetemp() / "inbox-cache")
    monkeypatch.setenv("DRILL_CACHE", path)
    return path


def test_ingest_twice_adds_nothing_the_second_time(tmp_path: Path) -> None:
    root = tmp_path / "maildir"
    for user in ("allen-p", "beck-s"):
        for n in range(3):
            path = root / user / "inbox" / f"{n + 1}."
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(MESSAGE.format(n=f"{user}-{n}"))
    (root / "allen-p" / "inbox" / "junk.").write_bytes(bytes(range(256)))
    db = tmp_path / "mail.db"
    first = runner.invoke(app, ["inbox", "ingest", str(root), "--db", str(db), "--split-users"])
    assert first.exit_code == 0, first.output
    assert "added 6, duplicates 0, skipped 1 (1 no mail headers)" in first.output
    assert "junk." in first.output
    second = runner.invoke(app, ["inbox", "ingest", str(root), "--db", str(db), "--split-users"])
    assert "added 0, duplicates 6, skipped 1" in second.output
    found = runner.invoke(app, ["inbox", "search", "forecast ready", "--db", str(db), "--user", "beck-s"])
    assert found.exit_code == 0 and found.output.count("@example.com") == 3
    assert "The [forecast] number beck-s-0 is [ready]." in found.output  # snippet marks survive the terminal


def test_ingest_mbox_with_a_user_and_usage_errors(tmp_path: Path) -> None:
    box = mailbox.mbox(tmp_path / "me.mbox")
    box.add(MESSAGE.format(n="a"))
    box.flush()
    box.close()
    db = tmp_path / "mail.db"
    result = runner.invoke(app, ["inbox", "ingest", str(tmp_path / "me.mbox"), "--db", str(db), "--user", "me@x.org"])
    assert result.exit_code == 0 and "added 1" in result.output
    missing = runner.invoke(app, ["inbox", "ingest", str(tmp_path / "nope"), "--db", str(db)])
    assert missing.exit_code == 2 and "nothing to ingest" in missing.output
    ambiguous = runner.invoke(app, ["inbox", "ingest", str(tmp_path / "me.mbox"), "--split-users"])
    assert ambiguous.exit_code == 2


def test_eval_writes_the_report(tmp_path: Path, cache: str) -> None:
    out = tmp_path / "report"
    result = runner.invoke(app, ["eval", "inbox", "--policy", "heuristic", "--policy", "oracle", "--limit", "12",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "results.json").read_text())
    assert [row["policy"] for row in payload["summary"]] == ["heuristic", "oracle"]
    assert len(payload["episodes"]) == 24 and payload["meta"]["tasks"] == 12
    oracle = payload["summary"][1]
    assert oracle["correct"] == 1.0 and oracle["reward"] > payload["summary"][0]["reward"]
    assert (out / "inbox_by_kind.png").stat().st_size > 1000


def test_shuffle_seed_takes_a_seeded_random_subset(tmp_path: Path, cache: str) -> None:
    def evaluated(*extra: str) -> list[str]:
        out = tmp_path / "-".join(extra or ("plain",))
        result = runner.invoke(app, ["eval", "inbox", "--policy", "heuristic", "--limit", "6", "--out", str(out),
                                     *extra])
        assert result.exit_code == 0, result.output
        return [e["task_id"] for e in json.loads((out / "results.json").read_text())["episodes"]]

    first = evaluated()
    shuffled = evaluated("--shuffle-seed", "3")
    tasks = [t.id for t in inbox.load().tasks("test")]
    assert first == tasks[:6]
    expected = list(tasks)
    random.Random(3).shuffle(expected)
    assert shuffled == expected[:6] != first
    assert evaluated("--shuffle-seed", "3", "--seeds", "1") == shuffled  # the same seed, the same subset


@pytest.mark.parametrize("args", [
    ["eval", "inbox", "--policy", "nonsense"], ["eval", "inbox", "--split", "dev"], ["eval", "inbox", "--limit", "0"],
    ["watch", "inbox", "--task", "q99999"], ["eval", "inbox", "--judge", "vibes"],
    ["eval", "inbox", "--db", "missing.db"],
])
def test_bad_options_are_usage_errors(args: list[str], cache: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output


def test_watch_shows_the_episode(cache: str) -> None:
    result = runner.invoke(app, ["watch", "inbox", "--policy", "oracle"])
    assert result.exit_code == 0, result.output
    assert "return_final_answer" in result.output and "total" in result.output
