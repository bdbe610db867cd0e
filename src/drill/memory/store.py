"""The trajectory store: played episodes in one SQLite file, and BM25 retrieval of past successes.

    store = TrajectoryStore("runs/memory.sqlite")
    store.add(episodes, tasks_by_id, env_options, success, method="llm")   # `drill eval ... --store PATH`
    hits = store.similar("triage", env_options, task_text, k=2)           # successful train episodes, best first

A row holds what a later reader needs without the environment: the env, its options, the task id and
split, the seed, the **task text** (the first observation the agent saw: what any policy may read, never
the task's ground truth), the actions, every rubric component and the total, whether it counts as a success
(and the threshold it was judged by), the policy and model of every role, the method (plain, memory,
reflexion attempt, LATS), its cost (model calls, tokens, search nodes) and the whole episode as JSON, which an
SFT stage reads back with `Episode.model_validate_json`.

Retrieval (`similar`) ranks the **successful training-split** episodes of the same environment and options
by BM25 (bm25s) between their task text and the query, one episode per task (its best total), ties to the
earlier row; a query task's own id is excluded, so a training rollout never sees its own solution.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.rubric import Rubric
from drill.core.types import Episode, Task

__all__ = ["EpisodeCost", "StoredEpisode", "SuccessRule", "TrajectoryStore", "episode_cost", "task_text"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY,
    env TEXT NOT NULL,
    options TEXT NOT NULL,
    task_id TEXT NOT NULL,
    split TEXT NOT NULL,
    seed INTEGER NOT NULL,
    task_text TEXT NOT NULL,
    actions TEXT NOT NULL,
    components TEXT NOT NULL,
    total REAL NOT NULL,
    success INTEGER NOT NULL,
    threshold REAL,
    policies TEXT NOT NULL,
    model TEXT NOT NULL,
    method TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 1,
    cost TEXT NOT NULL,
    episode TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS episodes_by_env ON episodes (env, options, split, success);
"""


def task_text(episode: Episode) -> str:
    """What the agent saw first: the first turn's observation (no ground truth: observations never hold it)."""
    return episode.turns[0].observation.content if episode.turns else ""


def options_key(options: Mapping[str, Any]) -> str:
    return json.dumps(dict(options), sort_keys=True, default=str)


@dataclass(frozen=True)
class EpisodeCost:
    """What an episode cost: model calls (prompts generated for), tokens (prompt + generated) and search nodes."""

    model_calls: int = 0
    tokens: int = 0
    nodes: int = 0
    wall_s: float = 0.0

    def __add__(self, other: EpisodeCost) -> EpisodeCost:
        return EpisodeCost(self.model_calls + other.model_calls, self.tokens + other.tokens,
                           self.nodes + other.nodes, self.wall_s + other.wall_s)

    def as_dict(self) -> dict[str, float]:
        return {"model_calls": self.model_calls, "tokens": self.tokens, "nodes": self.nodes,
                "wall_s": round(self.wall_s, 3)}


def episode_cost(episode: Episode) -> EpisodeCost:
    """The model calls and tokens of an episode's own turns (every turn whose action carries a generation)."""
    generations = [t.action.generation for t in episode.turns if t.action.generation is not None]
    return EpisodeCost(model_calls=len(generations),
                       tokens=sum(len(g.prompt_token_ids) + len(g.token_ids) for g in generations))


class SuccessRule:
    """When an episode counts as a success: its total reaches `at` if given, else `fraction` of the oracle's total
    on the same task and seed (the oracle replayed once per task and seed; environments' oracles are optimal, so
    this reads "at least this share of the best score"). Environments' reward scales differ by orders of
    magnitude (ChaosOps ±1000, triage 0–1), which a single absolute default could not serve."""

    def __init__(self, make_env: Callable[[], Env], rubric: Rubric, oracle: Callable[[], Policy] | None,
                 fraction: float = 0.5, at: float | None = None) -> None:
        if at is None and oracle is None:
            raise ValueError("this environment has no oracle; give an absolute success threshold (--success-at)")
        self.make_env, self.rubric, self.oracle, self.fraction, self.at = make_env, rubric, oracle, fraction, at
        self._reference: dict[tuple[str, int], float] = {}

    def threshold(self, task: Task, seed: int) -> float:
        if self.at is not None:
            return self.at
        key = (task.id, seed)
        if key not in self._reference:
            assert self.oracle is not None
            episode = run_episodes(self.make_env, [(task, seed)], self.oracle(), self.rubric)[0]
            assert episode.score is not None
            self._reference[key] = episode.score.total
        best = self._reference[key]
        return best * self.fraction if best > 0 else best - abs(best) * (1 - self.fraction)

    def __call__(self, episode: Episode, task: Task) -> bool:
        return episode.score is not None and episode.score.total >= self.threshold(task, episode.seed) - 1e-9


@dataclass(frozen=True)
class StoredEpisode:
    id: int
    env: str
    task_id: str
    split: str
    seed: int
    task_text: str
    actions: list[dict[str, Any]]
    components: dict[str, float]
    total: float
    success: bool
    method: str
    attempt: int
    cost: dict[str, float]
    episode_json: str

    def episode(self) -> Episode:
        return Episode.model_validate_json(self.episode_json)


_TERM = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from has have in is it of on or that the this to was were with "
                  "you your".split())


def terms(text: str) -> list[str]:
    """Lowercase words and numbers, without the commonest English words."""
    return [t for t in _TERM.findall(text.lower()) if t not in _STOP]


class TrajectoryStore:
    """One SQLite file of episodes (see the module docstring). Writes are one transaction per `add`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.executescript(_SCHEMA)
        self._index: dict[tuple[str, str, int], tuple[Any, list[StoredEpisode]]] = {}

    def close(self) -> None:
        self._db.close()

    def add(self, episodes: Iterable[Episode], tasks: Mapping[str, Task], options: Mapping[str, Any],
            success: Callable[[Episode, Task], bool], method: str, attempt: int = 1,
            costs: Mapping[tuple[str, int], EpisodeCost] | None = None,
            thresholds: Callable[[Task, int], float] | None = None) -> int:
        """Store scored episodes. An episode's cost is `costs[(task id, seed)]` when given (a LATS search), else the
        model calls and tokens of its own turns."""
        rows = []
        created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        for episode in episodes:
            if episode.score is None:
                raise ValueError(f"episode {episode.task_id}/{episode.seed} is not scored; the store keeps rewards")
            task = tasks[episode.task_id]
            cost = (costs or {}).get((episode.task_id, episode.seed)) or episode_cost(episode)
            models = sorted({info.model or info.name for info in episode.policies.values()})
            actions = [{"role": t.role, "tool": t.action.tool, "arguments": t.action.arguments,
                        "valid": t.action.parse_error is None and not any(e.name == "invalid_action" for e in t.events)}
                       for t in episode.turns]
            rows.append((episode.env, options_key(options), episode.task_id, task.split, episode.seed,
                         task_text(episode), json.dumps(actions, default=str), json.dumps(episode.score.components),
                         episode.score.total, int(success(episode, task)),
                         thresholds(task, episode.seed) if thresholds else None,
                         json.dumps({r: i.model_dump() for r, i in episode.policies.items()}), ", ".join(models),
                         method, attempt, json.dumps(cost.as_dict()), episode.model_dump_json(), created))
        with self._db:
            self._db.executemany(
                "INSERT INTO episodes (env, options, task_id, split, seed, task_text, actions, components, total, "
                "success, threshold, policies, model, method, attempt, cost, episode, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        self._index.clear()
        return len(rows)

    def episodes(self, env: str | None = None, split: str | None = None, success: bool | None = None,
                 method: str | None = None, options: Mapping[str, Any] | None = None) -> list[StoredEpisode]:
        """Stored episodes in insertion order, filtered (an SFT stage reads LATS finds with method="lats...");
        `options` keeps the episodes played with exactly these environment options."""
        where, args = [], []
        key = None if options is None else options_key(options)
        for column, value in (("env", env), ("split", split), ("method", method), ("options", key)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if success is not None:
            where.append("success = ?")
            args.append(int(success))
        return self._select(" AND ".join(where) or "1", args)

    def _select(self, where: str, args: Sequence[Any]) -> list[StoredEpisode]:
        cursor = self._db.execute(
            "SELECT id, env, task_id, split, seed, task_text, actions, components, total, success, method, attempt, "
            f"cost, episode FROM episodes WHERE {where} ORDER BY id", args)
        return [StoredEpisode(id=r[0], env=r[1], task_id=r[2], split=r[3], seed=r[4], task_text=r[5],
                              actions=json.loads(r[6]), components=json.loads(r[7]), total=r[8], success=bool(r[9]),
                              method=r[10], attempt=r[11], cost=json.loads(r[12]), episode_json=r[13])
                for r in cursor.fetchall()]

    def similar(self, env: str, options: Mapping[str, Any], query: str, k: int,
                exclude_task: str | None = None) -> list[StoredEpisode]:
        """The k successful training episodes of this env and options most similar to `query` (BM25 on the task
        text), one per task, best first; only positive scores; ties go to the earlier row."""
        if k <= 0:
            return []
        import numpy as np

        bm25, candidates = self._bm25(env, options_key(options))
        query_terms = terms(query)
        if bm25 is None or not query_terms:
            return []
        scores = np.asarray(bm25.get_scores(query_terms), dtype=np.float64)
        order = np.lexsort((np.arange(len(scores)), -scores))
        hits: list[StoredEpisode] = []
        for i in order:
            if scores[i] <= 0 or len(hits) >= k:
                break
            if candidates[i].task_id != exclude_task:
                hits.append(candidates[i])
        return hits

    def _bm25(self, env: str, options: str) -> tuple[Any, list[StoredEpisode]]:
        count = self._db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        key = (env, options, count)
        if key not in self._index:
            best: dict[str, StoredEpisode] = {}
            for row in self._select("env = ? AND options = ? AND split = 'train' AND success = 1", (env, options)):
                if row.task_id not in best or row.total > best[row.task_id].total:
                    best[row.task_id] = row
            candidates = sorted(best.values(), key=lambda r: r.id)
            bm25 = None
            if candidates:
                import bm25s

                bm25 = bm25s.BM25()
                bm25.index([terms(c.task_text) or ["_"] for c in candidates], show_progress=False)
            self._index[key] = (bm25, candidates)
        return self._index[key]
