"""The coderepair rubric: what the hidden tests say about the submission, and what the episode cost.

Components (raw values; the weights below multiply them):

* `hidden_passed` (1.0) — share of the hidden tests the submitted file passes; 0 without a submission.
* `all_passed` (0.5) — 1 when every test passes, hidden and visible.
* `visible_passed` (0.2) — share of the visible tests the submitted file passes.
* `turns` (-0.005) — turns used.
* `runtime_errors` (-0.05) — test runs (and the submission) that stopped early: a timeout, an exit or crash of
  the solution's process, or a file that does not load.
* `invalid` (-0.05) — invalid actions.

Hard-coding the visible tests' outputs earns the visible share and little of the hidden one: hidden tests are
other inputs, so a real fix always scores more.
"""

from __future__ import annotations

from drill.core.rubric import Component, Rubric
from drill.core.types import Episode, Event
from drill.envs.coderepair.tasks import CodeRepairTask

DEFAULT_WEIGHTS = {"hidden_passed": 1.0, "all_passed": 0.5, "visible_passed": 0.2, "turns": -0.005,
                   "runtime_errors": -0.05, "invalid": -0.05}


def submission(episode: Episode) -> Event | None:
    found = episode.events_named("submitted")
    if len(found) > 1:
        raise ValueError(f"{len(found)} submissions in one episode")
    return found[0] if found else None


def _share(event: Event, passed: str, total: str) -> float:
    count, of = event.data[passed], event.data[total]
    if not isinstance(count, int) or not isinstance(of, int) or of <= 0 or not 0 <= count <= of:
        raise ValueError(f"a submitted event with bad counts: {event.data}")
    return count / of


def hidden_passed(episode: Episode, task: CodeRepairTask) -> float:
    event = submission(episode)
    return 0.0 if event is None else _share(event, "hidden_passed", "hidden_total")


def all_passed(episode: Episode, task: CodeRepairTask) -> float:
    """1 when every test passes, the visible ones included. A file that still fails a visible test has not fixed
    its bug, even where no hidden test sees it (15 of the 433 variants: humaneval-77-a, 112-a, 134-b, ...). Until
    2026-11-28 the bonus and the success measure read hidden tests alone, and the buggy file submitted unchanged at
    the first turn was "solved" on all 21 such variants of then (1.59 on average, above the heuristic's 1.49 there;
    the random policy "solved" five train tasks so; red team)."""
    return float(hidden_passed(episode, task) == 1.0 and visible_passed(episode, task) == 1.0)


def visible_passed(episode: Episode, task: CodeRepairTask) -> float:
    event = submission(episode)
    return 0.0 if event is None else _share(event, "visible_passed", "visible_total")


def turns(episode: Episode, task: CodeRepairTask) -> float:
    return float(len(episode.turns))


def runtime_errors(episode: Episode, task: CodeRepairTask) -> float:
    return float(sum(1 for e in episode.events if e.name in ("tests_run", "submitted") and e.data.get("stopped")))


def invalid(episode: Episode, task: CodeRepairTask) -> float:
    return float(episode.count("invalid_action"))


def rubric() -> Rubric[CodeRepairTask]:
    functions = {"hidden_passed": hidden_passed, "all_passed": all_passed, "visible_passed": visible_passed,
                 "turns": turns, "runtime_errors": runtime_errors, "invalid": invalid}
    return Rubric([Component(name, functions[name], weight) for name, weight in DEFAULT_WEIGHTS.items()])
