"""LLM policies in ChaosOps: the embedded model plays real episodes; broken adapters stop the CLI with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drill.cli import app
from drill.core import Generation, ToolSpec, run_episodes
from drill.envs import chaosops
from drill.models import SamplingParams
from drill.models.base import Message
from drill.models.local import EMBEDDED_MODEL_ID, TransformersChatModel
from drill.models.prompt import LLMOptions, PolicyOptions
from drill.policies import resolve_policies

PARSE_PREFIX = "could not parse your tool call: "


def test_a_broken_adapter_stops_drill_eval_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "drill.cli", "eval", "chaosops", "--policy", "oracle",
         "--policy", f"heuristic,oversight=lora:{tmp_path / 'missing-adapter'}", "--seeds", "1",
         "--failure", "db_deadlock", "--tier", "easy", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode != 0
    assert "missing-adapter: no such adapter folder" in result.stderr
    assert not out.exists(), "nothing may be evaluated when one policy cannot be built"


@pytest.mark.slow
def test_the_embedded_model_plays_chaosops_with_one_batched_call_per_turn(
        embedded_model: TransformersChatModel, monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[int] = []
    generate = embedded_model.generate

    def counted(conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                params: SamplingParams) -> list[Generation]:
        batches.append(len(conversations))
        return generate(conversations, tools, params)

    monkeypatch.setattr(embedded_model, "generate", counted)
    policies = resolve_policies("oracle,sre=llm", chaosops.ChaosOpsEnv.roles, chaosops.baselines,
                                LLMOptions(prompt=PolicyOptions(sampling=SamplingParams(max_new_tokens=16, temperature=0.0))))
    task = chaosops.load().task("autoscaler_cost_cut-easy")
    episodes = run_episodes(chaosops.load, [(task, 0), (task, 1)], policies, chaosops.rubric())

    sre_turns = [turn for episode in episodes for turn in episode.turns if turn.role == "sre"]
    assert sre_turns and sum(batches) == len(sre_turns)
    assert len(batches) == max(sum(t.role == "sre" for t in e.turns) for e in episodes), "one call per round"
    for episode in episodes:
        assert episode.done and episode.score is not None
        info = episode.policies["sre"]
        assert (info.kind, info.model, info.load_status) == ("llm", EMBEDDED_MODEL_ID, "ok")
        assert episode.policies["dev"].kind == "scripted"
    tool_names = {t.name for t in chaosops.load().reset(task, 0).tools}
    for turn in sre_turns:
        action, generation = turn.action, turn.action.generation
        assert generation is not None and action.raw == generation.text
        assert generation.prompt_token_ids and 0 < len(generation.token_ids) <= 16
        assert len(generation.logprobs) == len(generation.token_ids) and generation.model == EMBEDDED_MODEL_ID
        rejections = [e.data["reason"] for e in turn.events if e.name == "invalid_action"]
        if action.parse_error is not None:  # a recorded parse error, answered by the env with the parser's words
            assert rejections == [(PARSE_PREFIX + action.parse_error)[:300]]
        else:  # a valid tool call: applied, or rejected by the env's own validation
            assert action.tool in tool_names or rejections


@pytest.mark.slow
def test_drill_eval_and_watch_run_a_lora_adapter_for_one_role(
        tmp_path: Path, lora_adapter_maker: Callable[..., str]) -> None:
    adapter = tmp_path / "adapter"
    sha = lora_adapter_maker(adapter)
    spec = f"oracle,sre=lora:{adapter}"
    out = tmp_path / "report"
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "chaosops", "--policy", "oracle", "--policy", spec, "--seeds", "1",
                                 "--failure", "db_deadlock", "--tier", "easy", "--max-new-tokens", "16",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sha[:12] in result.output, "the table names the adapter by its hash"
    payload = json.loads((out / "results.json").read_text())
    models = {row["policy"]: row["model"] for row in payload["summary"]}
    assert models == {"oracle": "—", spec: f"sre: {EMBEDDED_MODEL_ID} + {adapter.resolve()} ({sha[:12]}) [ok]"}
    lora_episode = next(e for e in payload["episodes"] if e["policies"]["sre"]["kind"] == "lora")
    assert lora_episode["policies"]["sre"]["adapter_sha256"] == sha
    assert all(t["action"]["raw"] is not None for t in lora_episode["turns"] if t["role"] == "sre")

    watched = runner.invoke(app, ["watch", "chaosops", "--policy", spec, "--failure", "db_deadlock",
                                  "--tier", "easy", "--max-new-tokens", "16"])
    assert watched.exit_code == 0, watched.output
    assert "raw model output" in watched.output
    assert "unparseable:" in watched.output or "sre ->" in watched.output
