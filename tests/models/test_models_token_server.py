"""`server:MODEL`: prompts rendered here and completed by a server that returns token ids. Against a loopback
`TokenServerStub` over the same tiny model, greedy episodes are identical to the in-process model's, turn by
turn and token by token; a server that returns no ids is refused with a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from drill import registry
from drill.core.rollout import run_episodes
from drill.models.base import ModelCallError, SamplingParams
from drill.models.local import load_local
from drill.models.policy import build_llm_policy
from drill.models.prompt import LLMOptions, PolicyOptions
from drill.models.testing import TokenServerStub

PROMPT = PolicyOptions(sampling=SamplingParams(max_new_tokens=16, temperature=0.0, seed=0), tool_listing="compact")


def _triage_agent():  # type: ignore[no-untyped-def]
    spec = registry.get("triage")
    options = spec.parse_options({"mode": "agent", "turn_budget": 4})
    tasks = spec.make(options)().tasks("test")[:3]
    return spec.make(options), spec.rubric_for(options), [(task, 0) for task in tasks]


def test_server_episodes_equal_the_in_process_models_token_for_token(tiny_model_dir: Path) -> None:
    make_env, rubric, jobs = _triage_agent()
    local = build_llm_policy("llm", LLMOptions(model=str(tiny_model_dir), prompt=PROMPT, device="cpu"))
    with TokenServerStub(load_local(str(tiny_model_dir))) as server:
        remote = build_llm_policy("server:tiny", LLMOptions(model=str(tiny_model_dir), base_url=server.base_url,
                                                              prompt=PROMPT))
        over_server = run_episodes(make_env, jobs, remote, rubric)
    in_process = run_episodes(make_env, jobs, local, rubric)
    turns = 0
    for a, b in zip(in_process, over_server, strict=True):
        assert a.score == b.score and len(a.turns) == len(b.turns) and a.events == b.events
        for x, y in zip(a.turns, b.turns):
            assert x.observation == y.observation
            assert (x.action.tool, x.action.arguments) == (y.action.tool, y.action.arguments)
            assert x.action.raw == y.action.raw
            assert x.action.generation.prompt_token_ids == y.action.generation.prompt_token_ids
            assert x.action.generation.token_ids == y.action.generation.token_ids
            assert y.action.generation.logprobs == pytest.approx(x.action.generation.logprobs, abs=1e-4)
            turns += 1
    assert turns > len(jobs)  # multi-turn: the history went through the server's prompts too
    assert len(server.requests) == turns and all(isinstance(r["prompt"], list) for r in server.requests)
    assert over_server[0].policies["agent"].name == "server:tiny"


def test_a_server_that_returns_no_token_ids_is_refused(tiny_model_dir: Path) -> None:
    make_env, rubric, jobs = _triage_agent()
    with TokenServerStub(load_local(str(tiny_model_dir)), token_ids=False) as server:
        remote = build_llm_policy("server:tiny", LLMOptions(model=str(tiny_model_dir), base_url=server.base_url,
                                                              prompt=PROMPT))
        with pytest.raises(ModelCallError, match="returned no token ids .* vLLM >= 0.10.2"):
            run_episodes(make_env, jobs[:1], remote, rubric)


def test_server_needs_an_address(tiny_model_dir: Path) -> None:
    with pytest.raises(ValueError, match="needs --base-url"):
        build_llm_policy("server:tiny", LLMOptions(model=str(tiny_model_dir), prompt=PROMPT))
