"""Reflexion: retry a failed task, with the model's own written reflection on each failure shown next time.

`play_attempts` plays every (task, seed) job; a job whose episode is not a success (`SuccessRule`) is played
again, up to `attempts` times. With `reflect=True`, after each failure the policy's model writes a short
reflection from the **episode and its feedback only**: the transcript (what the agent saw and did), the
rubric's component scores and total, and the environment's error events (`invalid_action` reasons). Nothing
else reaches the prompt: no task fields, no other events (an event may name what the world knows), so a
reflection never holds ground truth the agent did not see. The last `REFLECTION_WINDOW` (3) reflections of a
task and seed are shown at the next attempt, in the system prompt (`MemoryPolicy`).

The reported episode of a job is its last attempt; `AttemptReport.success_by_attempt[i]` is the share of jobs
solved within i + 1 attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from drill.core.env import Env
from drill.core.rollout import run_episodes
from drill.core.rubric import Rubric
from drill.core.types import Episode, Task
from drill.memory.policy import MemoryPolicy
from drill.memory.store import EpisodeCost
from drill.models.base import Message, SamplingParams
from drill.models.policy import render_action, render_observation

__all__ = ["REFLECT_INSTRUCTIONS", "AttemptReport", "feedback", "play_attempts", "reflection_prompt"]

REFLECT_INSTRUCTIONS = (
    "You review an agent's failed attempt at a task in an environment. From the transcript and the feedback, "
    "write a short reflection for the agent's next attempt at the same task: in at most three sentences, what "
    "went wrong and what to do differently. Write plain text, no tool call.")
MAX_TRANSCRIPT_CHARS = 6_000
MAX_REFLECTION_CHARS = 600
REFLECTION_TOKENS = 96
"""The reflection's own length budget, not the policy's `max_new_tokens`: about what MAX_REFLECTION_CHARS keeps."""


def feedback(episode: Episode) -> str:
    """The rubric's component scores and total, and the environment's error events: all a reflection may read
    beyond the transcript."""
    lines = []
    if episode.score is not None:
        parts = ", ".join(f"{name} = {value:g} (weight {episode.score.weights[name]:g})"
                          for name, value in episode.score.components.items())
        lines.append(f"Reward: total {episode.score.total:g}; components: {parts}.")
    errors = [f"step {e.step}: {e.data.get('reason', '')}" for e in episode.events if e.name == "invalid_action"]
    lines.append("Errors from the environment: " + ("; ".join(errors) if errors else "none") + ".")
    return "\n".join(lines)


def reflection_prompt(episode: Episode) -> list[Message]:
    """The reflection request: the transcript (the newest turns kept when it is long) and `feedback`."""
    turns = [f"[{t.role} saw]\n{render_observation(t.observation)}\n[{t.role} did]\n{render_action(t.action)}"
             for t in episode.turns]
    transcript, kept = "", 0
    for text in reversed(turns):
        if len(transcript) + len(text) > MAX_TRANSCRIPT_CHARS and kept:
            transcript = f"({len(turns) - kept} earlier turns not shown)\n\n" + transcript
            break
        transcript, kept = text + "\n\n" + transcript, kept + 1
    user = f"# Transcript\n\n{transcript.strip()}\n\n# Feedback\n\n{feedback(episode)}\n\nYour reflection:"
    return [{"role": "system", "content": REFLECT_INSTRUCTIONS}, {"role": "user", "content": user}]


@dataclass
class AttemptReport:
    """Per policy spec: the final episode of every job, every attempt played, and what reflecting cost."""

    final: list[Episode]
    played: list[tuple[int, Episode]] = field(default_factory=list)
    """(attempt, episode) for every episode played, in order."""
    success_by_attempt: list[float] = field(default_factory=list)
    reflections: dict[str, list[str]] = field(default_factory=dict)
    costs: dict[tuple[str, int], EpisodeCost] = field(default_factory=dict)
    """Reflection calls and tokens per (task id, seed); the turns' own calls are counted from the episodes."""


def play_attempts(make_env: Callable[[], Env], by_role: Mapping[str, object], jobs: Sequence[tuple[Task, int]],
                  rubric: Rubric, success: Callable[[Episode, Task], bool], attempts: int, reflect: bool,
                  batch: int = 32, max_turns: int = 1000,
                  on_episode_done: Callable[[Episode], None] | None = None) -> AttemptReport:
    """Play `jobs`, retrying failures up to `attempts` times (see the module docstring). With `reflect`, the LLM
    roles must be `MemoryPolicy`s (`with_memory`); their model writes the reflections."""
    if attempts < 1:
        raise ValueError(f"--attempts must be at least 1, got {attempts}")
    learners = list({id(p): p for p in by_role.values() if isinstance(p, MemoryPolicy)}.values())
    if reflect and not learners:
        raise ValueError("--reflect needs a language-model policy to write reflections")
    final: list[Episode | None] = [None] * len(jobs)
    report = AttemptReport(final=[])
    pending = list(range(len(jobs)))
    solved = 0
    seeds = {id(p): p.options.sampling.seed for p in learners}
    for attempt in range(1, attempts + 1):
        for policy in learners:  # attempt n samples with seed + n - 1 (greedy decoding repeats itself regardless)
            if seeds[id(policy)] is not None:
                sampling = replace(policy.options.sampling, seed=seeds[id(policy)] + attempt - 1)  # type: ignore[operator]
                policy.options = replace(policy.options, sampling=sampling)
        episodes: list[Episode] = []
        for start in range(0, len(pending), batch):
            chunk = [jobs[i] for i in pending[start:start + batch]]
            episodes += run_episodes(make_env, chunk, dict(by_role), rubric, max_turns,  # type: ignore[arg-type]
                                     on_episode_done=on_episode_done)
        failed: list[int] = []
        for index, episode in zip(pending, episodes):
            final[index] = episode
            report.played.append((attempt, episode))
            if success(episode, jobs[index][0]):
                solved += 1
            else:
                failed.append(index)
        report.success_by_attempt.append(solved / len(jobs) if jobs else 0.0)
        if reflect and failed and attempt < attempts:
            _reflect(learners, [final[i] for i in failed], report)  # type: ignore[misc]
        pending = failed
        if not pending:
            report.success_by_attempt += [report.success_by_attempt[-1]] * (attempts - attempt)
            break
    report.final = [e for e in final if e is not None]
    return report


def _reflect(learners: Sequence[MemoryPolicy], episodes: Sequence[Episode], report: AttemptReport) -> None:
    writer = learners[0]
    params = SamplingParams(max_new_tokens=REFLECTION_TOKENS, seed=writer.options.sampling.seed)  # greedy
    generations = writer.model.generate([reflection_prompt(e) for e in episodes], None, params)
    for episode, generation in zip(episodes, generations):
        text = " ".join(generation.text.split())[:MAX_REFLECTION_CHARS] or "(the model wrote no reflection)"
        for policy in learners:
            policy.reflect_on(episode.task_id, episode.seed, text)
        key = (episode.task_id, episode.seed)
        report.reflections.setdefault(f"{key[0]}:{key[1]}", []).append(text)
        tokens = len(generation.prompt_token_ids) + len(generation.token_ids)
        report.costs[key] = report.costs.get(key, EpisodeCost()) + EpisodeCost(model_calls=1, tokens=tokens)

