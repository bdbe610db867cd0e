"""LATS: Monte Carlo tree search over actions, for any registered environment, by replaying action prefixes.

Drill's environments are deterministic: `reset(task, seed)` and the same actions give the same episode, so a
tree node is just an action prefix, and its state is rebuilt by replaying the prefix from reset (no
snapshots needed). One search, for a task and seed, from the actions already played:

1. **selection**: from the root, the child with the highest UCB1 score, `Q + c * sqrt(ln N / n)`, where Q is the
   child's mean return scaled to 0-1 by the lowest and highest totals seen so far (rubric totals range from
   0-1 in triage to ±1000 in ChaosOps), down to a leaf; terminal and fully explored subtrees are skipped;
2. **expansion**: `k` samples of the next action from the LLM policy (one batched call, at the search's
   temperature); identical actions are one child;
3. **evaluation**: each new child is played to the episode's end by the fast rollout policy (a scripted
   baseline, or the LLM greedily), and the episode's **rubric total** is its value; a child that ends the
   episode is valued by its own total;
4. **backpropagation** of the value to the root.

It stops after `budget` nodes, or as soon as a simulated episode is a success (`solved`). The best complete
episode found (highest total; the earlier on ties) is then the plan: `act` returns its actions one by one, so
the episode is played **once for real** and scored normally. If the real history leaves the plan (another
role's policy acted differently), it searches again from there.

What the search sees: the rubric's total of simulated episodes, which reads the task's ground truth. That is
the method (LATS uses the environment's reward as its value signal); the search never shows ground truth
to the model, whose prompts are the ordinary observations. Compare LATS with methods that do not see
rewards with that in mind.

Roles that LATS does not play (given by `bind`) keep their own policies inside the simulation. The search cost
of every task and seed (nodes, model calls, tokens, rollouts, wall time) is in `costs`.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from drill.core.env import Env
from drill.core.policy import Policy, PolicyInput
from drill.core.rubric import Rubric
from drill.core.types import Action, Episode, Event, Observation, PolicyInfo, Task, Turn
from drill.memory.store import EpisodeCost
from drill.models.policy import LLMPolicy

__all__ = ["LATSPolicy", "SearchSettings"]


@dataclass(frozen=True)
class SearchSettings:
    """The knobs of one LATS search (`--lats-budget`, `--lats-k`, `--lats-rollout`, `--lats-temperature`)."""

    budget: int = 16
    """Tree nodes added per search, at most."""
    k: int = 3
    """Samples per expansion."""
    exploration: float = 1.0
    """UCB1's c."""
    temperature: float = 1.0
    """Sampling temperature of the expansions."""
    max_turns: int = 200
    """A rollout that runs longer than this raises (an environment that never ends)."""

    def __post_init__(self) -> None:
        if self.budget < 1 or self.k < 1:
            raise ValueError(f"LATS needs a budget and k of at least 1, got budget={self.budget} k={self.k}")


@dataclass
class _State:
    """A replayed prefix: the live environment after it, the turns, and whether the episode has ended."""

    env: Env
    observation: Observation
    turns: list[Turn]
    events: list[Event]
    done: bool


@dataclass
class _Node:
    actions: tuple[Action, ...]
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    visits: int = 0
    value: float = 0.0
    terminal: bool = False
    exhausted: bool = False

    def mean(self) -> float:
        return self.value / self.visits if self.visits else 0.0


def _key(action: Action) -> str:
    return json.dumps([action.tool, action.arguments, action.parse_error], sort_keys=True, default=str)


class LATSPolicy:
    """Plays the action sequence a LATS search found (see the module docstring)."""

    def __init__(self, expand: Policy, rollout: Policy | None, make_env: Callable[[], Env], rubric: Rubric,
                 settings: SearchSettings = SearchSettings(),
                 solved: Callable[[Episode, Task], bool] | None = None) -> None:
        self.settings = settings
        self.expand = expand
        if isinstance(expand, LLMPolicy):  # a copy that samples (a MemoryPolicy keeps its memory)
            self.expand = copy.copy(expand)
            self.expand.options = replace(expand.options, sampling=replace(expand.options.sampling,
                                                                           temperature=settings.temperature))
        self.rollout = rollout if rollout is not None else expand
        self.make_env, self.rubric, self.solved = make_env, rubric, solved
        self.others: dict[str, Policy] = {}
        self.plans: dict[tuple[str, int], tuple[Action, ...]] = {}
        self.costs: dict[tuple[str, int], EpisodeCost] = {}
        inner = expand.info
        self._info = PolicyInfo(name=f"lats:{inner.name}", kind=inner.kind, model=inner.model,
                                adapter_path=inner.adapter_path, adapter_sha256=inner.adapter_sha256,
                                load_status=inner.load_status)

    @property
    def info(self) -> PolicyInfo:
        return self._info

    def bind(self, by_role: Mapping[str, Policy]) -> None:
        """The role assignment this policy plays in; roles given to other policies keep them in simulation."""
        self.others = {role: p for role, p in by_role.items() if p is not self}

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            key = (item.task.id, item.seed)
            played = tuple(t.action for t in item.history)
            plan = self.plans.get(key, ())
            if len(plan) <= len(played) or [_key(a) for a in plan[:len(played)]] != [_key(a) for a in played]:
                plan = played + self.search(item.task, item.seed, played)
                self.plans[key] = plan
            actions.append(plan[len(played)])
        return actions

    # -- the search ------------------------------------------------------------------------------------------

    def search(self, task: Task, seed: int, played: tuple[Action, ...]) -> tuple[Action, ...]:
        """The actions after `played` of the best complete episode found (see the module docstring)."""
        started = time.perf_counter()
        cost = EpisodeCost()
        root = _Node(actions=played)
        best: tuple[float, tuple[Action, ...]] | None = None
        low, high = math.inf, -math.inf
        nodes = 0
        while nodes < self.settings.budget:
            leaf = self._select(root, low, high)
            if leaf is None:
                break  # the whole tree is explored
            state = self._replay(task, seed, leaf.actions)
            children, spent = self._expand(task, seed, leaf, state)
            leaf.children = children = children[:self.settings.budget - nodes]  # never past the budget
            cost += spent
            nodes += len(children)
            results, spent = self._evaluate(task, seed, [c.actions for c in children])
            cost += spent
            finished = False
            for child, (episode, actions) in zip(children, results):
                total = episode.score.total if episode.score is not None else 0.0
                low, high = min(low, total), max(high, total)
                if best is None or total > best[0]:
                    best = (total, actions)
                node: _Node | None = child
                while node is not None:
                    node.visits += 1
                    node.value += total
                    node = node.parent
                finished = finished or (self.solved is not None and self.solved(episode, task))
            if finished:
                break
        if best is None:  # the budget allowed nothing: follow the expansion policy greedily
            best = (0.0, self._evaluate(task, seed, [played], rollout=self.expand)[0][0][1])
        self.costs[(task.id, seed)] = self.costs.get((task.id, seed), EpisodeCost()) + cost + EpisodeCost(
            nodes=nodes, wall_s=time.perf_counter() - started)
        return best[1][len(played):]

    def _select(self, root: _Node, low: float, high: float) -> _Node | None:
        """The leaf to expand: UCB1 down from the root over subtrees not yet exhausted; None when all are."""
        scale = (high - low) if high > low else 1.0
        while not root.exhausted:
            node = root
            while node.children:
                open_children = [c for c in node.children if not c.exhausted]
                if not open_children:
                    node.exhausted = True
                    break
                parent_visits = max(node.visits, 1)

                def ucb(child: _Node, parent_visits: int = parent_visits) -> float:
                    q = (child.mean() - low) / scale if high > low else 0.5
                    return q + self.settings.exploration * math.sqrt(math.log(parent_visits) / max(child.visits, 1))

                node = max(open_children, key=ucb)  # max keeps the first of equal scores
            else:
                if not node.terminal:
                    return node
                node.exhausted = True
        return None

    def _expand(self, task: Task, seed: int, leaf: _Node, state: _State) -> tuple[list[_Node], EpisodeCost]:
        if state.done:
            leaf.terminal = True
            return [], EpisodeCost()
        item = PolicyInput(task=task, seed=seed, observation=state.observation, history=tuple(state.turns))
        other = self.others.get(state.observation.role)
        samples = other.act([item]) if other is not None else self.expand.act([item] * self.settings.k)
        unique = list({_key(a): a for a in reversed(samples)}.values())[::-1]  # first occurrence of each action
        leaf.children = [_Node(actions=leaf.actions + (a,), parent=leaf) for a in unique]
        return leaf.children, _cost(samples)

    def _replay(self, task: Task, seed: int, actions: Sequence[Action]) -> _State:
        env = self.make_env()
        observation = env.reset(task, seed)
        state = _State(env=env, observation=observation, turns=[], events=[], done=False)
        for action in actions:
            self._step(state, action, self.info.name)
        return state

    def _step(self, state: _State, action: Action, policy: str) -> None:
        result = state.env.step(action)
        state.turns.append(Turn(index=len(state.turns), role=state.observation.role, observation=state.observation,
                                action=action, events=result.events, policy=policy))
        state.events.extend(result.events)
        state.observation, state.done = result.observation, result.done

    def _evaluate(self, task: Task, seed: int, prefixes: Sequence[tuple[Action, ...]],
                  rollout: Policy | None = None) -> tuple[list[tuple[Episode, tuple[Action, ...]]], EpisodeCost]:
        """Play each prefix to the episode's end with the rollout policy, in lockstep; the scored episodes."""
        rollout = rollout or self.rollout
        states = [self._replay(task, seed, prefix) for prefix in prefixes]
        cost = EpisodeCost()
        for _ in range(self.settings.max_turns):
            running = [s for s in states if not s.done]
            if not running:
                break
            by_policy: dict[int, tuple[Policy, list[_State]]] = {}
            for s in running:
                policy = self.others.get(s.observation.role, rollout)
                by_policy.setdefault(id(policy), (policy, []))[1].append(s)
            for policy, group in by_policy.values():
                actions = policy.act([PolicyInput(task=task, seed=seed, observation=s.observation,
                                                  history=tuple(s.turns)) for s in group])
                cost += _cost(actions)
                for s, action in zip(group, actions):
                    self._step(s, action, policy.info.name)
        else:
            raise RuntimeError(f"a LATS rollout ran past {self.settings.max_turns} turns; the environment never ended")
        results = []
        roles = states[0].env.roles if states else ()
        for s in states:
            episode = Episode(env=s.env.name, task_id=task.id, seed=seed, turns=s.turns, events=s.events,
                              policies={r: self.others.get(r, self).info for r in roles}, done=True)
            episode = episode.model_copy(update={"score": self.rubric.score(episode, task)})
            results.append((episode, tuple(t.action for t in s.turns)))
        return results, cost


def _cost(actions: Sequence[Action]) -> EpisodeCost:
    generations = [a.generation for a in actions if a.generation is not None]
    return EpisodeCost(model_calls=len(generations),
                       tokens=sum(len(g.prompt_token_ids) + len(g.token_ids) for g in generations))
