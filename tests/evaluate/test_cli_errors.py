"""A user's mistake is one line on stderr and exit code 2, in every command that takes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("command", ["eval", "watch", "audit"])
def test_a_bad_inbox_db_is_one_line_everywhere(command: str, tmp_path: Path) -> None:
    db, questions = tmp_path / "mail.db", tmp_path / "questions.jsonl"
    db.write_text("not a database", encoding="utf-8")
    questions.write_text("", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "drill.cli", command, "inbox", "--db", str(db), "-E",
                           f"questions={questions}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and "━" not in line]
    assert lines == [f"error: {db} is not a Drill mail store: file is not a database"]


def test_an_error_message_with_brackets_is_printed_as_written(tmp_path: Path) -> None:
    missing = tmp_path / "[ray]" / "mail.db"
    done = subprocess.run([sys.executable, "-m", "drill.cli", "eval", "inbox", "--db", str(missing)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "[ray]/mail.db" in done.stderr, done.stderr
