"""experiments/rl_chain_gpu.sh, driven by a fake interpreter (PYTHON) that logs each command it is given: the phases
call rl_chain.py with the right flags per seed, a phase past its wall-clock limit is stopped with everything it
started (a child left running by a seed too), and `EVAL_LIMIT_S 0` trains only. The lease's end keeps what finished
only if these hold."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "rl_chain_gpu.sh"

# seed 1's training starts a child and both outlive any limit; every other command ends at once
FAKE = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
if [[ " $* " == *" --eval-tasks 0 "* && " $* " == *" --seeds 1 " ]]; then
    sleep 300 & echo $! > "$FAKE_CHILD"
    sleep 300
fi
exit 0
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status  # a zombie nobody reaped has ended


def _run(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    fake = tmp_path / "python"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    result = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHON": str(fake), "FAKE_LOG": str(log),
                                 "FAKE_CHILD": str(tmp_path / "child.pid"), **env})
    return result, log.read_text().splitlines()


def test_a_phase_past_its_limit_is_stopped_with_its_children_and_sft_from_reaches_every_seed(tmp_path: Path) -> None:
    out, starts = tmp_path / "out", tmp_path / "sft"
    result, calls = _run(tmp_path, "inbox-grpo-gpu", str(out), "1", "0", "0", "1", SFT_FROM=str(starts))
    assert result.returncode == 0, result.stderr
    assert calls[0] == f"experiments/rl_chain.py inbox-grpo-gpu --teacher-only --output-dir {starts}"
    train = sorted(calls[1:])
    assert train == [f"experiments/rl_chain.py inbox-grpo-gpu --untrained-seed -1 --eval-tasks 0 --output-dir {out} "
                     f"--sft-from {starts} --seeds {seed}" for seed in (0, 1)]
    assert "train: stopped at the 1s limit" in result.stdout
    assert "trained only (EVAL_LIMIT_S 0)" in result.stdout
    assert not list(out.glob("eval-*.log")) and not (out / "report.txt").exists()
    child = int((tmp_path / "child.pid").read_text())
    assert not _alive(child), "the stopped seed's child outlived its phase"


def test_a_whole_chain_trains_evaluates_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result, calls = _run(tmp_path, "inbox-grpo-gpu", str(out), "30", "30", "0", EVAL_BATCH="16")
    assert result.returncode == 0, result.stderr
    assert calls == [
        f"experiments/rl_chain.py inbox-grpo-gpu --teacher-only --output-dir {out}",
        f"experiments/rl_chain.py inbox-grpo-gpu --untrained-seed -1 --eval-tasks 0 --output-dir {out} --seeds 0",
        f"experiments/rl_chain.py inbox-grpo-gpu --evaluate-only --eval-batch 16 --untrained-seed -1 "
        f"--output-dir {out} --seeds 0",
        f"experiments/rl_chain.py inbox-grpo-gpu --seeds 0 --output-dir {out} --report-only --episodes 2",
    ]
    assert "stopped" not in result.stdout and (out / "report.txt").exists()


def test_limits_are_whole_seconds_and_a_zero_with_leading_zeros_trains_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result, calls = _run(tmp_path, "inbox-grpo-gpu", str(out), "030", "00", "0")
    assert result.returncode == 0 and "trained only (EVAL_LIMIT_S 0)" in result.stdout, result.stdout + result.stderr
    assert len(calls) == 2 and "--evaluate-only" not in " ".join(calls)
    for train, evaluate in (("5m", "0"), ("5:00", "0"), ("30", ""), ("30", "-1")):
        bad = subprocess.run(["bash", str(SCRIPT), "inbox-grpo-gpu", str(out), train, evaluate, "0"],
                             capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "whole seconds" in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
