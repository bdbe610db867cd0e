"""100 concurrent sessions on loopback, each playing a full episode: no errors and no cross-talk (each session's
episode equals the same episode played locally). The figures are printed by benchmarks/serve_load.py, never asserted
here."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from drill import registry


def test_100_concurrent_sessions_each_equal_their_local_episode(
        serve, benchmark_script: Callable[[str], ModuleType]) -> None:
    server = serve("chaosops", "--max-sessions", "128")
    result = benchmark_script("serve_load").run_load(server.url, "chaosops", registry.get("chaosops").parse_options({}),
                                                     sessions=100, policy="heuristic", timeout=240)
    print(result.line())
    assert result.errors == []
    assert result.mismatches == 0
    assert result.steps > 100 * 4
