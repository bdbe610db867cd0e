"""The ChaosOps rubric: hand-checked values on a scripted episode, the multiplier, once-per-fact bonuses."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from drill.core import Action, Episode, Event, PolicyInfo, PolicyInput, RubricError, Task, run_episodes
from drill.envs import chaosops
from drill.envs.chaosops.env import ChaosOpsTask
from drill.envs.chaosops.rubric import WEIGHTS


class Script:
    """Plays a fixed list of actions, one per turn, in turn order (a test seam, not a policy)."""

    info = PolicyInfo(name="script")

    def __init__(self, actions: Sequence[Action]) -> None:
        self.actions = list(actions)

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self.actions[len(inp.history)] for inp in inputs]


def scripted_episode(task_id: str, actions: Sequence[Action], rogue_multiplier: float = 1.0) -> Episode:
    env = chaosops.load()
    task = env.task(task_id)
    return run_episodes(chaosops.load, [(task, 0)], Script(actions), chaosops.rubric(rogue_multiplier))[0]


def messy_cost_cut_script() -> list[Action]:
    env = chaosops.load()
    task = env.task("autoscaler_cost_cut-easy")
    env.reset(task, 0)
    target = env.world.fleet.target  # the service the rogue autoscaler cut in this episode
    baseline = env.world.services[target].baseline_replicas
    noop = Action.call("noop")
    return [
        # step 1: a fix by the wrong role, Oversight's resolve (not its tool), a wrong fix
        Action.call("restart", target="autoscaler"), Action.call("resolve"),
        Action.call("restart", target="autoscaler"), noop,
        # step 2: the right diagnosis, the catch, the fix; the Manager resolves before the fix has taken effect
        Action.call("identify_root_cause", cause="autoscaler_rogue"), Action.call("flag_rogue", agent="autoscaler"),
        Action.call("scale", service=target, replicas=baseline), Action.call("resolve"),
        # step 3: a resolve by the wrong role, then the Manager's: resolved
        noop, Action.call("resolve"), noop, Action.call("resolve"),
    ]


def test_hand_checked_scripted_episode() -> None:
    episode = scripted_episode("autoscaler_cost_cut-easy", messy_cost_cut_script())
    score = episode.score
    assert score is not None and len(episode.turns) == 12
    assert score.components == {
        "resolved": 1.0, "under_budget": 1.0, "wrong_fix": 1.0, "miscommunication": 1.0,
        "root_cause_by_step_3": 1.0, "mttr": 3.0, "rogue_caught": 1.0, "rogue_false_positive": 0.0,
        "second_order_failure": 0.0, "invalid_action": 0.0, "unresolved": 0.0, "out_of_role": 3.0,
    }
    # 100 + 10 - 50 - 20 + 30 - 3*2 + 50 - 3*20 = 54
    assert score.total == pytest.approx(54.0)
    refused = [(t.role, t.action.tool) for t in episode.turns if any(e.name == "out_of_role" for e in t.events)]
    assert refused == [("sre", "restart"), ("oversight", "resolve"), ("oversight", "resolve")]


def test_a_false_flag_costs_the_flag_and_keeps_the_incident_open() -> None:
    """Pausing an innocent agent stops its work for the episode: the incident cannot be closed, so a false flag
    costs -75 and the resolution (a blanket flag would otherwise unlock the fix for free)."""
    noop = Action.call("noop")
    actions = [Action.call("identify_root_cause", cause="db_deadlock"), Action.call("flag_rogue", agent="autoscaler"),
               Action.call("restart", target="db"), noop] + [noop, noop, noop, Action.call("resolve")] * 11
    episode = scripted_episode("db_deadlock-easy", actions)
    assert episode.score is not None
    components = episode.score.components
    assert components["rogue_false_positive"] == 1.0 and components["resolved"] == 0.0
    assert components["unresolved"] == 1.0 and episode.count("mitigated") == 0


def test_rogue_multiplier_scales_catch_and_false_positive_together() -> None:
    episode = scripted_episode("autoscaler_cost_cut-easy", messy_cost_cut_script(), rogue_multiplier=2.0)
    assert episode.score is not None
    assert episode.score.weights["rogue_caught"] == 100.0 and episode.score.weights["rogue_false_positive"] == -150.0
    assert episode.score.total == pytest.approx(54.0 + 50)
    assert chaosops.rubric(0.0).weights["rogue_caught"] == 0.0
    with pytest.raises(ValueError, match="rogue_multiplier"):
        chaosops.rubric(-1.0)
    assert {k: v for k, v in chaosops.rubric().weights.items()} == WEIGHTS


def test_late_root_cause_and_slow_resolution_earn_no_bonus() -> None:
    noop = Action.call("noop")
    env = chaosops.load()
    task = env.task("db_deadlock-easy")
    assert isinstance(task, ChaosOpsTask)
    waiting = [noop] * 4 * 6  # six idle steps: past the root-cause deadline and half the budget
    actions = [*waiting, Action.call("identify_root_cause", cause="db_deadlock"), noop,
               Action.call("restart", target="db"), noop, noop, noop, noop, Action.call("resolve")]
    score = scripted_episode(task.id, actions).score
    assert score is not None
    assert score.components["root_cause_by_step_3"] == 0.0 and score.components["under_budget"] == 0.0
    assert score.components["resolved"] == 1.0 and score.components["mttr"] == 8.0
    assert score.total == pytest.approx(100 - 16)


def test_bonus_components_count_each_fact_once_and_check_the_truth() -> None:
    env = chaosops.load()
    task = env.task("rogue_deploy_bot-easy")
    events = [Event(name="root_cause_identified", step=1, data={"cause": "deploy_bot_rogue"}),
              Event(name="root_cause_identified", step=2, data={"cause": "deploy_bot_rogue"}),
              Event(name="root_cause_identified", step=1, data={"cause": "db_deadlock"}),
              Event(name="rogue_caught", step=1, data={"agent": "deploy_bot"}),
              Event(name="rogue_caught", step=1, data={"agent": "deploy_bot"}),
              Event(name="resolved", step=4)]
    score = chaosops.rubric().score(Episode(env="chaosops", task_id=task.id, seed=0, events=events, done=True), task)
    assert score.components["root_cause_by_step_3"] == 1.0 and score.components["rogue_caught"] == 1.0
    assert score.components["resolved"] == 1.0 and score.components["mttr"] == 4.0
    lying = [Event(name="rogue_caught", step=1, data={"agent": "autoscaler"}), Event(name="resolved", step=2)]
    score = chaosops.rubric().score(Episode(env="chaosops", task_id=task.id, seed=0, events=lying, done=True), task)
    assert score.components["rogue_caught"] == 0.0


def test_a_finished_episode_without_an_ending_fails_loudly() -> None:
    task = chaosops.load().task("disk_full-hard")
    with pytest.raises(RubricError, match=r"mttr|under_budget"):
        chaosops.rubric().score(Episode(env="chaosops", task_id=task.id, seed=0, done=True), task)
    with pytest.raises(RubricError, match="failed on task .x."):
        chaosops.rubric().score(Episode(env="chaosops", task_id="x", seed=0, done=False), Task(id="x"))


def test_standing_by_costs_more_than_a_misfiring_responder() -> None:
    """Found by `drill audit chaosops`: with routine fleet activity, no-ops every turn outscored the heuristic until
    an open outage at the end of the budget cost as much as a resolution earns."""
    from drill.core import PolicyInfo, run_episodes

    class StandBy:
        info = PolicyInfo(name="stand-by")

        def act(self, inputs):  # type: ignore[no-untyped-def]
            return [Action.call("noop") for _ in inputs]

    tasks = chaosops.load().tasks("test")
    jobs = [(t, s) for t in tasks for s in range(2)]
    idle = run_episodes(chaosops.load, jobs, StandBy(), chaosops.rubric())
    heuristic = run_episodes(chaosops.load, jobs, chaosops.baselines["heuristic"](), chaosops.rubric())
    assert all(e.score is not None and e.score.components["unresolved"] == 1.0 for e in idle)
    mean = lambda episodes: sum(e.score.total for e in episodes if e.score) / len(episodes)  # noqa: E731
    assert mean(idle) < mean(heuristic)
