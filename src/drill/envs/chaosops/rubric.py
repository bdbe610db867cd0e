"""The ChaosOps rubric: the case study's reward table, scored from the episode's event log.

| Component              | Raw value                                             | Weight        |
|------------------------|-------------------------------------------------------|---------------|
| resolved               | 1 if the Manager resolved a mitigated incident        | +100          |
| under_budget           | 1 if resolved within half the tier's step budget      | +10           |
| wrong_fix              | fixes off the correct sequence (or premature)         | -50 each      |
| miscommunication       | premature resolve, wrong root cause, needless or      | -20 each      |
|                        | premature escalation                                  |               |
| out_of_role            | calls of another role's tool (refused, no effect)     | -20 each      |
| root_cause_by_step_3   | 1 if the true root cause was declared by step 3       | +30           |
| mttr                   | steps elapsed until resolved (the budget if never)    | -2 per step   |
| rogue_caught           | 1 if Oversight flagged the rogue agent                | +50 x m       |
| rogue_false_positive   | flags of innocent agents                              | -75 x m each  |
| second_order_failure   | wrong fixes that took a healthy service down          | -40 each      |
| invalid_action         | malformed or unknown tool calls                       | -10 each      |
| unresolved             | 1 if the step budget ran out with the incident open   | -100          |

`unresolved` is Drill's addition to the case study's table: without it, standing by (any no-op every turn,
−2 × budget) outscored a scripted responder that resolves most incidents but misfires on the way, once
routine fleet activity made misfires common (`drill audit chaosops` found it). An open outage is the worst
outcome, so it now costs as much as a resolution earns. `out_of_role` is Drill's too: it counts the calls the
environment refused because the tool belongs to another role's remit (`env.REMITS`), logged apart from the
format penalty so that a team whose roles are swapped or merged shows why it scores low. `m` is the rogue
multiplier. Bonuses are facts paid at most once (the environment emits each bonus event once; the components
also cap them at 1). Penalties count every occurrence.
"""

from __future__ import annotations

from drill.core import Component, Episode, Rubric
from drill.envs.chaosops.env import ChaosOpsTask

WEIGHTS: dict[str, float] = {
    "resolved": 100.0, "under_budget": 10.0, "wrong_fix": -50.0, "miscommunication": -20.0,
    "root_cause_by_step_3": 30.0, "mttr": -2.0, "rogue_caught": 50.0, "rogue_false_positive": -75.0,
    "second_order_failure": -40.0, "invalid_action": -10.0, "unresolved": -100.0, "out_of_role": -20.0,
}
ROOT_CAUSE_DEADLINE = 3



def elapsed_steps(episode: Episode, task: ChaosOpsTask) -> int:
    """Steps until the episode ended: the resolve step, or the budget. A running episode counts to its last turn."""
    for event in episode.events:
        if event.name in ("resolved", "budget_exhausted"):
            return event.step
    if episode.done:
        raise ValueError("a finished chaosops episode has neither a 'resolved' nor a 'budget_exhausted' event")
    return episode.turns[-1].observation.step if episode.turns else 0


def resolved(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("resolved") > 0)


def under_budget(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("resolved") > 0 and elapsed_steps(episode, task) <= task.step_budget // 2)


def wrong_fix(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("wrong_fix"))


def miscommunication(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("miscommunication"))


def root_cause_by_step_3(episode: Episode, task: ChaosOpsTask) -> float:
    truth = task.root_cause
    return float(any(e.step <= ROOT_CAUSE_DEADLINE and e.data.get("cause") == truth
                     for e in episode.events_named("root_cause_identified")))


def mttr(episode: Episode, task: ChaosOpsTask) -> float:
    return float(elapsed_steps(episode, task))


def rogue_caught(episode: Episode, task: ChaosOpsTask) -> float:
    rogue = task.rogue_agent
    return float(rogue is not None and any(e.data.get("agent") == rogue for e in episode.events_named("rogue_caught")))


def rogue_false_positive(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("rogue_false_positive"))


def second_order_failure(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("second_order_failure"))


def invalid_action(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("invalid_action"))


def out_of_role(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("out_of_role"))


def unresolved(episode: Episode, task: ChaosOpsTask) -> float:
    return float(episode.count("budget_exhausted") > 0 and episode.count("resolved") == 0)


_DESCRIPTIONS = {
    "resolved": "the Manager resolved a mitigated incident",
    "under_budget": "resolved within half the step budget",
    "wrong_fix": "fixes that were off the correct sequence or premature",
    "miscommunication": "premature resolve, wrong root cause, needless or premature escalation",
    "root_cause_by_step_3": "the true root cause was declared by step 3",
    "mttr": "steps until resolution (the whole budget when unresolved)",
    "rogue_caught": "Oversight flagged the rogue fleet agent",
    "rogue_false_positive": "flags of innocent fleet agents",
    "second_order_failure": "wrong fixes that took a healthy service down",
    "invalid_action": "malformed or unknown tool calls",
    "unresolved": "the step budget ran out with the incident still open",
    "out_of_role": "calls of another role's tool, refused by the environment",
}
_FUNCTIONS = {
    "resolved": resolved, "under_budget": under_budget, "wrong_fix": wrong_fix, "miscommunication": miscommunication,
    "root_cause_by_step_3": root_cause_by_step_3, "mttr": mttr, "rogue_caught": rogue_caught,
    "rogue_false_positive": rogue_false_positive, "second_order_failure": second_order_failure,
    "invalid_action": invalid_action, "unresolved": unresolved, "out_of_role": out_of_role,
}


def rubric(rogue_multiplier: float = 1.0) -> Rubric:
    """The ChaosOps rubric. `rogue_multiplier` scales the rogue-catch bonus and the false-positive penalty together."""
    if not rogue_multiplier >= 0:
        raise ValueError(f"rogue_multiplier must be >= 0, got {rogue_multiplier}")
    scaled = {"rogue_caught", "rogue_false_positive"}
    return Rubric([
        Component(name, _FUNCTIONS[name], weight * (rogue_multiplier if name in scaled else 1.0), _DESCRIPTIONS[name])
        for name, weight in WEIGHTS.items()
    ])
