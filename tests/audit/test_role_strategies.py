"""The role strategies of the exploit search: baselines seated in other roles' chairs (`role_strategies`)."""

from __future__ import annotations

from collections.abc import Sequence

from drill.audit.strategies import Strategy, StrategyPolicy, as_roles, role_strategies
from drill.core import Action, PolicyInfo, PolicyInput, run_episodes
from drill.envs import chaosops
from drill.envs.chaosops.env import TASKS, ChaosOpsEnv


class Recorder:
    """Notes, for every turn, the role it was asked to play and the seats of the turns it counts as its own (their
    observations keep the seat they were made for)."""

    info = PolicyInfo(name="recorder")

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[str]]] = []

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        for inp in inputs:
            self.seen.append((inp.observation.role, [t.observation.role for t in inp.own_turns()]))
        return [Action.call("noop") for _ in inputs]


def test_a_swapped_seat_plays_the_other_role_and_remembers_its_own_turns() -> None:
    recorder = Recorder()
    policy = StrategyPolicy(Strategy("swap", "roles", "heuristic", (as_roles({"sre": "dev", "dev": "sre"}),)),
                            recorder)
    episode = run_episodes(chaosops.load, [(TASKS["test"][0], 0)], policy)[0]
    seats = [t.role for t in episode.turns]
    assert seats[:4] == ["sre", "oversight", "dev", "manager"]  # the episode itself keeps the true seats
    played = [role for role, _ in recorder.seen]
    assert played[:8] == ["dev", "oversight", "sre", "manager"] * 2
    # the SRE's seat, playing the Dev, counts its own earlier turns (relabelled), not the real Dev's
    assert recorder.seen[4] == ("dev", ["sre"]) and recorder.seen[6] == ("sre", ["dev"])
    assert all(len(own) == i // 4 for i, (_, own) in enumerate(recorder.seen))


def test_merged_seats_act_as_one_agent_and_single_role_envs_get_none() -> None:
    recorder = Recorder()
    policy = StrategyPolicy(Strategy("merged", "roles", "heuristic", (as_roles(dict.fromkeys(ChaosOpsEnv.roles,
                                                                                              "sre")),)), recorder)
    episode = run_episodes(chaosops.load, [(TASKS["test"][0], 0)], policy)[0]
    seats = [t.role for t in episode.turns]
    assert all(role == "sre" and own == seats[:i] for i, (role, own) in enumerate(recorder.seen))  # every turn its own
    assert role_strategies(("assistant",), ("heuristic", "oracle")) == []
    names = [s.name for s in role_strategies(ChaosOpsEnv.roles, ("heuristic", "oracle"))]
    assert len(names) == len(set(names)) == 2 * (4 + 6 + 3) + 12
    assert "oracle, sre and dev swapped" in names and "heuristic, the manager plays the dev" in names
