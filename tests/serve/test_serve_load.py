"""100 concurrent sessions on loopback, each playing a full episode: no errors and no cross-talk (each session's
episode equals the same episode played locally). The figures are printed by benchmarks/serve_load.py, never asserted
here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from drill import registry

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "serve_load.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("serve_load", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules["serve_load"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_100_concurrent_sessions_each_equal_their_local_episode(serve) -> None:
    server = serve("chaosops", "--max-sessions", "128")
    result = _benchmark().run_load(server.url, "chaosops", registry.get("chaosops").parse_options({}), sessions=100,
                                   policy="heuristic", timeout=240)
    print(result.line())
    assert result.errors == []
    assert result.mismatches == 0
    assert result.steps > 100 * 4
