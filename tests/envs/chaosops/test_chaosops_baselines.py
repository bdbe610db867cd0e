"""Baselines: the oracle is perfect, the heuristic sits between random and oracle, and nothing beats the oracle."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence

import pytest

from drill.audit.strategies import Strategy, StrategyPolicy, as_roles
from drill.core import Action, Episode, Policy, PolicyInfo, PolicyInput, run_episodes
from drill.envs import chaosops
from drill.envs.chaosops.baselines import OraclePolicy, RandomPolicy
from drill.envs.chaosops.env import TASKS, ChaosOpsTask
from drill.envs.chaosops.failures import FLEET_AGENTS, ROOT_CAUSES, SERVICES, TEAMS

SEEDS = range(5)


def play(policy: Policy | dict[str, Policy], tasks: Sequence[ChaosOpsTask] = TASKS["test"],
         seeds: Sequence[int] = SEEDS, rogue_multiplier: float = 1.0) -> list[Episode]:
    jobs = [(task, seed) for task in tasks for seed in seeds]
    return run_episodes(chaosops.load, jobs, policy, chaosops.rubric(rogue_multiplier))


def total(episode: Episode) -> float:
    assert episode.score is not None
    return episode.score.total


@pytest.fixture(scope="module")
def oracle_episodes() -> list[Episode]:
    return play(OraclePolicy())


def test_oracle_resolves_everything_and_catches_every_rogue(oracle_episodes: list[Episode]) -> None:
    by_id = {t.id: t for t in TASKS["test"]}
    assert len(oracle_episodes) == 27 * len(SEEDS)
    for episode in oracle_episodes:
        task = by_id[episode.task_id]
        assert episode.count("resolved") == 1, episode.task_id
        assert episode.count("rogue_caught") == (task.rogue_agent is not None)
        bad = ("wrong_fix", "miscommunication", "rogue_false_positive", "second_order_failure", "invalid_action")
        assert not any(episode.count(name) for name in bad), episode.task_id


def test_heuristic_lands_between_random_and_oracle(oracle_episodes: list[Episode]) -> None:
    heuristic, rand = play(chaosops.baselines["heuristic"]()), play(chaosops.baselines["random"]())
    by_id = {t.id: t for t in TASKS["test"]}
    for tier in chaosops.TIERS:
        mean = {name: statistics.fmean(total(e) for e in episodes if by_id[e.task_id].tier == tier)
                for name, episodes in (("random", rand), ("heuristic", heuristic), ("oracle", oracle_episodes))}
        assert mean["random"] < mean["heuristic"] < mean["oracle"], (tier, mean)
    hard = [e for e in heuristic if by_id[e.task_id].tier == "hard"]
    easy = [e for e in heuristic if by_id[e.task_id].tier == "easy"]
    assert statistics.fmean(total(e) for e in hard) < statistics.fmean(total(e) for e in easy)
    assert not any(e.count("rogue_false_positive") for e in heuristic)  # it flags on the trace's evidence only


def test_random_policy_is_stateless_and_reproducible() -> None:
    task = TASKS["test"][0]
    policy = RandomPolicy()
    first, again = play(policy, [task], [7]), play(RandomPolicy(), [task], [7])
    assert [t.action for t in first[0].turns] == [t.action for t in again[0].turns]
    assert [t.action for t in play(policy, [task], [7])[0].turns] == [t.action for t in first[0].turns]
    other = play(RandomPolicy(), [task], [8])
    assert [t.action for t in first[0].turns] != [t.action for t in other[0].turns]


# -- degenerate policies: each repeats something the rubric pays for ----------------------------


class Repeat:
    """Every role plays `make(input)` on every turn."""

    def __init__(self, name: str, make: Callable[[PolicyInput], Action]) -> None:
        self.info = PolicyInfo(name=name)
        self.make = make

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self.make(inp) for inp in inputs]


def _truth(inp: PolicyInput) -> ChaosOpsTask:
    assert isinstance(inp.task, ChaosOpsTask)
    return inp.task


EVERY_FIX = [Action.call("restart", target=t) for t in (*SERVICES, *FLEET_AGENTS)] + [
    Action.call("rollback", service=s) for s in SERVICES] + [
    Action.call("scale", service=s, replicas=n) for s in SERVICES for n in (1, 6, 12)] + [
    Action.call("escalate", team=t) for t in TEAMS]
PAID = [Action.call("identify_root_cause", cause=c) for c in ROOT_CAUSES] + [
    Action.call("flag_rogue", agent=a) for a in FLEET_AGENTS] + [Action.call("resolve")]


def _oracle_then(extra: Callable[[PolicyInput], Action]) -> Callable[[PolicyInput], Action]:
    """The oracle, but every turn it would wait is spent repeating `extra` instead."""
    oracle = OraclePolicy()

    def make(inp: PolicyInput) -> Action:
        action = oracle.act([inp])[0]
        return extra(inp) if action.tool == "noop" else action
    return make


DEGENERATE: dict[str, Callable[[PolicyInput], Action]] = {
    "noop": lambda inp: Action.call("noop"),
    "repeat_true_root_cause": lambda inp: Action.call("identify_root_cause", cause=_truth(inp).root_cause),
    "cycle_root_causes": lambda inp: Action.call("identify_root_cause", cause=ROOT_CAUSES[len(inp.history) % 9]),
    "repeat_flag_true_rogue": lambda inp: Action.call("flag_rogue", agent=_truth(inp).rogue_agent or "autoscaler"),
    "cycle_flags": lambda inp: Action.call("flag_rogue", agent=FLEET_AGENTS[len(inp.history) % 3]),
    "repeat_resolve": lambda inp: Action.call("resolve"),
    "repeat_communicate": lambda inp: Action.call("communicate", to="team", message="all clear, resolved"),
    "spam_every_fix": lambda inp: EVERY_FIX[len(inp.history) % len(EVERY_FIX)],
    "spam_everything_paid": lambda inp: (PAID + EVERY_FIX)[len(inp.history) % len(PAID + EVERY_FIX)],
    "oracle_plus_root_cause": _oracle_then(
        lambda inp: Action.call("identify_root_cause", cause=_truth(inp).root_cause)),
    "oracle_plus_flag": _oracle_then(
        lambda inp: Action.call("flag_rogue", agent=_truth(inp).rogue_agent or "deploy_bot")),
    "oracle_plus_resolve": _oracle_then(lambda inp: Action.call("resolve")),
    "oracle_plus_fix_again": _oracle_then(
        lambda inp: Action.call("restart", target=_truth(inp).fix_sequence[-1].split()[-1])
        if _truth(inp).fix_sequence[-1].startswith("restart")
        else Action.call("communicate", to="team", message="ok")),
}


@pytest.mark.parametrize("rogue_multiplier", [1.0, 3.0])
def test_no_degenerate_policy_beats_the_oracle(rogue_multiplier: float) -> None:
    seeds = (0, 1)
    oracle = {(e.task_id, e.seed): total(e)
              for e in play(OraclePolicy(), seeds=seeds, rogue_multiplier=rogue_multiplier)}
    for name, make in DEGENERATE.items():
        for episode in play(Repeat(name, make), seeds=seeds, rogue_multiplier=rogue_multiplier):
            assert total(episode) <= oracle[(episode.task_id, episode.seed)], (name, episode.task_id, episode.seed)


def test_mixing_roles_never_beats_the_oracle() -> None:
    """Every role gets the best of the other policies: the oracle's plan with degenerate helpers."""
    oracle = {(e.task_id, e.seed): total(e) for e in play(OraclePolicy(), seeds=(0,))}
    roles = chaosops.ChaosOpsEnv.roles
    helpers = {"oracle": OraclePolicy(), "heuristic": chaosops.baselines["heuristic"](),
               "resolve": Repeat("resolve", DEGENERATE["repeat_resolve"]),
               "flags": Repeat("flags", DEGENERATE["repeat_flag_true_rogue"])}
    for combo in itertools.product(("oracle", "heuristic"), ("oracle", "flags"), ("oracle", "heuristic"),
                                   ("oracle", "resolve")):
        assignment = {role: helpers[name] for role, name in zip(roles, combo, strict=True)}
        for episode in play(assignment, seeds=(0,)):
            assert total(episode) <= oracle[(episode.task_id, episode.seed)], (combo, episode.task_id)


# -- roles swapped or merged: the remits make the role-specialized team the best one ----------------------


class FixByManager:
    """The oracle, except that the Dev waits and the Manager applies every fix the Dev's oracle would: before the
    remits it kept the oracle's maximum."""

    info = PolicyInfo(name="oracle, the fix applied by the manager")

    def __init__(self) -> None:
        self.oracle = OraclePolicy()

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        role = inp.observation.role
        action = self.oracle.act([inp])[0]
        if role == "dev":
            return Action.call("noop")
        if role == "manager" and action.tool == "noop":
            as_dev = inp._replace(observation=inp.observation.model_copy(update={"role": "dev"}))
            return self.oracle.act([as_dev])[0]
        return action


def reseated(base: str, seats: dict[str, str]) -> Policy:
    return StrategyPolicy(Strategy(f"{base} {seats}", "roles", base, (as_roles(seats),)), chaosops.baselines[base]())


def test_swapped_or_merged_roles_fall_below_the_heuristic(oracle_episodes: list[Episode]) -> None:
    by_id = {t.id: t for t in TASKS["test"]}
    roles = chaosops.ChaosOpsEnv.roles

    def by_tier(episodes: list[Episode]) -> dict[str, float]:
        return {tier: statistics.fmean(total(e) for e in episodes if by_id[e.task_id].tier == tier)
                for tier in chaosops.TIERS}

    heuristic = by_tier(play(chaosops.baselines["heuristic"]()))
    teams = {"every seat plays the SRE heuristic": reseated("heuristic", dict.fromkeys(roles, "sre")),
             "the SRE heuristic in the SRE, Oversight and Dev seats": reseated(
                 "heuristic", {"oversight": "sre", "dev": "sre"}),
             "the heuristic with SRE and Dev swapped": reseated("heuristic", {"sre": "dev", "dev": "sre"}),
             "the oracle with SRE and Dev swapped": reseated("oracle", {"sre": "dev", "dev": "sre"}),
             "the oracle's fix applied by the Manager": FixByManager()}
    for name, policy in teams.items():
        episodes = play(policy)
        means = by_tier(episodes)
        assert all(means[tier] < heuristic[tier] for tier in chaosops.TIERS), (name, means, heuristic)
        if name.startswith("the oracle"):  # its plan is the right one; what sinks it is the refused calls
            assert all(e.count("out_of_role") > 0 for e in episodes if e.count("resolved") == 0), name
    assert all(e.count("out_of_role") == 0 for e in oracle_episodes)
