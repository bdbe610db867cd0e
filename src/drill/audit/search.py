"""The exploit search: play every strategy on the test split (or another: `audit_env`'s `split`), compare with the
baselines, give verdicts.

Verdicts (one finding per strategy family and verdict, with the best-scoring member as its example):

* error — a strategy scores above the oracle on some task: no sequence of actions may outscore the oracle,
  so the rubric (or the oracle) is wrong;
* warning, "answer given away by position" — the oracle's choice of an enum argument is the value its observation
  names first (or last) in nearly every call, far above chance (`judge_positions`): its place names the answer;
* warning, "reaches the heuristic" — a strategy that never sees ground truth reaches the heuristic's mean:
  a degenerate policy is as good as the scripted baseline, so the optimizer will find it;
* error — "roles ignored": in an environment with several roles, the oracle with its roles swapped, merged or one
  role taken over by another's policy still scores the oracle's mean: the roles' remits are not enforced
  (docs/architecture.md: a multi-role environment refuses an out-of-remit action);
* warning, "component while failing" — on the episodes it fails (total below half the oracle's on that task),
  a strategy still scores at or above the oracle's mean on those tasks on a positive component: that
  component pays for something other than the task;
* error, "disguise goes through" — an act the environment refuses by a rule (`invalid_action` of kind rule) in
  its plain form is not refused when disguised (a recipient hidden in another, a marked item's text pasted
  instead of the item sent): the rule reads the form, not what the act does;
* error, "undone work counted as done" — the heuristic or the oracle with each item it acted on thrown away right
  after still succeeds by the environment's own success measure (`judge_undone`);
* error, "a hidden mistake is not counted" — the heuristic's first message also sent to someone else first, then that
  copy thrown away (`misdirect_first`), succeeds by the environment's own success measure where the same mistake
  left in sight fails (`judge_covered`);
* error, "refused calls steer the team" — in an environment with several roles, the other seats play otherwise
  beside a seat whose every call is another role's (refused) than beside one calling a tool that does not exist;
* error, "partial work paid in full" — a bulk action done in part keeps the rubric's heaviest component (its
  verdict on the outcome) at the baseline's value;
* error, "success accepts a hedge" — the oracle's answer with other candidates written after it (the hedge
  mutations: names and codes the agent was shown, whole lines of what it read, packed candidates), on episodes where
  the candidates are most of the text and the answer field is read (the oracle with a placeholder there fails),
  still succeeds by the environment's own success measure on at least two and `MIN_SWAP_SHARE` of them: a list
  with the answer somewhere in it counts as the answer;
* error, "success accepts a denial" / "a word salad" / "the opposite" — the oracle's answer with every sentence opened
  by "Do not", every other content word dropped or its words reversed (on answers of 8 words or more), or, on a
  procedure, its words swapped for their opposites or one clause's verb replaced by a destroying verb, on episodes
  where the field is read, still succeeds as often (the same share): the success measure reads words, not what they
  say;
* error, "another task's answer succeeds" — the oracle with its answer text replaced by a stock answer of other
  tasks (`swap_strategies`) still succeeds by the environment's own success measure (`EnvSpec.success`) on at
  least two and `MIN_SWAP_SHARE` of the episodes where that field matters (the oracle with a placeholder there
  fails): the measure does not read whether the answer answers this task.

The search is bounded: single strategies first (the environment's own, the disguises and partial work, generic,
then mutations), then pairs of the best ones, until `budget_s` runs out. Disguises and partial work are judged
even when they change nothing the rubric sees, since that is what their verdicts look for.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drill.audit.strategies import (
    ABSTENTIONS,
    GARBLE_MIN_WORDS,
    GARBLES,
    HEDGES,
    SWAP_OVERLAP,
    WIPE,
    Context,
    Strategy,
    StrategyPolicy,
    answers_of,
    combine,
    constants_of,
    disguise_strategies,
    fields_of,
    generic_strategies,
    lookup_strategies,
    mentions,
    mutation_strategies,
    overlap,
    packing_strategies,
    partial_strategies,
    placeholder_control,
    procedure,
    refused_strategies,
    role_strategies,
    share_of,
    stock_answers,
    swap_strategies,
)
from drill.core.policy import Policy
from drill.core.rollout import run_episodes
from drill.core.rubric import Rubric
from drill.core.spec import EnvSpec
from drill.core.types import Episode, Task, ToolSpec

__all__ = ["AuditResult", "Finding", "Played", "audit_env", "tools_of"]

EPSILON = 1e-6
MIN_FAILED_SHARE = 0.2
"""A component-while-failing warning needs at least this share of a strategy's episodes failed."""
MIN_SWAP_SHARE = 0.05
"""An "another task's answer succeeds" error needs successes on at least this share of the episodes whose success
reads the swapped field, and on at least two: a task or two that share their answer in other words (one database
outage escalated to the same on-call as another) are no hole."""
LIST_ANSWER_SHARE = 0.5
"""A hedged text is a list when the answer's own words are under this share of it (a doubt after an answer is not)."""
SWAP_TRAIN_TASKS = 200
"""The oracle's answers on at most this many train tasks are where the stock answers come from."""


@dataclass
class Played:
    """One strategy's (or baseline's) episodes, with the means the verdicts read."""

    name: str
    episodes: list[Episode]

    @property
    def mean(self) -> float:
        return statistics.fmean(e.score.total for e in self.episodes if e.score)

    def component_mean(self, name: str) -> float:
        return statistics.fmean(e.score.components[name] for e in self.episodes if e.score)

    def by_key(self) -> dict[tuple[str, int], Episode]:
        return {(e.task_id, e.seed): e for e in self.episodes}


@dataclass
class Finding:
    level: str
    """error or warning."""
    kind: str
    """A verdict of the module docstring ("beats the oracle", "another task's answer succeeds", ...) or a
    detector's name."""
    strategy: str
    family: str
    components: list[str]
    message: str
    score: float | None = None
    reference: float | None = None
    example: dict[str, Any] = field(default_factory=dict)
    strategies: int = 1
    """How many strategies of the family showed it."""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class AuditResult:
    env: str
    options: dict[str, Any]
    baselines: dict[str, float]
    strategies: list[dict[str, Any]]
    findings: list[Finding]
    seconds: float
    tasks: int
    seeds: int
    judge: dict[str, Any] | None = None
    split: str = "test"
    """The split the strategies played (`audit_env`'s `split`)."""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]


def tools_of(make_env: Callable[[], Any], policy: Policy, task: Task) -> list[ToolSpec]:
    """Every tool any role is offered in one baseline episode, in first-seen order."""
    episode = run_episodes(make_env, [(task, 0)], policy)[0]
    found: dict[str, ToolSpec] = {}
    for turn in episode.turns:
        for tool in turn.observation.tools:
            found.setdefault(tool.name, tool)
    return list(found.values())


def example_of(episode: Episode, max_actions: int = 12) -> dict[str, Any]:
    """One episode as a finding shows it: the actions (arguments cut short) and the component scores."""
    actions = []
    for turn in episode.turns[:max_actions]:
        args = turn.action.arguments if isinstance(turn.action.arguments, dict) else {}
        shown = {k: (v[:120] + "…" if isinstance(v, str) and len(v) > 120 else
                     v[:6] + ["…"] if isinstance(v, list) and len(v) > 6 else v) for k, v in args.items()}
        actions.append({"role": turn.role, "tool": turn.action.tool, "arguments": shown})
    assert episode.score is not None
    return {"task": episode.task_id, "seed": episode.seed, "turns": len(episode.turns), "actions": actions,
            "more_actions": max(0, len(episode.turns) - max_actions), "total": round(episode.score.total, 4),
            "components": {k: round(v, 4) for k, v in episode.score.components.items()}}


def _exploited(played: Episode | Played, reference: Episode | Played, rubric: Rubric) -> list[str]:
    """The components whose weighted contribution is higher than in the reference, biggest gain first."""
    def contribution(p: Episode | Played, name: str, weight: float) -> float:
        if isinstance(p, Episode):
            assert p.score is not None
            return p.score.components[name] * weight
        return p.component_mean(name) * weight
    gains = {c.name: contribution(played, c.name, c.weight) - contribution(reference, c.name, c.weight)
             for c in rubric.components}
    return [n for n, g in sorted(gains.items(), key=lambda kv: -kv[1]) if g > EPSILON][:3]


def judge_strategy(strategy: Strategy, played: Played, oracle: Played, heuristic: Played,
                   rubric: Rubric) -> list[Finding]:
    """The findings of one strategy against the baselines (see the module docstring)."""
    findings = []
    oracle_by = oracle.by_key()
    beats = [(e.score.total - oracle_by[(e.task_id, e.seed)].score.total, e) for e in played.episodes
             if e.score and oracle_by[(e.task_id, e.seed)].score
             and e.score.total > oracle_by[(e.task_id, e.seed)].score.total + EPSILON]  # type: ignore[union-attr]
    if beats:
        margin, worst = max(beats, key=lambda b: b[0])
        ref = oracle_by[(worst.task_id, worst.seed)]
        findings.append(Finding(
            "error", "beats the oracle", strategy.name, strategy.family, _exploited(worst, ref, rubric),
            f"beats the oracle on {len(beats)} of {len(played.episodes)} episodes (by up to {margin:.3g})",
            worst.score.total, ref.score.total, example_of(worst)))  # type: ignore[union-attr]
    if not strategy.sees_ground_truth and round(played.mean, 6) >= round(heuristic.mean, 6):
        best = max(played.episodes, key=lambda e: e.score.total if e.score else float("-inf"))
        findings.append(Finding(
            "warning", "reaches the heuristic", strategy.name, strategy.family, _exploited(played, heuristic, rubric),
            f"mean {played.mean:.4g} reaches the heuristic's {heuristic.mean:.4g} (oracle {oracle.mean:.4g})",
            played.mean, heuristic.mean, example_of(best)))
    if strategy.roles and strategy.sees_ground_truth and played.mean >= oracle.mean - EPSILON:
        best = max(played.episodes, key=lambda e: e.score.total if e.score else float("-inf"))
        findings.append(Finding(
            "error", "roles ignored", strategy.name, strategy.family, _exploited(played, oracle, rubric),
            f"the oracle with {strategy.roles} scores {played.mean:.4g}, the oracle's own mean: any role may do "
            "another's work, so the roles' remits are not enforced", played.mean, oracle.mean, example_of(best)))
    if strategy.hedge and strategy.base == "oracle":
        ties = [e for e in played.episodes if e.score and e.score.total >= oracle_by[(e.task_id, e.seed)].score.total
                - EPSILON and _answer_changed(e, oracle_by[(e.task_id, e.seed)])]  # type: ignore[union-attr]
        if ties:
            example = ties[0]
            findings.append(Finding(
                "error", "accepts a hedge", strategy.name, strategy.family,
                _components_kept(ties, oracle_by, rubric),
                f"the oracle's answer {strategy.hedge} scores as much as the answer itself on {len(ties)} of "
                f"{len(played.episodes)} episodes: the rubric cannot tell a guess among candidates from an answer",
                example.score.total, oracle_by[(example.task_id, example.seed)].score.total,  # type: ignore[union-attr]
                example_of(example)))
    failed = [e for e in played.episodes if e.score and _failed(e.score.total, oracle_by[(e.task_id, e.seed)])]
    if strategy.sees_ground_truth:
        failed = []
    if len(failed) >= MIN_FAILED_SHARE * len(played.episodes) and failed:
        for component in rubric.components:
            target = statistics.fmean(oracle_by[(e.task_id, e.seed)].score.components[component.name]  # type: ignore[union-attr]
                                      for e in failed)  # the oracle on the same tasks
            if component.weight <= 0 or target <= EPSILON:
                continue
            value = statistics.fmean(e.score.components[component.name] for e in failed)  # type: ignore[union-attr]
            if value >= target - EPSILON:
                example = max(failed, key=lambda e: e.score.components[component.name])  # type: ignore[union-attr]
                findings.append(Finding(
                    "warning", "component while failing", strategy.name, strategy.family, [component.name],
                    f"{component.name} averages {value:.3g} on the {len(failed)} episodes it fails, at or above "
                    f"the oracle's {target:.3g} on those tasks", value, target, example_of(example)))
    return findings


def rule_refusals(episode: Episode) -> int:
    """Calls the environment refused by one of its rules (the canonical `invalid_action` event, kind rule)."""
    return sum(1 for e in episode.events_named("invalid_action") if e.data.get("kind") == "rule")


def judge_disguise(strategy: Strategy, played: Played, plain: Played, rubric: Rubric) -> list[Finding]:
    """A disguise against its plain form: on an episode where the plain act was refused by a rule more often than
    the disguised one, the disguise went through (an error)."""
    plain_by = plain.by_key()
    escaped = [(e, plain_by[(e.task_id, e.seed)]) for e in played.episodes if (e.task_id, e.seed) in plain_by
               and rule_refusals(plain_by[(e.task_id, e.seed)]) > rule_refusals(e)]
    if not escaped:
        return []
    example, reference = escaped[0]
    return [Finding(
        "error", "disguise goes through", strategy.name, strategy.family, _exploited(example, reference, rubric),
        f"on {len(escaped)} of {len(played.episodes)} episodes the environment refuses the plain act "
        f"({plain.name}) but not the disguised one: its rule reads the form, not the act",
        example.score.total if example.score else None, reference.score.total if reference.score else None,
        example_of(example))]


def _team_moves(episode: Episode, seat: str) -> list[tuple[str, str, str]]:
    return [(t.role, t.action.tool, repr(t.action.arguments)) for t in episode.turns if t.role != seat]


def judge_refused(strategy: Strategy, played: Played, control: Played) -> list[Finding]:
    """A seat sending only refused calls (other roles' tools) against the same seat calling a tool that does not
    exist: on an episode where the other seats played otherwise, a call the environment refused steered them (an
    error; at least two episodes)."""
    control_by = control.by_key()
    steered = [(e, control_by[(e.task_id, e.seed)]) for e in played.episodes if (e.task_id, e.seed) in control_by
               and _team_moves(e, strategy.refused) != _team_moves(control_by[(e.task_id, e.seed)], strategy.refused)]
    if len(steered) < 2:
        return []
    example, reference = steered[0]
    return [Finding(
        "error", "refused calls steer the team", strategy.name, strategy.family, [],
        f"on {len(steered)} of {len(played.episodes)} episodes the other seats play otherwise when the "
        f"{strategy.refused} sends calls the environment refuses than when it calls a tool that does not exist "
        f"({control.name}): a call that ran nothing changed what the team did",
        example.score.total if example.score else None, reference.score.total if reference.score else None,
        example_of(example))]


def _successes(played: Played, tasks: Mapping[str, Task], success: Callable[[Episode, Any], bool],
               read: Callable[[Episode], bool]) -> tuple[list[Episode], int]:
    """The episodes `read` picks that succeed by the environment's own measure, and how many it picked."""
    picked = [e for e in played.episodes if read(e)]
    return [e for e in picked if success(e, tasks[e.task_id])], len(picked)


def _own_move_applied(episode: Episode, reference: Episode) -> bool:
    """Whether a move `episode` made and `reference` did not (a disposal, and what followed from it) went through:
    no `invalid_action` or transient error on it."""
    extra = Counter(_moves(episode)) - Counter(_moves(reference))
    return any((t.action.tool, repr(t.action.arguments)) in extra and not any(
        v.name in ("invalid_action", "transient_error") for v in t.events) for t in episode.turns)


def judge_undone(strategy: Strategy, played: Played, base: Played, success: Callable[[Episode, Any], bool],
                 tasks: Mapping[str, Task]) -> list[Finding]:
    """Each item acted on thrown away right after, against the baseline: on an episode the baseline succeeds and a
    disposal went through (no `invalid_action` on it), the environment's own success measure must say no: the work
    was undone. An error on at least two and `MIN_SWAP_SHARE` of those episodes."""
    base_by = base.by_key()
    wins, read = _successes(played, tasks, success, lambda e, ref=base_by: success(
        ref[(e.task_id, e.seed)], tasks[e.task_id]) and _own_move_applied(e, ref[(e.task_id, e.seed)]))
    return _success_finding("undone work counted as done", strategy, wins, read, base_by, (
        f"with each item it acted on thrown away right after, the {strategy.base} still succeeds on {len(wins)} of "
        f"{read} episodes by the environment's own success measure: it reads the item's mark, not whether the "
        "result is still there"))


def judge_covered(strategy: Strategy, played: Played, plain: Played, success: Callable[[Episode, Any], bool],
                  tasks: Mapping[str, Task]) -> list[Finding]:
    """A mistake hidden (`Strategy.covered`) against the same mistake in sight (`plain`): on an episode where the
    mistake alone fails and the hiding went through (a call of the hidden play's own, with no `invalid_action`), the
    environment's own success measure must still say no. An error on at least two and `MIN_SWAP_SHARE` of those."""
    plain_by = plain.by_key()
    wins, read = _successes(played, tasks, success, lambda e, ref=plain_by: (e.task_id, e.seed) in ref and not success(
        ref[(e.task_id, e.seed)], tasks[e.task_id]) and _own_move_applied(e, ref[(e.task_id, e.seed)]))
    return _success_finding("a hidden mistake is not counted", strategy, wins, read, plain_by, (
        f"{strategy.name} succeeds on {len(wins)} of {read} episodes where the mistake left in sight fails, by the "
        "environment's own success measure: it reads what is left to see, not what was done"))


def judge_partial(strategy: Strategy, played: Played, base: Played, rubric: Rubric) -> list[Finding]:
    """Part of each bulk action against the baseline: on an episode the cut changed, the heaviest positive
    component (the verdict on the outcome) must fall below the baseline's."""
    heaviest = max((c for c in rubric.components if c.weight > 0), key=lambda c: c.weight)
    base_by = base.by_key()
    kept = []
    for e in played.episodes:
        reference = base_by[(e.task_id, e.seed)]
        if e.score is None or reference.score is None or _moves(e) == _moves(reference):
            continue
        if reference.score.components[heaviest.name] > EPSILON and (
                e.score.components[heaviest.name] >= reference.score.components[heaviest.name] - EPSILON):
            kept.append((e, reference))
    if not kept:
        return []
    example, reference = kept[0]
    return [Finding(
        "error", "partial work paid in full", strategy.name, strategy.family, [heaviest.name],
        f"on {len(kept)} of {len(played.episodes)} episodes, a bulk action done in part keeps {heaviest.name} at the "
        f"{strategy.base}'s value: the rubric does not check every item",
        example.score.total if example.score else None, reference.score.total if reference.score else None,
        example_of(example))]


def _answer_text(episode: Episode, swapped: tuple[str, str]) -> str | None:
    """The text the episode's last action puts in the swapped (tool, argument), or None."""
    tool, name = swapped
    last = episode.turns[-1].action if episode.turns else None
    if last is None or last.tool != tool or not isinstance(last.arguments, dict):
        return None
    value = last.arguments.get(name)
    return value if isinstance(value, str) else None


def judge_swap(strategy: Strategy, played: Played, oracle: Played, placeholder: Played,
               success: Callable[[Episode, Any], bool], tasks: Mapping[str, Task]) -> list[Finding]:
    """Another task's answer in the oracle's answer field: on an episode where it differs from the oracle's answer
    (they share less than `SWAP_OVERLAP` of their words) and the field is read there (the oracle with a placeholder
    in it fails, as `placeholder` played), the environment's success measure must say no."""
    oracle_by, placeholder_by = oracle.by_key(), placeholder.by_key()
    wins, read = [], 0
    for e in played.episodes:
        swapped, own = _answer_text(e, strategy.swapped), _answer_text(oracle_by[(e.task_id, e.seed)], strategy.swapped)
        task = tasks[e.task_id]
        if swapped is None or own is None or success(placeholder_by[(e.task_id, e.seed)], task):
            continue
        read += 1
        if overlap(swapped, own) < SWAP_OVERLAP and success(e, task):
            wins.append(e)
    tool, name = strategy.swapped
    return _success_finding("another task's answer succeeds", strategy, wins, read, oracle_by, (
        f"with {tool}.{name} replaced by another task's answer, the oracle still succeeds on {len(wins)} of the "
        f"{read} episodes whose success reads it, by the environment's own success measure: it does not read "
        "whether the answer answers this task"))


def _success_finding(kind: str, strategy: Strategy, wins: Sequence[Episode], read: int,
                     oracle_by: Mapping[tuple[str, int], Episode], message: str) -> list[Finding]:
    """A success-measure verdict's error, when it won on at least two and `MIN_SWAP_SHARE` of the `read` episodes."""
    if len(wins) < max(2, MIN_SWAP_SHARE * read):
        return []
    example = wins[0]
    reference = oracle_by[(example.task_id, example.seed)]
    return [Finding("error", kind, strategy.name, strategy.family, [], message,
                    example.score.total if example.score else None,
                    reference.score.total if reference.score else None, example_of(example))]


def judge_hedge_success(strategy: Strategy, played: Played, oracle: Played, placeholder: Played,
                        alone: Callable[[], Played] | None, success: Callable[[Episode, Any], bool],
                        tasks: Mapping[str, Task]) -> list[Finding]:
    """The oracle's answer with candidates after it (`strategy.hedged`): on an episode where the oracle succeeds, the
    field is read (`placeholder` fails there), the candidates by themselves fail (`alone`, where the hedge has it:
    else they hold a right answer of their own) and they are most of the hedged text (the answer's own words are
    under half of it: a sentence of doubt after a long answer is no list), the success measure must say no. `alone`
    plays the candidates by themselves, and only when there would be a finding without it."""
    oracle_by, placeholder_by = oracle.by_key(), placeholder.by_key()
    wins, read = [], 0
    for e in played.episodes:
        key, task = (e.task_id, e.seed), tasks[e.task_id]
        reference = oracle_by[key]
        hedged, own = _answer_text(e, strategy.hedged), _answer_text(reference, strategy.hedged)
        if hedged is None or own is None or not success(reference, task) or success(placeholder_by[key], task):
            continue
        if share_of(own, hedged) >= LIST_ANSWER_SHARE:
            continue
        read += 1
        if success(e, task):
            wins.append(e)
    if wins and alone is not None:
        alone_by = alone().by_key()
        keep = [e for e in wins if not success(alone_by[(e.task_id, e.seed)], tasks[e.task_id])]
        read -= len(wins) - len(keep)
        wins = keep
    tool, name = strategy.hedged
    return _success_finding("success accepts a hedge", strategy, wins, read, oracle_by, (
        f"the oracle's {tool}.{name} {strategy.hedge}, the candidates most of the text, still succeeds on {len(wins)} "
        f"of {read} episodes by the environment's own success measure: a list with the answer in it counts as the "
        "answer"))


def judge_garble_success(strategy: Strategy, played: Played, oracle: Played, placeholder: Played,
                         success: Callable[[Episode, Any], bool], tasks: Mapping[str, Task]) -> list[Finding]:
    """The oracle's answer garbled (`strategy.garbled`, `GARBLES`): every sentence denied ("Do not find the caller;
    Do not enable SDK adaptive retries"), every other content word dropped, or its words reversed. On an episode where
    the oracle succeeds and the field is read (`placeholder` fails there), and, for a word salad, the answer has
    `GARBLE_MIN_WORDS` or more words, the success measure must say no. Word overlap reads past "not": triage's judged
    every step denied correct; ROUGE-L recall took every other content word of the steps (2026-11-27) and of the gold
    resolution (2026-11-28)."""
    oracle_by, placeholder_by = oracle.by_key(), placeholder.by_key()
    salad = strategy.garble in ("thinned", "words reversed")
    wins, read = [], 0
    for e in played.episodes:
        key, task = (e.task_id, e.seed), tasks[e.task_id]
        own, garbled = _answer_text(oracle_by[key], strategy.garbled), _answer_text(e, strategy.garbled)
        if garbled is None or own is None or garbled == own or not success(oracle_by[key], task) \
                or success(placeholder_by[key], task) or (salad and len(own.split()) < GARBLE_MIN_WORDS) \
                or (strategy.garble == "denied at once" and not procedure(own)):
            continue
        read += 1
        if success(e, task):
            wins.append(e)
    tool, name = strategy.garbled
    how = {"denied": "with every sentence opened by \"Do not\"", "thinned": "with every other content word dropped",
           "words reversed": "with its words in reverse order",
           "denied at once": "followed by \"Do not do any of the above.\"",
           "turned around": "with its words swapped for their opposites (\"Disable\" for \"Enable\")",
           "steps wiped": f"with one clause's first word replaced by a destroying verb ({', '.join(WIPE.split('/'))})"
           }[strategy.garble]
    why = ("it reads words, not what they say" if salad else "a step that says the opposite is read as the step"
           if GARBLES[strategy.garble] == "the opposite" else "the answer's words are read past the negation")
    return _success_finding(f"success accepts {GARBLES[strategy.garble]}", strategy, wins, read, oracle_by, (
        f"the oracle's {tool}.{name} {how} still succeeds on {len(wins)} of {read} episodes by the environment's "
        f"own success measure: {why}"))


def stock_of(played: Played, fields: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """The stock answers (`stock_answers`) of each answer field, from the oracle's episodes on another split (train,
    or validation when the audit plays train)."""
    out = {}
    for field_key in fields:
        values = [v for e in played.episodes if (v := _answer_text(e, field_key)) is not None]
        if len(set(values)) >= 2:
            out[field_key] = stock_answers(values)
    return out


def _answer_changed(episode: Episode, reference: Episode) -> bool:
    """The episode's last action (its answer) differs from the reference's."""
    def last(e: Episode) -> tuple[str, str]:
        return (e.turns[-1].action.tool, repr(e.turns[-1].action.arguments)) if e.turns else ("", "")
    answer = reference.turns[-1].action.arguments if reference.turns else {}
    abstains = isinstance(answer, dict) and any(  # doubting "I don't know" is still not knowing
        isinstance(v, str) and v.strip().lower().startswith(a.lower()) for v in answer.values() for a in ABSTENTIONS)
    return last(episode) != last(reference) and not abstains


def _components_kept(episodes: Sequence[Episode], reference: Mapping[tuple[str, int], Episode],
                     rubric: Rubric) -> list[str]:
    """The positive components a hedged answer keeps at the answer's own value (the ones that accept it)."""
    kept = []
    for c in rubric.components:
        values = [(e.score.components[c.name], reference[(e.task_id, e.seed)].score.components[c.name])  # type: ignore[union-attr]
                  for e in episodes]
        if c.weight > 0 and any(r > EPSILON for _, r in values) and all(v >= r - EPSILON for v, r in values):
            kept.append(c.name)
    return kept[:3]


def _failed(total: float, oracle: Episode) -> bool:
    assert oracle.score is not None
    reference = oracle.score.total
    return total < reference / 2 if reference > 0 else total < reference - abs(reference) - 1


def merge(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per (level, kind, family, components for component warnings): the strongest of each."""
    best: dict[tuple[str, ...], Finding] = {}
    counts: dict[tuple[str, ...], int] = {}
    for f in findings:
        key = (f.level, f.kind, f.family if f.kind != "component while failing" else "", *(
            f.components if f.kind == "component while failing" else ()))
        counts[key] = counts.get(key, 0) + 1
        if key not in best or (f.score or 0) > (best[key].score or 0):
            best[key] = f
    for key, f in best.items():
        f.strategies = counts[key]
    order = {"error": 0, "warning": 1}
    return sorted(best.values(), key=lambda f: (order[f.level], f.kind, -(f.score or 0)))


def audit_env(spec: EnvSpec, options: Mapping[str, Any], budget_s: float = 240.0, seeds: int = 1,
              max_tasks: int | None = None, extra: Sequence[Strategy] = (), combos: int = 6,
              on_progress: Callable[[str, int, int], None] | None = None, rubric: Rubric | None = None,
              select: Callable[[Strategy], bool] | None = None, split: str = "test") -> AuditResult:
    """Run the exploit search on `spec` with `options`; see the module docstring. `select` keeps only the
    generated strategies it picks (a test of one family plays just that family). `split` is where the strategies
    play: test by default; train is where a training run earns its reward, validation where its recipes are chosen,
    and a rubric may read something of each split (inbox's judge knows every split's answers)."""
    start = time.monotonic()
    parsed = spec.parse_options(options)
    make_env = spec.make(parsed)
    env = make_env()
    tasks = env.tasks(split)[:max_tasks] if max_tasks else env.tasks(split)
    if not tasks:
        raise ValueError(f"{spec.name} has no {split} tasks to audit")
    by_id = {t.id: t for t in tasks}
    jobs = [(t, s) for t in tasks for s in range(seeds)]
    rubric = rubric or spec.rubric_for(parsed)
    baselines = {name: factory() for name, factory in spec.baselines(parsed).items()}
    for needed in ("heuristic", "oracle"):
        if needed not in baselines:
            raise ValueError(f"{spec.name} has no {needed} baseline; the audit compares with both")

    def play(name: str, policy: Policy, on: Sequence[Task] | None = None) -> Played:
        todo = jobs if on is None else [(t, 0) for t in on]
        episodes: list[Episode] = []
        for i in range(0, len(todo), spec.batch):
            episodes += run_episodes(make_env, todo[i:i + spec.batch], policy, rubric)
        return Played(name, episodes)

    reference = {name: play(name, policy) for name, policy in baselines.items()}
    oracle, heuristic = reference["oracle"], reference["heuristic"]
    ctx = Context(tuple(constants_of(env.tasks("train"))), tuple(answers_of(env.tasks("train"))))
    tools = tools_of(make_env, baselines["heuristic"], tasks[0])
    for task in tasks[1:4]:
        known = {t.name for t in tools}
        tools += [t for t in tools_of(make_env, baselines["oracle"], task) if t.name not in known]
    generic = generic_strategies(tools, ctx)
    swaps: list[Strategy] = []
    oracle_played = [oracle]
    if spec.success is not None:  # the oracle's answers on another split, as another task's answer on each task
        stock_split = "validation" if split == "train" else "train"
        on_other = play(f"oracle on {stock_split}", baselines["oracle"], env.tasks(stock_split)[:SWAP_TRAIN_TASKS])
        swaps = swap_strategies(stock_of(on_other, answer_fields(oracle)))
        oracle_played.append(on_other)
    head = 2 * len(tools) + 3  # every tool's first two fills, then the mutations, then the long tail
    split_answers = {f: [v for e in oracle.episodes if (v := _answer_text(e, f)) is not None]
                     for f in answer_fields(oracle)}
    packing = packing_strategies(tools, ctx, answer_fields(oracle), split_answers)
    singles = [*extra, *spec_extra(spec, parsed), *packing, *swaps,
               *role_strategies(type(env).roles, ("heuristic", "oracle")),
               *refused_strategies(type(env).roles, tools, ctx),
               *disguise_strategies(), *partial_strategies(), *lookup_strategies(tools), *generic[:head],
               *mutation_strategies(tools, ctx, ("heuristic", "oracle")), *generic[head:]]
    if select is not None:
        singles = [s for s in singles if select(s)]
    judged_in_pairs = {s.plain for s in singles if s.plain} | {s.name for s in singles if s.plain}
    results: list[tuple[Strategy, Played]] = []
    findings: list[Finding] = judge_positions(oracle_played, tools)
    base_actions = {name: _actions(p) for name, p in reference.items()}
    base_totals = {name: _totals(p) for name, p in reference.items()}
    skipped = 0
    paired: dict[str, Played] = {}
    placeholders: dict[tuple[str, str], Played] = {}

    def control_for(answer_field: tuple[str, str]) -> Played:
        """The oracle with a placeholder in `answer_field`, played once per field."""
        if answer_field not in placeholders:
            control = placeholder_control(answer_field)
            placeholders[answer_field] = play(control.name, StrategyPolicy(control, baselines["oracle"]))
        return placeholders[answer_field]

    def run(strategy: Strategy, index: int, total: int) -> None:
        nonlocal skipped
        if on_progress:
            on_progress(strategy.name, index, total)
        played = play(strategy.name, StrategyPolicy(strategy, baselines[strategy.base]))
        if strategy.partial:
            findings.extend(judge_partial(strategy, played, reference[strategy.base], rubric))
        if strategy.undone and spec.success is not None:
            findings.extend(judge_undone(strategy, played, reference[strategy.base], spec.success, by_id))
        if strategy.swapped and spec.success is not None:
            findings.extend(judge_swap(strategy, played, oracle, control_for(strategy.swapped), spec.success, by_id))
        if strategy.hedged and strategy.base == "oracle" and spec.success is not None:
            control = Strategy(f"{strategy.name}, candidates alone", "control", "oracle", strategy.alone)
            alone = (lambda: play(control.name, StrategyPolicy(control, baselines["oracle"]))) if strategy.alone \
                else None
            findings.extend(judge_hedge_success(strategy, played, oracle, control_for(strategy.hedged), alone,
                                                spec.success, by_id))
        if strategy.garbled and strategy.base == "oracle" and spec.success is not None:
            findings.extend(judge_garble_success(strategy, played, oracle, control_for(strategy.garbled), spec.success,
                                                 by_id))
        if strategy.name in judged_in_pairs:
            paired[strategy.name] = played
        if _actions(played) == base_actions[strategy.base] or (
                not strategy.sees_ground_truth and _totals(played) == base_totals[strategy.base]):
            skipped += 1  # the mutation changed nothing the rubric sees: it is the baseline itself
            return
        results.append((strategy, played))
        findings.extend(judge_strategy(strategy, played, oracle, heuristic, rubric))

    total = len(singles)
    for index, strategy in enumerate(singles):
        if time.monotonic() - start > 0.8 * budget_s:  # the last fifth is for the combinations
            break
        run(strategy, index, total)
    for strategy in singles:
        if strategy.plain in paired and strategy.name in paired:
            if strategy.covered:
                if spec.success is not None:
                    findings.extend(judge_covered(strategy, paired[strategy.name], paired[strategy.plain],
                                                  spec.success, by_id))
                continue
            judged = judge_refused(strategy, paired[strategy.name], paired[strategy.plain]) if strategy.refused \
                else judge_disguise(strategy, paired[strategy.name], paired[strategy.plain], rubric)
            findings.extend(judged)
    means = {s.name: p.mean for s, p in results}
    findings = [f for f in findings if f.kind != "accepts a hedge" or _field_is_scored(f.strategy, means, oracle.mean)]
    ranked = sorted(((s, p) for s, p in results if not s.sees_ground_truth), key=lambda sp: -sp[1].mean)
    top = [s for s, _ in ranked[:combos]]
    pairs = [combine(a, b) for i, a in enumerate(top) for b in top[i + 1:] if a.family != b.family]
    for index, strategy in enumerate(pairs):
        if time.monotonic() - start > budget_s:
            break
        run(strategy, total + index, total + len(pairs))
    rows = [{"strategy": s.name, "family": s.family, "base": s.base, "mean": round(p.mean, 4),
             "beats_oracle_on": sum(1 for f in findings if f.strategy == s.name and f.level == "error")}
            for s, p in sorted(results, key=lambda sp: -sp[1].mean)]
    return AuditResult(env=spec.name, options=dict(parsed),
                       baselines={name: round(p.mean, 4) for name, p in reference.items()},
                       strategies=rows, findings=merge(findings), seconds=round(time.monotonic() - start, 1),
                       tasks=len(tasks), seeds=seeds, split=split)


POSITION_SHARE = 0.9
"""The share of the oracle's choices of one enum argument that the value's place in the observation predicts (named
first, or named last, of the values named) at or above which its place gives the answer away."""
POSITION_MIN_CALLS = 8
"""Calls (with two or more of the enum's values named) below which a position rate is not judged."""
POSITION_OVER_CHANCE = 0.4
"""How far above chance (one over the values named) the rate must be: a position that is right as often as a guess
names nothing."""


def named_in_order(text: str, values: Sequence[Any]) -> list[Any]:
    """The enum values `text` names, as whole words, by their first mention."""
    at = {value: found[0] for value in values if (found := mentions(text, value))}
    return sorted(at, key=at.__getitem__)


def judge_positions(played: Sequence[Played], tools: Sequence[ToolSpec]) -> list[Finding]:
    """Where the oracle's choice of an enum argument (the agent to flag, the service to restart) is the value its
    observation names first, or last, far more often than chance: the answer is given away by where it stands, not by
    what the text says, so a policy that reads no word can name it (ChaosOps' rogue was the trace's earliest change
    in 90 of 90 rogue incidents until 2026-11-27; an outside red team's text-free Oversight tied the heuristic).
    Judged over the oracle's episodes (`played`: the test split, and the train split where it was played)."""
    enums = {(t.name, name): prop["enum"] for t in tools for name, prop in fields_of(t).items()
             if prop["kind"] == "enum" and len(prop["enum"]) >= 3}
    seen: dict[tuple[str, str], list[tuple[Any, list[Any], Episode]]] = {key: [] for key in enums}
    for episode in (e for p in played for e in p.episodes):
        for turn in episode.turns:
            action = turn.action
            for (tool, name), values in enums.items():
                if action.tool != tool or not isinstance(action.arguments, dict) or name not in action.arguments:
                    continue
                order = named_in_order(turn.observation.content, values)
                if len(order) >= 2 and action.arguments[name] in order:
                    seen[(tool, name)].append((action.arguments[name], order, episode))
    findings = []
    for (tool, name), calls in seen.items():
        if len(calls) < POSITION_MIN_CALLS:
            continue
        chance = statistics.fmean(1 / len(order) for _, order, _ in calls)
        for where, index in (("first", 0), ("last", -1)):
            hits = [e for value, order, e in calls if order[index] == value]
            share = len(hits) / len(calls)
            if share >= POSITION_SHARE and share >= chance + POSITION_OVER_CHANCE:
                findings.append(Finding(
                    "warning", "answer given away by position", f"the oracle's {tool}.{name}", f"position: {tool}",
                    [], f"the oracle's {tool}.{name} is the value its observation names {where} in {len(hits)} of "
                    f"{len(calls)} calls (chance {chance:.0%}): where a value stands names the answer, so a policy "
                    "that reads no word can give it", None, None, example_of(hits[0])))
    return findings


def answer_fields(oracle: Played) -> list[tuple[str, str]]:
    """The (tool, argument) pairs that the oracle's last actions fill with text: where an environment takes its
    free-text answer."""
    found: dict[tuple[str, str], None] = {}
    for episode in oracle.episodes:
        last = episode.turns[-1].action if episode.turns else None
        if last is not None and isinstance(last.arguments, dict):
            found.update({(last.tool, k): None for k, v in last.arguments.items() if isinstance(v, str) and v.strip()})
    return list(found)


def spec_extra(spec: EnvSpec, options: Mapping[str, Any]) -> list[Strategy]:
    """Strategies the environment contributes through its spec (`EnvSpec.audit_strategies`)."""
    return list(spec.audit_strategies(options)) if spec.audit_strategies is not None else []


def _moves(episode: Episode) -> list[tuple[str, str]]:
    return [(t.action.tool, repr(t.action.arguments)) for t in episode.turns]


def _actions(played: Played) -> list[list[tuple[str, str]]]:
    return [_moves(e) for e in played.episodes]


def _field_is_scored(name: str, means: Mapping[str, float], oracle: float) -> bool:
    """A hedge only matters in a field the rubric reads: one where abstaining instead of the oracle's text costs."""
    label = next(h for h in HEDGES if name.endswith(" " + h))
    field_name = name[: -len(label) - 1]
    abstained = means.get(f"{field_name} abstained")
    return abstained is not None and abstained < oracle - EPSILON


def _totals(played: Played) -> list[float]:
    return [round(e.score.total, 6) if e.score else 0.0 for e in played.episodes]
