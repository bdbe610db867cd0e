"""What changes over a training run: the task curriculum, the reward weights, and the order tasks are drawn in.

* `Curriculum.parse("easy:200,medium:200,hard:200")`: the first 200 steps draw tasks whose curriculum
  field (ChaosOps' `tier`) is `easy`, and so on; steps past the last stage stay in it.
  `L1:100@0.7,L2:100@0.7,L3:200` advances early, too: a stage with `@RATE` ends as soon as the success rate of
  its last `SUCCESS_WINDOW` steps reaches RATE (success: an episode reaching half the oracle's total on its task
  and seed, `drill.memory.SuccessRule`), and at the latest after its steps. The stage of the next step is a
  function of the steps so far (`next_stage`), read back from metrics.jsonl on resume, so no extra state.
* `WeightSchedule.parse("rogue_multiplier=2.0->1.0")`: a reward weight annealed linearly over the run;
  `NAME=START->END@STEPS` anneals over STEPS steps then holds END; `NAME=VALUE` is constant.
* `TaskSampler`: the data position. Each stage's training tasks are drawn in a seeded shuffled order,
  reshuffled each pass; its cursor is saved in checkpoints, so a resumed run draws the same tasks next.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from drill.core.types import Task

ALL_TASKS = "all"


SUCCESS_WINDOW = 3
"""Steps whose mean success rate a `@RATE` stage compares with its rate."""


@dataclass(frozen=True)
class Stage:
    name: str
    steps: int
    advance_at: float | None = None
    """Advance once the success rate over the stage's last `SUCCESS_WINDOW` steps reaches this (None: by steps)."""


@dataclass(frozen=True)
class Curriculum:
    stages: tuple[Stage, ...]

    @classmethod
    def parse(cls, spec: str) -> Curriculum:
        """`easy:200,medium:200,hard:200`; an empty spec is one stage of all tasks."""
        if not spec.strip():
            return cls((Stage(ALL_TASKS, 1),))
        stages = []
        for part in spec.split(","):
            name, sep, rest = part.strip().partition(":")
            steps, at, rate = rest.partition("@")
            bad = not sep or not name.strip() or not steps.strip().isdigit() or int(steps) < 1
            advance_at = None
            if at and not bad:
                try:
                    advance_at = float(rate)
                except ValueError:
                    bad = True
                bad = bad or advance_at is None or not 0 < advance_at <= 1
            if bad:
                raise ValueError(f"bad curriculum stage {part.strip()!r} in {spec!r}; write NAME:STEPS or "
                                 "NAME:STEPS@RATE (RATE in (0, 1]), e.g. easy:200,medium:200,hard:200 or "
                                 "L1:100@0.7,L2:100@0.7,L3:200")
            stages.append(Stage(name.strip(), int(steps), advance_at))
        return cls(tuple(stages))

    @property
    def gated(self) -> bool:
        """Whether any stage advances on success (the trainer then measures each step's success rate)."""
        return any(stage.advance_at is not None for stage in self.stages)

    def stage_at(self, step: int) -> str:
        """The stage name for a 1-based step of a curriculum that advances by steps only."""
        if self.gated:
            raise ValueError("a curriculum with @RATE stages depends on the success so far: use next_stage")
        end = 0
        for stage in self.stages:
            end += stage.steps
            if step <= end:
                return stage.name
        return self.stages[-1].name

    def next_stage(self, history: Sequence[tuple[str, float | None]]) -> str:
        """The stage of the next step, from the (stage, success rate) of every step so far, in order."""
        index, rates = 0, []
        for stage_name, rate in history:
            stage = self.stages[index]
            if stage_name != stage.name:
                raise ValueError(f"the run's step {len(rates) + 1} of stage {stage.name!r} is logged as stage "
                                 f"{stage_name!r}; resume with the same curriculum")
            rates.append(rate)
            recent = rates[-SUCCESS_WINDOW:]
            reached = (stage.advance_at is not None and len(recent) == SUCCESS_WINDOW and None not in recent
                       and sum(recent) / SUCCESS_WINDOW >= stage.advance_at)  # type: ignore[arg-type]
            if index < len(self.stages) - 1 and (len(rates) >= stage.steps or reached):
                index, rates = index + 1, []
        return self.stages[index].name

    def pools(self, tasks: Sequence[Task], field: str) -> dict[str, list[Task]]:
        """Each stage's tasks, in their stable order. A stage that selects nothing is an error."""
        if self.stages == (Stage(ALL_TASKS, 1),):
            if not tasks:
                raise ValueError("the environment has no training tasks")
            return {ALL_TASKS: list(tasks)}
        pools = {}
        for stage in self.stages:
            missing = [t.id for t in tasks if not hasattr(t, field)]
            if missing:
                raise ValueError(f"curriculum field {field!r} is not an attribute of task {missing[0]!r}")
            pool = [t for t in tasks if str(getattr(t, field)) == stage.name]
            if not pool:
                values = sorted({str(getattr(t, field)) for t in tasks})
                raise ValueError(f"curriculum stage {stage.name!r} selects no training task; "
                                 f"{field} takes the values {', '.join(values)}")
            pools[stage.name] = pool
        return pools


_SCHEDULE = re.compile(r"^\s*([A-Za-z_][\w]*)\s*=\s*([-+0-9.eE]+)\s*(?:->\s*([-+0-9.eE]+)\s*(?:@\s*(\d+))?)?\s*$")


@dataclass(frozen=True)
class WeightSchedule:
    name: str
    start: float
    end: float
    steps: int | None = None
    """Steps to anneal over; None means the whole run."""

    @classmethod
    def parse(cls, spec: str) -> WeightSchedule:
        match = _SCHEDULE.match(spec)
        if match is None:
            raise ValueError(f"bad weight schedule {spec!r}; write NAME=VALUE, NAME=START->END or "
                             "NAME=START->END@STEPS, e.g. rogue_multiplier=2.0->1.0")
        name, start, end, steps = match.groups()
        try:
            first = float(start)
            last = float(end) if end is not None else first
        except ValueError as exc:
            raise ValueError(f"bad number in weight schedule {spec!r}: {exc}") from exc
        if steps is not None and int(steps) < 1:
            raise ValueError(f"weight schedule {spec!r}: the anneal must last at least 1 step")
        return cls(name, first, last, int(steps) if steps is not None else None)

    def value_at(self, step: int, total_steps: int) -> float:
        """The weight at a 1-based step: `start` at step 1, `end` at the last annealing step and after."""
        span = self.steps if self.steps is not None else total_steps
        if span <= 1:
            return self.end
        fraction = min(max((step - 1) / (span - 1), 0.0), 1.0)
        return self.start + (self.end - self.start) * fraction


def parse_schedules(specs: Sequence[str]) -> list[WeightSchedule]:
    schedules = [WeightSchedule.parse(s) for s in specs]
    names = [s.name for s in schedules]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"weight schedule given twice for {', '.join(duplicates)}")
    return schedules


class TaskSampler:
    """Draws training tasks stage by stage in a seeded, reshuffled-per-pass order. Its state is the data position."""

    def __init__(self, pools: dict[str, list[Task]], seed: int) -> None:
        self.pools = pools
        self.seed = seed
        self.position: dict[str, int] = {name: 0 for name in pools}

    def _order(self, stage: str, epoch: int) -> list[int]:
        order = list(range(len(self.pools[stage])))
        random.Random(f"{self.seed}:{stage}:{epoch}").shuffle(order)
        return order

    def draw(self, stage: str, count: int) -> list[Task]:
        pool = self.pools[stage]
        tasks = []
        for _ in range(count):
            drawn = self.position[stage]
            epoch, offset = divmod(drawn, len(pool))
            tasks.append(pool[self._order(stage, epoch)[offset]])
            self.position[stage] = drawn + 1
        return tasks

    def state_dict(self) -> dict[str, int]:
        return dict(self.position)

    def load_state_dict(self, state: dict[str, int]) -> None:
        unknown = set(state) - set(self.pools)
        if unknown:
            raise ValueError(f"checkpoint data position names stages {sorted(unknown)} that this run does not have; "
                             "resume with the same curriculum")
        self.position.update({k: int(v) for k, v in state.items()})
