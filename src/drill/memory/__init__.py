"""Learning without gradients: a trajectory store with retrieval of past successes (memory), Reflexion retries,
and LATS tree search, for every registered environment. See docs/inference.md.

* `TrajectoryStore` — episodes in one SQLite file; `similar` retrieves successful training episodes by BM25.
* `MemoryPolicy` / `Memory` — an LLM policy shown retrieved episodes as worked examples, and its reflections.
* `play_attempts` — Reflexion: retry failures with the model's reflections on them.
* `LATSPolicy` — Monte Carlo tree search by replaying action prefixes from `reset(task, seed)`.
"""

from drill.memory.lats import LATSPolicy, SearchSettings
from drill.memory.policy import REFLECTION_WINDOW, Memory, MemoryPolicy, with_memory
from drill.memory.reflexion import AttemptReport, feedback, play_attempts, reflection_prompt
from drill.memory.store import EpisodeCost, StoredEpisode, SuccessRule, TrajectoryStore, episode_cost, task_text

__all__ = [
    "REFLECTION_WINDOW", "AttemptReport", "EpisodeCost", "LATSPolicy", "Memory", "MemoryPolicy", "SearchSettings",
    "StoredEpisode", "SuccessRule", "TrajectoryStore", "episode_cost", "feedback", "play_attempts",
    "reflection_prompt", "task_text", "with_memory",
]
