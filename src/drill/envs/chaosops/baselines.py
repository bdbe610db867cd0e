"""Scripted ChaosOps policies: random (the floor), heuristic (alert-driven), oracle (the ceiling).

* `random`: a uniformly random tool of the role's remit with random arguments: turn i plays the i-th draw of a
  generator seeded with the task and the episode seed, so it is reproducible and depends on nothing else.
* `heuristic`: reads its own role's structured view (the facts of its text view) and keeps to the role's remit.
  The suspect is the loudest service, or a service it depends on that has critical alerts too. The SRE names a
  cause from the suspect's alerts and logs and asks the Dev for a fix (or the Manager for a network page when the
  logs blame routing); the Dev runs it, or its own guess from the alerts; Oversight judges each fleet-trace change
  on its logged evidence (`harmful`) and flags the agent whose change hurt a service, never on a hunch; the Manager
  pages a team when asked and resolves when the SRE reports all clear.
* `oracle`: reads the task's ground truth and the event history, and keeps to the remits; the SRE names the root
  cause at once, Oversight flags the rogue before any fix, the Dev (fixes) and the Manager (escalation) apply each
  fix step as early as the physics allows, and the Manager resolves the moment the incident is mitigated. It is
  the upper bound every other policy is tested against.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from drill.core import Action, Observation, Policy, PolicyInfo, PolicyInput, Turn, random_arguments
from drill.envs.chaosops.env import REMITS, ChaosOpsObservation, ChaosOpsTask, build_world, episode_failure
from drill.envs.chaosops.failures import SERVICES, TEAMS
from drill.envs.chaosops.fleet import FleetAction
from drill.envs.chaosops.views import RoleView
from drill.envs.chaosops.world import DEPENDS_ON, Alert

# -- random -------------------------------------------------------------------------------------


class RandomPolicy:
    """Turn i of an episode plays the i-th draw of a generator seeded with the task and the episode seed.

    The draws of each (task, seed) are kept as they are made, so a turn costs one lookup instead of
    seeding a generator; the action still depends only on (task, seed, turn index).
    """

    info = PolicyInfo(name="random")
    _KEEP = 4096
    """Episodes whose draws are kept; beyond that the oldest are dropped (and redrawn identically if needed)."""

    def __init__(self) -> None:
        self._draws: dict[tuple[str, int], tuple[random.Random, list[Action]]] = {}

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for inp in inputs:
            key = (inp.task.id, inp.seed)
            stream = self._draws.get(key)
            if stream is None:
                if len(self._draws) >= self._KEEP:
                    del self._draws[next(iter(self._draws))]
                stream = self._draws[key] = (random.Random(f"chaosops-random:{inp.task.id}:{inp.seed}"), [])
            rng, drawn = stream
            tools = inp.observation.tools
            while len(drawn) <= len(inp.history):
                spec = tools[rng.randrange(len(tools))]
                drawn.append(Action(tool=spec.name, arguments=random_arguments(spec, rng)))
            actions.append(drawn[len(inp.history)])
        return actions


# -- heuristic ----------------------------------------------------------------------------------

_ROLLBACK_HINT = re.compile(r"config|release|-rc\d")
_ROUTING = re.compile(r"pool \S+ has 0 healthy hosts|routed .* traffic|routing|503 from edge|"
                      r"retry budget exhausted for \S+-b")
_TEAM_FOR = {"db": "database", "auth": "security", "payments": "platform", "notifications": "platform"}
_FIX_TOOLS = ("restart", "rollback", "scale")
_MAX_TRIES = 2


def _view(observation: Observation) -> RoleView:
    if not isinstance(observation, ChaosOpsObservation):
        raise TypeError("the chaosops heuristic reads the structured view of a ChaosOpsObservation, got "
                        f"{type(observation).__name__}")
    return observation.view


def _loudest(alerts: Sequence[Alert]) -> tuple[str | None, list[str]]:
    """The service with the most critical alerts (ties: more warnings, then the higher error rate)."""
    scores: dict[str, float] = {}
    kinds: dict[str, list[str]] = {}
    for alert in alerts:
        rate = alert.value / 1000 if alert.kind in ("HighErrorRate", "ServiceDown") else 0.0
        scores[alert.service] = scores.get(alert.service, 0.0) + (3.0 if alert.severity == "critical" else 1.0) + rate
        if alert.severity == "critical":
            kinds.setdefault(alert.service, []).append(alert.kind)
    critical = [s for s in scores if s in kinds]
    if not critical:
        return None, []
    loudest = max(critical, key=lambda s: scores[s])
    return loudest, kinds[loudest]


def _suspect(alerts: Sequence[Alert]) -> tuple[str | None, list[str]]:
    """The service to diagnose and fix: the loudest one, or the service it depends on when that one has critical
    alerts too. Callers retry a failing dependency and can end up louder than it (the hard tier's cascade), and
    the loudest service alone sent the team to fix payments during a db deadlock."""
    loudest, kinds = _loudest(alerts)
    while loudest is not None:
        failing = [d for d in DEPENDS_ON[loudest] if any(a.service == d and a.severity == "critical" for a in alerts)]
        if not failing:
            break
        loudest = failing[0]
        kinds = [a.kind for a in alerts if a.service == loudest and a.severity == "critical"]
    return loudest, kinds


_LOAD_AFTER = re.compile(r"(?:-> |load after )(\d+)% of capacity|load after (\d+)%")
_WEIGHTS = re.compile(r"-> (\d+)/(\d+)")


def harmful(action: FleetAction) -> bool:
    """Whether one trace entry's own evidence says the change hurt its service: a scale-in that leaves the load
    above capacity, a release whose review was skipped, traffic sent to a pool with no healthy hosts."""
    text = action.text
    if action.agent == "autoscaler":
        match = _LOAD_AFTER.search(text)
        return match is not None and int(match.group(1) or match.group(2)) > 100
    if action.agent == "deploy_bot":
        return "review: skipped" in text
    if action.agent == "load_balancer" and "0/3 hosts" in text and "paused" not in text:
        weights = _WEIGHTS.search(text)
        return weights is None or int(weights.group(2)) > 0
    return False


def _oversee(inp: PolicyInput, view: RoleView) -> Action:
    """Oversight reads each change in the fleet trace on its evidence and flags the agent whose change hurt a
    service, once; it flags nothing on a hunch (recency, the loudest service), because pausing an innocent agent
    stops its work and leaves the incident open."""
    flagged = {t.action.arguments.get("agent") for t in inp.own_turns()
               if t.action.tool == "flag_rogue" and isinstance(t.action.arguments, dict)}
    for action in view.trace:
        if action.change and action.agent not in flagged and harmful(action):
            return Action.call("flag_rogue", agent=action.agent, reason=f"harmful change: {action.text}")
    return Action.call("noop")


def _applied(turn: Turn) -> bool:
    """Whether the environment took the turn's call: a refused call (another seat's) or an invalid one did nothing."""
    return not any(event.name in ("invalid_action", "out_of_role") for event in turn.events)


def _since_flag(inp: PolicyInput) -> list[Turn]:
    """The turns since Oversight's last flag that paused an agent (the chat bot's note tells every seat; a repeated flag
    pauses nothing). A fix or a page before it may have been undone by the rogue it paused, so it counts as not tried:
    until the ninth red team it counted, and an honest Oversight that flagged the rogue a step late (the team's
    premature fix or page undone, the tries used up) saw the incident never closed, -397 on misrouted traffic
    (validation, 10 seeds), no better than silence plus the catch."""
    start, paused = 0, set[object]()
    for i, turn in enumerate(inp.history):
        agent = turn.action.arguments.get("agent") if isinstance(turn.action.arguments, dict) else None
        if turn.action.tool == "flag_rogue" and _applied(turn) and agent not in paused:  # a repeat pauses nothing
            start = i + 1
            paused.add(agent)
    return list(inp.history[start:])


def _fixes_tried(history: Sequence[Turn]) -> Counter[tuple[str, str]]:
    """Each (fix, service) the team has run: calls the environment applied. A refused call (another seat's, outside
    its remit) or an invalid one ran nothing, and counting it let Oversight use up the Dev's tries (red team,
    2026-11-27: an invalid rollback of the suspect each turn cut the team's resolved rate to 89%)."""
    tried: Counter[tuple[str, str]] = Counter()
    for turn in history:
        if not _applied(turn):
            continue
        action = turn.action
        if action.tool in _FIX_TOOLS and isinstance(action.arguments, dict):
            target = action.arguments.get("target", action.arguments.get("service"))
            if isinstance(target, str):
                tried[(action.tool, target)] += 1
    return tried


def _guess_cause(service: str, kinds: list[str], logs: str) -> str | None:
    if "LowReplicas" in kinds:  # only a cost cut leaves a service below its baseline
        return "autoscaler_rogue"
    if _ROUTING.search(logs):
        return "load_balancer_rogue"
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


def _remedy(service: str, kinds: list[str], view: RoleView, logs: str | None, tried: Counter[tuple[str, str]]
            ) -> Action | None:
    """The first remedy for `service` not yet tried twice by the team. `logs` is None for roles without logs."""
    replicas, baseline = 1, 1
    for s in view.health:
        if s.name == service:
            replicas, baseline = s.replicas, s.baseline_replicas
    candidates: list[tuple[str, dict[str, Any]]] = []  # (tool, arguments); only the chosen one becomes an Action
    if "LowReplicas" in kinds:
        candidates.append(("scale", {"service": service, "replicas": min(12, max(baseline, replicas + 1))}))
    if "DiskAlmostFull" in kinds:
        candidates.append(("scale", {"service": service, "replicas": min(12, replicas + 1)}))
    if logs is not None and _ROLLBACK_HINT.search(logs):
        candidates.append(("rollback", {"service": service}))
    candidates += [("restart", {"target": service}), ("rollback", {"service": service}),
                   ("scale", {"service": service, "replicas": min(12, replicas + 1)})]
    for tool, arguments in candidates:
        if tried[(tool, service)] < _MAX_TRIES:
            return Action.call(tool, **arguments)
    return None


def _team_for(service: str, inp: PolicyInput) -> str:
    """The team to page for `service`: network when any log line the role has seen blames traffic routing (a
    pool with no healthy hosts), else the service's owner. Paging the owner alone left misrouted traffic
    unresolved, so "always page network" beat the heuristic (`drill audit chaosops`)."""
    views = [_view(t.observation) for t in inp.own_turns()] + [_view(inp.observation)]
    seen = "\n".join(line.text for view in views for line in view.logs)
    return "network" if _ROUTING.search(seen) else _TEAM_FOR[service]


# Requests and the all-clear as a teammate writes them, in its own words (an LLM in one seat beside the heuristic):
# until the eighth red team the Manager resolved only on a message that began "All clear" and the Dev and Manager
# read only "Dev, please ..." and "Manager, please escalate to ...", so an SRE that said "the alerts are clear, please
# resolve" never had its incident closed (validation, 10 seeds: the heuristic team's +132 / +132 / +131 fell to
# -98 / -110 / -124, nothing resolved). A clause that negates, asks or sets a condition is no request.
_ASKED_FIX = re.compile(rf"\b(restart|roll ?back|scale)\s+(?:the\s+)?({'|'.join(SERVICES)})\b"
                        r"(?:\s+(?:service\s+)?(?:up\s+|out\s+)?to\s+(\d+))?", re.IGNORECASE)
_TEAM = "|".join(TEAMS)
_ASKED_ESCALATION = re.compile(  # "page network", "call in the network team", "get the network team involved"
    rf"(?:\b(?:escalate|page)\b\D*?\b|\b(?:call|contact|notify|loop|bring)\s+(?:in\s+)?(?:the\s+)?"
    rf"|\bget\s+(?=(?:the\s+)?(?:{_TEAM})(?:ing)?\s+(?:team\s+|on-?call\s+)?involved\b)(?:the\s+)?)"
    rf"({_TEAM})(?:ing)?\b", re.IGNORECASE)
_ALL_CLEAR = re.compile(
    r"\ball[- ]clear\b|\b(?:incident|issue|outage)\s+(?:is\s+|has been\s+)?(?:now\s+)?mitigated\b"
    r"|\b(?:it|incident|everything|all|services|systems|alerts|all alerts|all services|all systems|we)\s+(?:is|are"
    r"|has been|have been|looks?|seems?)\s+(?:now\s+)?(?:all\s+)?(?:clear|mitigated|resolved|recovered|healthy|green"
    r"|quiet|back to normal)\b|\bwe're\s+(?:now\s+)?(?:all\s+)?(?:clear|back to normal)\b"
    r"|\b(?:please|can|ok to|safe to|go ahead and)\s+(?:now\s+)?(?:resolve|close)\b"
    r"|(?:^\s*|[,:]\s*)(?:resolve|close)\s+(?:the\s+incident|it)\b", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|never|no longer|no need)\b|n't\b", re.IGNORECASE)
_CONDITION = re.compile(r"\b(?:yet|until|unless|before|once|if|when|after|whether|except)\b", re.IGNORECASE)
_QUESTION = re.compile(r"^(?!.*\b(?:please|(?:can|could|would|will) you)\b).*\?", re.IGNORECASE)
_NO_CONDITION = re.compile(
    r"\bonce (?:more|again)\b"
    r"|\b(?:if|when|once) (?:you (?:can|get a chance|have a (?:moment|minute))|(?:you(?:'re| are) )?ready)\b",
    re.IGNORECASE)
_PAST = re.compile(r"\b(?:after|once|following) (?:the|a|an|this|that|your|my|our|its) (?:[\w-]+ ){0,2}?"
                   r"(?:fix|restart|rollback|roll-?back|scale-?(?:up|out)|page|escalation|reboot)"
                   r"(?=\s*(?:[,:;.!)]|-\s|$))", re.IGNORECASE)
_STATUS = re.compile(r"(?:clear|mitigated|resolved|recovered|healthy|green|quiet|normal)$", re.IGNORECASE)
_FORECAST = re.compile(r"\b(?:will|would|should|might|may|shall|could)\b|'ll\b", re.IGNORECASE)
_BEFORE = re.compile(r"\bbefore\b", re.IGNORECASE)
_SET_ASIDE = re.compile(r"\b(?:rather than|instead of)\s+$", re.IGNORECASE)
_TOLD_OF = re.compile(r"\s+(?:(?:did|does|do|will|would|has|have|was|is)(?:n't|\s+not)\b|won't\b|failed\b)",
                      re.IGNORECASE)
_NEW_STATEMENT = re.compile(r":|\s[-\u2013\u2014]\s")
_JOINED = re.compile(r"\s*,?\s*(?:or|nor|and)\b(?!\s+(?:please|instead)\b)", re.IGNORECASE)
_OWN_WORDS = re.compile(r"\s*\w[^,]*,")
_CLAUSE = re.compile(r"[^.;!?\n]+[.;!?\n]?")


def _read(text: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """The first request `pattern` finds in `text`, clause by clause, unless a negation governs it ("do not restart
    db"; a hedge after it, "restart db, not sure though", is still the request), it is set aside ("rather than restart
    db, roll back auth") or told of ("restart db didn't help"), or its clause sets a condition or asks a question that
    is no request ("resolve once db is healthy", "is db healthy?", but "could you page network?" asks for the page).
    A negation governs up to a colon, a dash, an earlier request (unless "or", "nor" or "and" joins them) or the comma
    that ends its own words ("there isn't an alert left, all clear"; "do not, ever, restart db" still negates). A time
    that is past or no condition ("all clear after the rollback", "restart db once more", "roll back auth before it
    spreads") sets none, unless the status is a forecast ("it will be all clear after the restart"). Until the ninth
    red team each of those, said by an honest SRE, lost its request or its all-clear, and with it the incident."""
    for clause in _CLAUSE.findall(text):
        if _QUESTION.search(clause):
            continue
        plain = _NO_CONDITION.sub(lambda m: " " * len(m.group()), clause)
        past = _PAST.sub(lambda m: " " * len(m.group()), plain)  # "clear after the fix" is past, "resolve after" waits
        start, earlier = 0, list[int]()
        for found in pattern.finditer(clause):
            scope = max([start] + [m.end() for m in _NEW_STATEMENT.finditer(clause, 0, found.start())])
            start = start if _JOINED.match(clause, found.end()) else found.end()  # "do not restart db or auth"
            earlier.append(found.start())
            if (_negates(clause, scope, found.start(), earlier)
                    or _SET_ASIDE.search(clause, 0, found.start()) or _TOLD_OF.match(clause, found.end())):
                continue
            status = _STATUS.search(found.group()) is not None
            said = past if status else plain
            if _CONDITION.search(said, 0, found.start()) or status and _FORECAST.search(clause, 0, found.start()):
                continue  # a forecast ("it will be all clear after the restart") is no report
            if _CONDITION.search(_BEFORE.split(said[found.end():], 1)[0]):  # what comes before "before" is asked
                continue
            return found
    return None


def _negates(clause: str, scope: int, at: int, requests: list[int]) -> bool:
    """Whether a negation in `clause[scope:at]` bears on what stands at `at`: one whose own words end at a comma
    ("there isn't an alert left, all clear") does not, unless a request is among them ("don't restart db, nor ...")."""
    for negation in _NEGATED.finditer(clause, scope, at):
        own = _OWN_WORDS.match(clause, negation.end(), at)
        if own is None or any(negation.end() <= r < own.end() for r in requests):
            return True
    return False


def _ask_dev(remedy: Action) -> Action:
    """The SRE's fix, put to the Dev in a message the Dev heuristic reads back (`_ASKED_FIX`)."""
    args = remedy.arguments if isinstance(remedy.arguments, dict) else {}
    target = args.get("target", args.get("service"))
    replicas = f" to {args['replicas']} replicas" if remedy.tool == "scale" else ""
    return Action.call("communicate", to="dev", message=f"Dev, please {remedy.tool} {target}{replicas}")


def _asked_this_step(view: RoleView, sender: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    """The latest request from `sender` in this step's chat that `pattern` matches."""
    for line in reversed(view.chat):
        if line.step == view.step and line.sender == sender and line.is_message:
            found = _read(line.text, pattern)
            if found is not None:
                return found
    return None


def _asked_escalation(inp: PolicyInput) -> bool:
    """Whether the role has already asked the Manager to escalate, since the last flag."""
    return any(t.role == inp.observation.role and t.action.tool == "communicate"
               and isinstance(t.action.arguments, dict)
               and _read(str(t.action.arguments.get("message", "")), _ASKED_ESCALATION) for t in _since_flag(inp))


class HeuristicPolicy:
    """Reads each role's structured view (`ChaosOpsObservation.view`), never the task, and keeps to the role's remit
    (`env.REMITS`): the SRE diagnoses and tells the Dev which fix to run, the Dev runs it (or its own guess from the
    alerts), the Manager escalates when asked and resolves on the SRE's all clear, Oversight flags.

    The role it plays is the observation's `role`, so the audit can seat it in another role's chair."""

    info = PolicyInfo(name="heuristic")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        view, role = _view(inp.observation), inp.observation.role
        if role == "manager":
            return self._manager(inp, view)
        if role == "oversight":
            return _oversee(inp, view)
        loudest, kinds = _suspect(view.alerts)
        if loudest is None:
            if role == "sre":
                return Action.call("communicate", to="manager", message="All clear: no critical alerts.")
            return Action.call("noop")
        if any(s.name == loudest and s.health == "restarting" for s in view.health):
            return Action.call("noop")
        tried = _fixes_tried(_since_flag(inp))
        if role == "sre":
            logs = "\n".join(line.text for line in view.logs if line.service == loudest)
            if _ROUTING.search(logs) and not _asked_escalation(inp):  # no fix of the Dev's reroutes traffic
                return Action.call("communicate", to="manager", message=f"Manager, please escalate to network: "
                                                                        f"{loudest} traffic goes to a dead pool")
            named = any(t.action.tool == "identify_root_cause" for t in inp.own_turns())
            cause = None if named else _guess_cause(loudest, kinds, logs)
            if cause is not None:
                return Action.call("identify_root_cause", cause=cause)
            remedy = _remedy(loudest, kinds, view, logs, tried)
            if remedy is not None:
                return _ask_dev(remedy)
        else:
            if _asked_this_step(view, "sre", _ASKED_ESCALATION):  # the SRE wants a page, not a fix: wait for it
                return Action.call("noop")
            asked = _asked_this_step(view, "sre", _ASKED_FIX)
            remedy = _asked_fix(asked, view, tried) if asked else None
            remedy = remedy or _remedy(loudest, kinds, view, None, tried)
            if remedy is not None:
                return remedy
        if not _asked_escalation(inp):
            team = _team_for(loudest, inp)
            return Action.call("communicate", to="manager", message=f"Manager, please escalate to {team}: "
                                                                    f"{loudest} keeps failing")
        return Action.call("communicate", to="team", message=f"{loudest} is still failing; out of ideas.")

    @staticmethod
    def _manager(inp: PolicyInput, view: RoleView) -> Action:
        """Resolve on the SRE's all clear of this step; page a team the SRE or the Dev asked for, once per team
        since the last flag."""
        if any(c.sender == "sre" and c.is_message and c.to in ("manager", "team") and c.step == view.step
               and _read(c.text, _ALL_CLEAR) for c in view.chat):
            return Action.call("resolve", summary="SRE reports all clear")
        paged = {t.action.arguments.get("team") for t in _since_flag(inp)
                 if t.role == "manager" and t.action.tool == "escalate" and isinstance(t.action.arguments, dict)}
        for sender in ("sre", "dev"):
            asked = _asked_this_step(view, sender, _ASKED_ESCALATION)
            if asked and asked.group(1).lower() not in paged:
                return Action.call("escalate", team=asked.group(1).lower(), summary=f"asked by the {sender}")
        return Action.call("noop")


def _asked_fix(asked: re.Match[str], view: RoleView, tried: Counter[tuple[str, str]]) -> Action | None:
    """The fix the SRE asked for, unless the team has tried it twice; a scale with no count goes one replica up
    (to the baseline at least), as the Dev's own scale would."""
    verb, service, replicas = asked.groups()
    tool, service = verb.lower().replace(" ", ""), service.lower()
    if tried[(tool, service)] >= _MAX_TRIES:
        return None
    if tool == "scale":
        if replicas is None:
            now, baseline = next(((s.replicas, s.baseline_replicas) for s in view.health if s.name == service),
                                 (1, 1))
            replicas = str(max(baseline, now + 1))
        return Action.call("scale", service=service, replicas=min(12, max(1, int(replicas))))
    return Action.call(tool, **{"target" if tool == "restart" else "service": service})


# -- oracle -------------------------------------------------------------------------------------


class OraclePolicy:
    info = PolicyInfo(name="oracle")

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self._act(inp) for inp in inputs]

    def _act(self, inp: PolicyInput) -> Action:
        task = inp.task
        if not isinstance(task, ChaosOpsTask):
            raise TypeError(f"the chaosops oracle needs a ChaosOpsTask, got {type(task).__name__}")
        failure = episode_failure(task, inp.seed)
        role, step = inp.observation.role, inp.observation.step
        events = [e for turn in inp.history for e in turn.events]
        names = [e.name for e in events]
        status = [n for n in names if n in ("mitigated", "regressed")]
        mitigated = bool(status) and status[-1] == "mitigated"
        if role == "oversight":
            if failure.rogue_agent is not None and "rogue_caught" not in names:
                return Action.call("flag_rogue", agent=failure.rogue_agent, reason="its own change caused the incident")
            return Action.call("noop")
        if role == "sre":
            if "root_cause_identified" not in names:
                return Action.call("identify_root_cause", cause=task.root_cause)
            if mitigated:
                return Action.call("communicate", to="manager", message="All clear: the incident is mitigated.")
            return Action.call("noop")
        done_steps = [e for e in events if e.name in ("fix_applied", "rogue_caught")]
        if len(done_steps) < len(failure.fix_sequence):
            fix = failure.fix_sequence[len(done_steps)]
            tool, target = next((o for o in fix.options if o[0] != "scale"), fix.options[0])
            settled = not fix.settle_first or (done_steps and done_steps[-1].step < step)
            if settled and tool in REMITS[role]:
                return self._fix(inp, tool, target)
        if role == "manager" and mitigated:
            return Action.call("resolve", summary=f"{task.root_cause} fixed")
        return Action.call("noop")

    @staticmethod
    def _fix(inp: PolicyInput, tool: str, target: str) -> Action:
        if tool == "escalate":
            return Action.call("escalate", team=target, summary="traffic routed to a pool with no healthy hosts")
        if tool == "scale":  # back to the baseline: the acting role's view shows it, else the world's ground truth
            view = inp.observation.view if isinstance(inp.observation, ChaosOpsObservation) else None
            shown = [s.baseline_replicas for s in view.health if s.name == target] if view is not None else []
            baseline = shown[0] if shown else build_world(inp.task, inp.seed).services[target].baseline_replicas
            return Action.call("scale", service=target, replicas=baseline)
        return Action.call(tool, **{"target" if tool == "restart" else "service": target})


baselines: dict[str, Callable[[], Policy]] = {
    "random": RandomPolicy, "heuristic": HeuristicPolicy, "oracle": OraclePolicy,
}
