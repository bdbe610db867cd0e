"""Every environment's three splits (train, validation, test): non-empty, pairwise disjoint by task id and by
content, each task labelled with its split, the same in another process, and test as it was before validation
existed (validation is carved out of the train pool)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest

from drill import registry
from drill.core import SPLITS
from drill.core.spec import EnvSpec
from drill.envs.chaosops.env import world_key

TOY = Path(__file__).parent / "toy_plugin" / "guess_env.py"


def _toy_spec() -> EnvSpec:
    """The toy plugin's spec (the contract's example for a third-party environment), imported from its file."""
    module_spec = importlib.util.spec_from_file_location("guess_env", TOY)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.SPEC


SPECS = list(registry.specs().values())
CONTENT = {"triage": "ticket", "inbox": "question", "coderepair": "problem_id", "copilot": "request"}
"""The field that says what a task asks: two splits never share a value of it (a question text, a HumanEval problem).
ChaosOps is the exception: every split holds the same 27 scenarios and the world is keyed on the split (see below)."""
TEST_IDS = {"triage": "8e4850517508", "inbox": "4cf928124076", "coderepair": "7f1c3f227f86",
            "copilot": "3896696e3f35", "chaosops": "86a1c0b4e0bf"}
"""A digest of each bundled environment's test task ids, taken before validation existed: carving validation out of
the train pool must leave the published test split untouched."""


def _ids(spec: EnvSpec) -> dict[str, list[str]]:
    env = spec.make({})()
    return {split: [t.id for t in env.tasks(split)] for split in SPLITS}


def _digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]


@pytest.mark.parametrize("spec", [*SPECS, _toy_spec()], ids=[*(s.name for s in SPECS), "toy-plugin"])
def test_the_three_splits_are_non_empty_disjoint_and_labelled(spec: EnvSpec) -> None:
    env = spec.make({})()
    tasks = {split: env.tasks(split) for split in SPLITS}
    for split, chosen in tasks.items():
        assert chosen, f"{spec.name}: the {split} split is empty"
        assert {t.split for t in chosen} == {split}
    for a, b in combinations(SPLITS, 2):
        assert not {t.id for t in tasks[a]} & {t.id for t in tasks[b]}, f"{spec.name}: {a} and {b} share task ids"
        if spec.name in CONTENT:
            field = CONTENT[spec.name]
            shared = {getattr(t, field) for t in tasks[a]} & {getattr(t, field) for t in tasks[b]}
            assert not shared, f"{spec.name}: {a} and {b} share {field} {sorted(shared)[:3]}"
    with pytest.raises(ValueError, match="unknown split 'dev'; choose train, validation or test"):
        env.tasks("dev")


@pytest.mark.parametrize("name", sorted(TEST_IDS))
def test_the_test_split_did_not_move(name: str) -> None:
    assert _digest(_ids(registry.get(name))["test"]) == TEST_IDS[name]


def test_chaosops_splits_never_share_a_world() -> None:
    """The same scenarios in every split, but the world's generator is keyed on the split."""
    env = registry.get("chaosops").make({})()
    worlds = {split: {world_key(t, seed) for t in env.tasks(split) for seed in range(5)} for split in SPLITS}
    for a, b in combinations(SPLITS, 2):
        assert not worlds[a] & worlds[b]


def test_the_splits_are_the_same_in_another_process() -> None:
    script = ("import json; from drill import registry; from drill.core import SPLITS\n"
              "print(json.dumps({n: {s: [t.id for t in registry.get(n).make({})().tasks(s)] for s in SPLITS}"
              f" for n in {sorted(s.name for s in SPECS)!r}}}))")
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": src, "PYTHONHASHSEED": "7", "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout) == {spec.name: _ids(spec) for spec in SPECS}
