"""Offline DPO against an expert: pairs are the expert's call against the tokens the model wrote at the same state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drill.core.rollout import run_episodes
from drill.train import BaseModel
from drill.train.methods import train
from drill.train.methods.dpo import Options as DPOOptions
from drill.train.methods.dpo import expert_pairs
from drill.train.sources import TeacherForcedPolicy, play_source, teacher_prompter
from test_train_loop import Critic, RelayEnv, tiny_base  # type: ignore[import-not-found]
from test_train_sft import WRITING, _config  # type: ignore[import-not-found]

pytestmark = pytest.mark.slow
__all__ = ["tiny_base"]  # a fixture, used by name


def _model_play(tiny_base: BaseModel, config: object, path: Path) -> Path:
    """A results.json of a 'model' that always writes the critic's "ok": the Critic's calls teacher-forced into
    model turns, so every writer turn carries the token ids it wrote (as a stored `drill eval` of a model does)."""
    prompter = teacher_prompter(tiny_base.model, tiny_base, {"tool_listing": "compact", "prefill": config.prefill,
                                                             "demonstrations": ()})
    played = run_episodes(RelayEnv, [(t, 0) for t in WRITING.tasks("train")],
                          {"writer": TeacherForcedPolicy(Critic(), prompter), "critic": Critic()}, WRITING.rubric({}))
    path.write_text(json.dumps({"episodes": [e.model_dump(mode="json") for e in played]}))
    return path


def test_expert_pairs_prefer_the_experts_call_on_the_prompt_the_model_saw(tiny_model_dir: Path,
                                                                          tiny_base: BaseModel,
                                                                          tmp_path: Path) -> None:
    config = _config(tiny_model_dir, tmp_path / "run")
    results = _model_play(tiny_base, config, tmp_path / "results.json")
    prompter = teacher_prompter(tiny_base.model, tiny_base, {"tool_listing": "compact", "prefill": config.prefill,
                                                             "demonstrations": ()})
    played, labels = play_source(config, f"results:{results}", "oracle", WRITING, ["writer"], prompter)
    assert labels is not None
    pairs = expert_pairs(played, labels, ["writer"])
    assert len(pairs) == 8  # 4 training tasks x 2 writer turns, every one a disagreement
    decode = tiny_base.tokenizer.decode
    second = pairs[1]
    assert (second.chosen.episode, second.chosen.turn) == (second.rejected.episode, second.rejected.turn) == (0, 2)
    assert second.chosen.prompt_ids == second.rejected.prompt_ids
    assert '{"text": "ok"}' in decode(list(second.chosen.prompt_ids))  # the model's own first reply drove the state
    assert decode(list(second.chosen.completion_ids)) == 'train-0 line 1"}}\n</tool_call>'  # the expert's call
    assert decode(list(second.rejected.completion_ids)) == 'ok"}}\n</tool_call>'  # what the model wrote there
    assert second.margin is None
    # max_reward keeps only states of episodes that scored below it: here none
    lowest = min(e.score.total for e in played if e.score is not None)
    assert expert_pairs(played, labels, ["writer"], max_reward=lowest) == []
    # a source that is not a model's play has no sampled tokens to reject
    played, labels = play_source(config, "heuristic", "oracle", WRITING, ["writer"], prompter)
    assert labels is not None
    with pytest.raises(ValueError, match="carries no sampled token ids"):
        expert_pairs(played, labels, ["writer"])


def test_offline_dpo_moves_the_model_toward_the_experts_calls(tiny_model_dir: Path, tiny_base: BaseModel,
                                                              tmp_path: Path) -> None:
    config = _config(tiny_model_dir, tmp_path / "run", learning_rate=3e-2)
    results = _model_play(tiny_base, config, tmp_path / "results.json")
    options = DPOOptions(source=f"results:{results}", expert="oracle", epochs=3, batch_size=4, beta=0.5, nll=1.0)
    result = train(config, "dpo", options, target=WRITING, base=tiny_base)
    records = result.metrics
    assert [r["step"] for r in records] == list(range(1, 7)) and all(r["pairs"] == 4 for r in records)
    first, last = records[0], records[-1]
    # the first step's policy is the reference (up to LoRA dropout: none here), so the DPO loss starts at log 2
    assert first["chosen_logratio"] == pytest.approx(0.0, abs=1e-4)
    assert last["chosen_logratio"] - last["rejected_logratio"] > 1.0
    assert last["reward_accuracy"] == 1.0 and last["chosen_nll"] < first["chosen_nll"]
    assert (result.adapter_dir / "adapter_model.safetensors").is_file()
    assert (config.output_dir / "learning_curve.png").is_file()


def test_offline_dpo_options_are_checked() -> None:
    with pytest.raises(ValueError, match="need both source="):
        DPOOptions(source="results:x.json")
    with pytest.raises(ValueError, match="need both source="):
        DPOOptions(expert="reader")
    with pytest.raises(ValueError, match="max_reward filters"):
        DPOOptions(max_reward=0.5)
    with pytest.raises(ValueError, match="nll must be >= 0"):
        DPOOptions(source="lora:x", expert="reader", nll=-1)
