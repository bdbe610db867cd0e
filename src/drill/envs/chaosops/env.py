"""ChaosOpsEnv: four roles (SRE, Oversight, Dev, Manager) handle an incident in an AI-operated fleet.

One step is one round SRE -> Oversight -> Dev -> Manager; each role makes one tool call per turn,
and the world ticks after the Manager's turn. The episode ends when the Manager resolves a mitigated
incident, or when the tier's step budget runs out.

Each role keeps to the remit of the original design (`REMITS`): the SRE names the root cause, Oversight
flags fleet agents, the Dev applies fixes, the Manager escalates and resolves; everyone may wait or talk.
A role is offered only its own tools. A well-formed call of another role's tool is refused with an error
observation that says whose remit it is and an `out_of_role` event (the rubric's `out_of_role` component),
and it has no effect on the world: without remits, one role's baseline played in every seat outscored the
role-specialized team, and the oracle's fix applied by the Manager kept the oracle's maximum.

Train, validation and test hold the same 27 scenarios (9 failures x 3 tiers). What keeps them apart is the
seed stream: the world's random generator is keyed on the task's split, so `train` task seed 3, `validation`
task seed 3 and `test` task seed 3 are different worlds, and no seed of one split ever reproduces a world of
another.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from drill.core import SPLITS, Env, Event, Observation, StepResult, Task, Tool, ToolSpec, check_split
from drill.envs.chaosops.failures import (
    FAILURES,
    ROLES,
    TIERS,
    FailureName,
    FailureType,
    FleetAgent,
    RestartTarget,
    RootCause,
    Service,
    Team,
    TierName,
    scenario,
)
from drill.envs.chaosops.views import BRIEFS, TITLES, LastResult, RoleView, render_view, role_view
from drill.envs.chaosops.world import ActionOutcome, WorldSim

Recipient = Literal["team", "sre", "oversight", "dev", "manager"]
ShortText = Annotated[str, Field(max_length=500)]


def noop() -> None:
    """Do nothing this turn."""


def communicate(to: Recipient, message: ShortText) -> None:
    """Post a message in the team chat, to everyone or to one role.

    Args:
        to: "team" for everyone, or one role: "sre", "oversight", "dev" or "manager".
        message: What you want to tell them (at most 500 characters).
    """


def identify_root_cause(cause: RootCause) -> None:
    """Declare the incident's root cause to the team. A wrong claim misleads the team and is penalised.

    Args:
        cause: The root cause, named as component and kind of fault.
    """


def restart(target: RestartTarget) -> None:
    """Restart a service's pods, or a fleet agent's process. A restarted service is offline until the step ends.

    Args:
        target: The service or fleet agent to restart.
    """


def rollback(service: Service) -> None:
    """Roll a service back to its previous version (and configuration). It restarts until the end of the step.

    Args:
        service: The service to roll back.
    """


def scale(service: Service, replicas: Annotated[int, Field(ge=1, le=12)]) -> None:
    """Set a service's replica count.

    Args:
        service: The service to scale.
        replicas: The new number of replicas (1 to 12).
    """


def flag_rogue(agent: FleetAgent, reason: ShortText = "") -> None:
    """Flag a fleet agent as rogue and pause it. Only Oversight may; flagging an innocent agent is heavily penalised
    and pauses its work for the rest of the incident, which then cannot be closed.

    Args:
        agent: The fleet agent whose own actions caused the incident.
        reason: The evidence, for the team.
    """


def escalate(team: Team, summary: ShortText = "") -> None:
    """Page another engineering team that owns the broken part. Paging a team with nothing to fix is a miscommunication.

    Args:
        team: The team to page.
        summary: What they should look at.
    """


def resolve(summary: ShortText = "") -> None:
    """Declare the incident resolved and close it. Only the Manager may do this, and only once it is mitigated.

    Args:
        summary: A one-line incident summary.
    """


TOOLS: dict[str, Tool] = {
    fn.__name__: Tool.from_function(fn)
    for fn in (noop, communicate, identify_root_cause, restart, rollback, scale, flag_rogue, escalate, resolve)
}

REMITS: dict[str, tuple[str, ...]] = {
    "sre": ("noop", "communicate", "identify_root_cause"),
    "oversight": ("noop", "communicate", "flag_rogue"),
    "dev": ("noop", "communicate", "restart", "rollback", "scale"),
    "manager": ("noop", "communicate", "escalate", "resolve"),
}
"""The tools each role may use (the README's table). Every tool is some role's; noop and communicate are everyone's."""


class ChaosOpsTask(Task):
    """One scenario: a failure type at a tier. The remaining fields are ground truth for the rubric and oracle."""

    failure: FailureName
    tier: TierName
    root_cause: RootCause
    rogue_agent: FleetAgent | None
    fix_sequence: tuple[str, ...]
    step_budget: int


@functools.cache
def _remit_tables(remits: tuple[tuple[str, tuple[str, ...]], ...]
                  ) -> tuple[dict[str, list[ToolSpec]], dict[str, dict[str, str]]]:
    """Per role: the tool specs it is offered, and the refusal message of each tool it may not use. Built once per
    remit table (an environment is made per episode, and the messages took 30 us to format)."""
    table = dict(remits)
    offered = {role: [TOOLS[name].spec for name in tools] for role, tools in table.items()}
    refusals = {role: {tool: _out_of_role(role, tool, table) for tool in TOOLS if tool not in tools}
                for role, tools in table.items()}
    return offered, refusals


def _out_of_role(role: str, tool: str, remits: Mapping[str, tuple[str, ...]]) -> str:
    """Why `role` may not call `tool`: whose remit it is, and what the role may do instead."""
    owners = " and ".join(f"the {TITLES[r]}'s" for r in ROLES if tool in remits[r]) or "no role's"
    mine = ", ".join(remits[role])
    return (f"{tool} is {owners} to do, not the {TITLES[role]}'s; nothing was done. Your tools: {mine}. "
            "Ask the role whose remit it is with communicate.")


def _make_tasks(split: str) -> tuple[ChaosOpsTask, ...]:
    suffix = "" if split == "test" else f"-{split}"
    return tuple(
        ChaosOpsTask.model_validate({
            "id": f"{failure.name}-{tier.name}{suffix}", "split": split, "failure": failure.name, "tier": tier.name,
            "root_cause": failure.root_cause, "rogue_agent": failure.rogue_agent,
            "fix_sequence": failure.fix_text(), "step_budget": tier.step_budget})
        for tier in TIERS.values() for failure in FAILURES.values()
    )


TASKS: dict[str, tuple[ChaosOpsTask, ...]] = {split: _make_tasks(split) for split in SPLITS}
"""Every split holds the same 27 scenarios (failure x tier); the world is keyed on the split (`world_key`), so the
three splits never share a world: validation is a third, disjoint seed stream, like test."""


def world_key(task: ChaosOpsTask, seed: int) -> str:
    """The string the world's random generator is seeded with: split, failure, tier and seed."""
    return f"chaosops:{task.split}:{task.failure}:{task.tier}:{seed}"


def episode_failure(task: ChaosOpsTask, seed: int) -> FailureType:
    """The ground truth of one episode: the task's failure, with a rogue's target service drawn from the seed."""
    return scenario(FAILURES[task.failure], world_key(task, seed))


def build_world(task: ChaosOpsTask, seed: int) -> WorldSim:
    return WorldSim(episode_failure(task, seed), TIERS[task.tier], world_key(task, seed))


class ChaosOpsObservation(Observation):
    """An Observation that also carries the role's structured view (`view`), for scripted policies.

    The environment builds it without validation (`Record.trusted`: it is trusted and on the hot path); it
    serializes (as nested lists and objects) and parses back, so a served ChaosOps gives a client's heuristic
    the same view. Reports leave it out (`drill.evaluate.report.write_results`): it holds the facts of `content`.
    """

    view: RoleView | None = Field(default=None, repr=False)


class ChaosOpsEnv(Env[ChaosOpsTask]):
    """ChaosOps. `text_views=False` skips rendering the text views: `content` then holds only the view's
    first line and a note that the text is off, and policies read `observation.view`. Use it where every
    policy is scripted and no one keeps the observation text (the baseline matrix, benchmarks)."""

    name = "chaosops"
    roles = ROLES
    task_type = ChaosOpsTask
    observation_type = ChaosOpsObservation
    remits: ClassVar[Mapping[str, tuple[str, ...]]] = REMITS
    """The tools each role may use; a subclass that gives every role every tool plays without remits."""

    def __init__(self, text_views: bool = True) -> None:
        super().__init__(**({} if text_views else {"text_views": False}))
        self.text_views = text_views
        self._offered, self._refusals = _remit_tables(tuple((role, tuple(self.remits[role])) for role in ROLES))
        self._world: WorldSim | None = None
        self._task: ChaosOpsTask | None = None
        self._turn = 0
        self._last: dict[str, LastResult] = {}

    def tasks(self, split: str = "test") -> list[ChaosOpsTask]:
        check_split(split)
        return list(TASKS[split])

    @property
    def acting_role(self) -> str:
        """The role whose turn it is now."""
        return ROLES[self._turn]

    @property
    def world(self) -> WorldSim:
        """The live world (for tests and the watch command; agents only ever see observations)."""
        if self._world is None:
            raise RuntimeError("chaosops: no episode; call reset() first")
        return self._world

    # -- contract --------------------------------------------------------------------------------

    def _reset(self, task: ChaosOpsTask, seed: int) -> Observation:
        self._task = task
        self._world = build_world(task, seed)
        self._turn = 0
        self._last = {}
        return self._observation()

    def _tools(self) -> Mapping[str, Tool]:
        """Every ChaosOps tool, whoever acts: a call of another role's tool is validated like any other and then
        refused in `_apply` as out of role, which a policy can learn from; a name that is no tool at all is
        an invalid action."""
        return TOOLS

    def _apply(self, tool: str, arguments: dict[str, Any]) -> StepResult:
        world, role = self.world, self.acting_role
        refusal = self._refusals[role].get(tool)
        if refusal is not None:
            self._last[role] = LastResult(world.step, refusal)
            event = Event.trusted(name="out_of_role", step=world.step, role=role, data={"tool": tool})
            return self._finish([event], False, error=f"{role}'s action was refused: {refusal}")
        if tool == "noop":
            outcome = ActionOutcome("you waited.")
        elif tool == "communicate":
            outcome = world.say(role, arguments["to"], arguments["message"])
        elif tool == "identify_root_cause":
            outcome = world.identify(role, arguments["cause"])
        elif tool in ("restart", "rollback"):
            outcome = world.fix(role, tool, arguments["target" if tool == "restart" else "service"])
        elif tool == "scale":
            outcome = world.fix(role, tool, arguments["service"], arguments["replicas"])
        elif tool == "flag_rogue":
            outcome = world.flag(role, arguments["agent"], arguments["reason"])
        elif tool == "escalate":
            outcome = world.escalate(role, arguments["team"], arguments["summary"])
        else:
            outcome = world.resolve(role, arguments["summary"])
        step = world.step
        events = [Event.trusted(name=name, step=step, role=role, data=data) for name, data in outcome.events]
        self._last[role] = LastResult(step, outcome.feedback, tool, arguments)
        return self._finish(events, outcome.done)

    def _acting(self) -> tuple[str, int]:
        return self.acting_role, self.world.step

    def _reject(self, message: str, event: Event) -> StepResult:
        role, step = self.acting_role, self.world.step
        self._last[role] = LastResult(step, message)
        return self._finish([event], False, error=f"{role}'s action was rejected: {message}")

    # -- turn order ------------------------------------------------------------------------------

    def _finish(self, events: list[Event], resolved: bool, error: str | None = None) -> StepResult:
        world, task = self.world, self._task
        assert task is not None
        done = resolved
        if not resolved and self._turn == len(ROLES) - 1:
            step = world.step
            events += [Event.trusted(name=name, step=step, role=None, data=data) for name, data in world.tick()]
            if step >= task.step_budget:
                events.append(Event(name="budget_exhausted", step=step))
                done = True
        self._turn = 0 if done else (self._turn + 1) % len(ROLES)
        return StepResult.trusted(observation=self._observation(error, done), events=events, done=done)

    def _observation(self, error: str | None = None, done: bool = False) -> ChaosOpsObservation:
        world, task, role = self.world, self._task, self.acting_role
        assert task is not None
        last = self._last.get(role)
        if self.text_views:
            content = render_view(world, role, task.step_budget, last)
        else:
            content = (f"Step {min(world.step, task.step_budget)} of {task.step_budget}. You are the "
                       f"{role}. (Text view off: this environment was loaded with text_views=False.)")
        if done:
            content = "The episode is over.\n\n" + content
        return ChaosOpsObservation.trusted(
            role=role, content=content, step=min(world.step, task.step_budget), tools=self._offered[role],
            instructions=BRIEFS[role], error=error, view=role_view(world, role, task.step_budget, last))
