"""IT ticket triage over a knowledge base: a multi-turn search agent and a single-turn grounded reader.

    from drill.envs import triage
    env = triage.load(mode="reader", k=3)          # or mode="agent", turn_budget=8
    score = triage.rubric().score(episode, task)   # seven components, weights configurable
    triage.baselines["heuristic"]()                # also "random", "oracle"
    target = triage.reader_target()                # the reader mode as a single-turn GRPO target

See README.md in this folder for what the agent sees, the tools, and the reward formulas.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from drill.core.policy import Policy
from drill.envs.triage.baselines import HeuristicPolicy, OraclePolicy, RandomPolicy
from drill.envs.triage.corpus import (
    DEFAULT_DATA_DIR,
    Article,
    Corpus,
    CorpusError,
    Incident,
    Ticket,
    TriageTask,
    load_corpus,
)
from drill.envs.triage.env import MODES, TriageEnv
from drill.envs.triage.rubric import DEFAULT_WEIGHTS, rubric
from drill.envs.triage.search import knowledge_search
from drill.envs.triage.spec import SPEC
from drill.envs.triage.training import ReaderTarget, reader_target

__all__ = [
    "DEFAULT_DATA_DIR", "DEFAULT_WEIGHTS", "MODES", "Article", "Corpus", "CorpusError", "HeuristicPolicy",
    "Incident", "OraclePolicy", "RandomPolicy", "ReaderTarget", "SPEC", "Ticket", "TriageEnv", "TriageTask", "baselines",
    "knowledge_search", "load", "load_corpus", "reader_target", "rubric",
]


def load(mode: str = "reader", k: int = 3, turn_budget: int = 8, data_dir: str | Path | None = None) -> TriageEnv:
    """The triage environment. `k`: articles in the reader prompt; `turn_budget`: agent turns; `data_dir`: corpus."""
    return TriageEnv(mode=mode, k=k, turn_budget=turn_budget, data_dir=None if data_dir is None else str(data_dir))


baselines: dict[str, Callable[[], Policy]] = {
    "random": RandomPolicy,
    "heuristic": HeuristicPolicy,
    "oracle": OraclePolicy,
}
