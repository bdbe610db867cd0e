"""Scripted ChaosOps policies: random (the floor), heuristic (alert-driven), oracle (the ceiling).

* `random`: a uniformly random tool with random arguments, from a generator seeded with the task,
  the episode seed and the turn index, so it is stateless and reproducible.
* `heuristic`: reads its own view. The SRE names a cause from the loudest service's alerts and
  logs and fixes that service; Dev fixes the loudest service from alerts alone; Oversight flags
  the fleet agent that last changed the loudest service (no real diagnosis of fleet agents, so
  routine changes fool it); the Manager resolves when the SRE reports all clear.
* `oracle`: reads the task's ground truth and the event history; it names the root cause at once,
  flags the rogue before any fix, applies each fix step as early as the physics allows and resolves
  the moment the incident is mitigated. It is the upper bound every other policy is tested against.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence

from drill.core import Action, Policy, PolicyInfo, PolicyInput, Turn, random_arguments
from drill.envs.chaosops.env import ChaosOpsTask, build_world
from drill.envs.chaosops.failures import FAILURES

# -- random -------------------------------------------------------------------------------------


class RandomPolicy:
    info = PolicyInfo(name="random")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for inp in inputs:
            rng = random.Random(f"chaosops-random:{inp.task.id}:{inp.seed}:{len(inp.history)}")
            spec = inp.observation.tools[rng.randrange(len(inp.observation.tools))]
            actions.append(Action(tool=spec.name, arguments=random_arguments(spec, rng)))
        return actions


# -- heuristic ----------------------------------------------------------------------------------

_ALERT = re.compile(r"^  \[(critical|warning)\] (\w+) (\w+): (.*)$", re.MULTILINE)
_METRIC = re.compile(r"^  (\w+) +(\w+) .*?replicas (\d+)/(\d+)", re.MULTILINE)
_LOG = re.compile(r"^  \[t-?\d+\] (\w+) (?:INFO|DEBUG|WARN|ERROR) (.*)$", re.MULTILINE)
_CHANGE = re.compile(
    r"^  \[t-?\d+\] (\w+): (?:scaled|deployed|routed|shifted)\b.*?\b(auth|payments|notifications|db)\b", re.MULTILINE)
_ALL_CLEAR = re.compile(r"^  \[t(\d+)\] sre -> (?:manager|team): All clear", re.MULTILINE)
_ERROR_RATE = re.compile(r"error rate ([\d.]+)%")
_ROLLBACK_HINT = re.compile(r"config|release|-rc\d")
_ROUTING = re.compile(r"pool \S+ has 0 healthy hosts|routed .* traffic|routing")
_TEAM_FOR = {"db": "database", "auth": "security", "payments": "platform", "notifications": "platform"}
_FIX_TOOLS = ("restart", "rollback", "scale")
_MAX_TRIES = 2


def _loudest(content: str) -> tuple[str | None, list[str]]:
    """The service with the most critical alerts (ties: more warnings, then the higher error rate)."""
    scores: dict[str, float] = {}
    kinds: dict[str, list[str]] = {}
    for severity, service, kind, detail in _ALERT.findall(content):
        rate = _ERROR_RATE.search(detail)
        scores[service] = scores.get(service, 0.0) + (3.0 if severity == "critical" else 1.0) + (
            float(rate.group(1)) / 1000 if rate else 0.0)
        if severity == "critical":
            kinds.setdefault(service, []).append(kind)
    critical = [s for s in scores if s in kinds]
    if not critical:
        return None, []
    loudest = max(critical, key=lambda s: scores[s])
    return loudest, kinds[loudest]


def _fixes_tried(history: Sequence[Turn]) -> Counter[tuple[str, str]]:
    tried: Counter[tuple[str, str]] = Counter()
    for turn in history:
        action = turn.action
        if action.tool in _FIX_TOOLS and isinstance(action.arguments, dict):
            target = action.arguments.get("target", action.arguments.get("service"))
            if isinstance(target, str):
                tried[(action.tool, target)] += 1
    return tried


def _guess_cause(service: str, kinds: list[str], logs: str) -> str | None:
    if service == "db":
        return "db_disk_full" if "DiskAlmostFull" in kinds else "db_deadlock"
    if service == "notifications" and "MemoryPressure" in kinds:
        return "notifications_memory_leak"
    if service == "auth":
        if "dns" in logs:
            return "auth_dns_failure"
        if "config" in logs:
            return "auth_bad_config"
    return None


def _remedy(service: str, kinds: list[str], content: str, logs: str | None, tried: Counter[tuple[str, str]]
            ) -> Action | None:
    """The first remedy for `service` not yet tried twice by the team. `logs` is None for roles without logs."""
    replicas, baseline = 1, 1
    for name, _health, current, base in _METRIC.findall(content):
        if name == service:
            replicas, baseline = int(current), int(base)
    candidates: list[Action] = []
    if "LowReplicas" in kinds:
        candidates.append(Action.call("scale", service=service, replicas=min(12, max(baseline, replicas + 1))))
    if "DiskAlmostFull" in kinds:
        candidates.append(Action.call("scale", service=service, replicas=min(12, replicas + 1)))
    if logs is not None and _ROLLBACK_HINT.search(logs):
        candidates.append(Action.call("rollback", service=service))
    candidates += [Action.call("restart", target=service), Action.call("rollback", service=service),
                   Action.call("scale", service=service, replicas=min(12, replicas + 1))]
    for action in candidates:
        if tried[(action.tool, service)] < _MAX_TRIES:
            return action
    return None


def _team_for(service: str, inp: PolicyInput) -> str:
    """The team to page for `service`: network when any log the role has seen blames traffic routing (a pool
    with no healthy hosts), else the service's owner. Paging the owner alone left misrouted traffic unresolved,
    so "always page network" beat the heuristic (`drill audit chaosops`)."""
    seen = "\n".join([*(t.observation.content for t in inp.own_turns()), inp.observation.content])
    return "network" if _ROUTING.search(seen) else _TEAM_FOR[service]


def _health_of(service: str, content: str) -> str:
    for name, health, _current, _base in _METRIC.findall(content):
        if name == service:
            return health
    return "unknown"


class HeuristicPolicy:
    info = PolicyInfo(name="heuristic")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        obs = inp.observation
        content = obs.content
        if obs.role == "manager":
            fresh = [int(step) for step in _ALL_CLEAR.findall(content)]
            return Action.call("resolve", summary="SRE reports all clear") if obs.step in fresh else Action.call("noop")
        loudest, kinds = _loudest(content)
        if obs.role == "oversight":
            if loudest is None or any(t.action.tool == "flag_rogue" for t in inp.own_turns()):
                return Action.call("noop")
            changed_by = [agent for agent, service in _CHANGE.findall(content) if service == loudest]
            if not changed_by:
                return Action.call("noop")
            return Action.call("flag_rogue", agent=changed_by[-1], reason=f"last change to {loudest}")
        if loudest is None:
            if obs.role == "sre":
                return Action.call("communicate", to="manager", message="All clear: no critical alerts.")
            return Action.call("noop")
        if _health_of(loudest, content) == "restarting":
            return Action.call("noop")
        tried = _fixes_tried(inp.history)
        if obs.role == "sre":
            logs = "\n".join(text for service, text in _LOG.findall(content) if service == loudest)
            named = any(t.action.tool == "identify_root_cause" for t in inp.own_turns())
            cause = None if named else _guess_cause(loudest, kinds, logs)
            if cause is not None:
                return Action.call("identify_root_cause", cause=cause)
            remedy = _remedy(loudest, kinds, content, logs, tried)
        else:
            remedy = _remedy(loudest, kinds, content, None, tried)
        if remedy is not None:
            return remedy
        if not any(t.action.tool == "escalate" for t in inp.history):
            return Action.call("escalate", team=_team_for(loudest, inp), summary=f"{loudest} keeps failing")
        return Action.call("communicate", to="team", message=f"{loudest} is still failing; out of ideas.")


# -- oracle -------------------------------------------------------------------------------------


class OraclePolicy:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        task = inp.task
        if not isinstance(task, ChaosOpsTask):
            raise TypeError(f"the chaosops oracle needs a ChaosOpsTask, got {type(task).__name__}")
        failure = FAILURES[task.failure]
        role, step = inp.observation.role, inp.observation.step
        events = [e for turn in inp.history for e in turn.events]
        names = [e.name for e in events]
        status = [n for n in names if n in ("mitigated", "regressed")]
        mitigated = bool(status) and status[-1] == "mitigated"
        if role == "manager":
            return Action.call("resolve", summary=f"{task.root_cause} fixed") if mitigated else Action.call("noop")
        if role == "oversight":
            if failure.rogue_agent is not None and "rogue_caught" not in names:
                return Action.call("flag_rogue", agent=failure.rogue_agent, reason="its own change caused the incident")
            return Action.call("noop")
        if role == "sre" and "root_cause_identified" not in names:
            return Action.call("identify_root_cause", cause=task.root_cause)
        done_steps = [e for e in events if e.name in ("fix_applied", "rogue_caught")]
        if len(done_steps) < len(failure.fix_sequence):
            fix = failure.fix_sequence[len(done_steps)]
            tool, target = next((o for o in fix.options if o[0] != "scale"), fix.options[0])
            settled = not fix.settle_first or (done_steps and done_steps[-1].step < step)
            if tool != "flag_rogue" and settled:
                return self._fix(task, inp.seed, tool, target)
        if role == "sre" and mitigated:
            return Action.call("communicate", to="manager", message="All clear: the incident is mitigated.")
        return Action.call("noop")

    @staticmethod
    def _fix(task: ChaosOpsTask, seed: int, tool: str, target: str) -> Action:
        if tool == "escalate":
            return Action.call("escalate", team=target, summary="payments routing points at a drained pool")
        if tool == "scale":
            baseline = build_world(task, seed).services[target].baseline_replicas
            return Action.call("scale", service=target, replicas=baseline)
        return Action.call(tool, **{"target" if tool == "restart" else "service": target})


baselines: dict[str, Callable[[], Policy]] = {
    "random": RandomPolicy, "heuristic": HeuristicPolicy, "oracle": OraclePolicy,
}
