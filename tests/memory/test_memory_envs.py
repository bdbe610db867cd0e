"""Every registered environment takes the store, memory, Reflexion and LATS through `drill eval` (an OpenAI stub
as the model: it answers with text that is no tool call, which every environment must take in its stride)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill import registry
from drill.cli import app
from drill.core.spec import EnvSpec
from drill.memory import TrajectoryStore
from drill.memory.reflexion import REFLECT_INSTRUCTIONS
from drill.models.testing import StubOpenAIServer, text_reply

SPECS = list(registry.specs().values())




def reply(request: dict) -> str:
    if request["messages"][0]["content"] == REFLECT_INSTRUCTIONS:
        return "I never called a tool; next time reply with one tool call."
    return "I am not sure what to do."


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_environment_takes_every_method(spec: EnvSpec, tmp_path: Path) -> None:
    store = str(tmp_path / "memory.sqlite")
    done = CliRunner().invoke(app, ["eval", spec.name, "--split", "train", "--limit", "2", "--seeds", "1",
                                    "--policy", "oracle", "--store", store, "--out", str(tmp_path / "a")])
    assert done.exit_code == 0, done.output
    assert len(TrajectoryStore(store).episodes(env=spec.name, split="train", success=True)) == 2
    with StubOpenAIServer(text_reply(reply)) as server:
        model = ["--base-url", server.base_url, "--api-key-env", "PATH"]
        done = CliRunner().invoke(app, ["eval", spec.name, "--limit", "1", "--seeds", "1", "--policy", "openai:stub",
                                        *model, "--memory", store, "--memory-k", "1", "--attempts", "2", "--reflect",
                                        "--out", str(tmp_path / "b")])
        assert done.exit_code == 0, done.output
        row = json.loads((tmp_path / "b" / "results.json").read_text())["meta"]["methods"][0]
        assert row["success@1"] == row["success@2"] == 0.0 and row["model_calls"] > 0
        prompts = [json.dumps(r["messages"]) for r in server.requests]
        assert any("(Worked example" in p for p in prompts)  # a retrieved training episode was shown
        assert any("I never called a tool" in p and "Reflections on your earlier" in p for p in prompts)
        done = CliRunner().invoke(app, ["eval", spec.name, "--limit", "1", "--seeds", "1", "--policy",
                                        "lats:openai:stub", *model, "--lats-budget", "2", "--lats-k", "2",
                                        "--lats-rollout", "heuristic", "--out", str(tmp_path / "c")])
        assert done.exit_code == 0, done.output
        row = json.loads((tmp_path / "c" / "results.json").read_text())["meta"]["methods"][0]
        assert row["nodes"] >= 1 and row["policy"] == "lats:openai:stub"
