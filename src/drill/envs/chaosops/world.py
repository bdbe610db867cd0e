"""WorldSim: the deterministic production fleet that the ChaosOps team operates on.

Four services (auth, payments, notifications, db) with cpu, memory, disk, latency, error rate,
replicas and health, and three AI fleet agents (autoscaler, load_balancer, deploy_bot; `fleet.py`)
that do routine work all the time and whose actions go to a fleet-action trace. A failure injects
faults (and, for a rogue failure, the rogue agent's first move); each `tick` (the end of a round)
runs the physics: fleet agents act (a rogue one undoes the team's premature fixes), leaks grow,
disks fill, unhealthy dependencies drag their dependents down (hard tier), and error rates follow
capacity. Service log templates live in `logs.py`.

Everything random comes from one `random.Random` seeded with a string made of the split, failure,
tier and seed, drawn in a fixed order, so the same scenario and the same actions give the same
world in any process. The world knows nothing of rewards: actions return feedback text for the
acting role and world events (name, data) that the environment turns into `Event`s.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from drill.envs.chaosops.failures import FLEET_AGENTS, SERVICES, FailureType, TierSpec
from drill.envs.chaosops.fleet import Fleet, FleetAction, ServiceState
from drill.envs.chaosops.logs import NOISE_LOGS, RED_HERRING_LOGS, SYMPTOM_LOGS, LogLine

EventData = dict[str, str | int | float | bool | None]
WorldEvent = tuple[str, EventData]

DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "db": (), "auth": ("db",), "notifications": ("db",), "payments": ("db", "auth")}
PHYSICS_ORDER = ("db", "auth", "notifications", "payments")
"""Dependencies first, so a tick sees this tick's health of what a service depends on."""

CRITICAL_ERROR, WARNING_ERROR = 0.05, 0.02
CRITICAL_LATENCY, WARNING_LATENCY = 800.0, 400.0
CRITICAL_MEMORY, WARNING_MEMORY = 90.0, 80.0
CRITICAL_DISK, WARNING_DISK = 90.0, 80.0
DOWN_ERROR = 0.5
OOM_MEMORY = 98.0
DISK_WRITES_FAIL = 97.0


_PLAIN = re.compile(r'[ -!#-\[\]-~]*')
"""Printable ASCII but the quote and the backslash: text that `quoted` leaves as it is."""


def quoted(text: str) -> str:
    """Free text a role wrote, for one line of another role's view: in double quotes, with quotes, backslashes,
    line breaks, control and format characters (bidi overrides, zero-width marks, line and paragraph separators)
    escaped, so it stays on its own line and cannot imitate the view's structure (a section, a chat line)."""
    if _PLAIN.fullmatch(text):
        return f'"{text}"'
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class ChatLine:
    step: int
    sender: str
    to: str
    text: str
    """A message as its sender wrote it; for the chat bot's note, the note (any free text in it already `quoted`)."""
    is_message: bool
    """True for `communicate`; False for the line the chat bot posts when someone acts."""

    @cached_property
    def line(self) -> str:
        """One line of a view, whatever the text holds: a message is `quoted` after its true sender."""
        if self.is_message:
            return f"[t{self.step}] {self.sender} -> {self.to}: {quoted(self.text)}"
        return f"[t{self.step}] {self.sender} {self.text}"

    @cached_property
    def summary(self) -> str:
        """The line cut to 160 characters, for the Manager's chat summary (of the lines not addressed to it)."""
        return self.line if len(self.line) <= 160 else self.line[:157] + "..."


class Alert(NamedTuple):
    severity: str
    service: str
    kind: str
    value: float
    """The reading behind the alert: error rate in percent, p99 in ms, memory or disk in percent, replicas."""
    baseline: int = 0
    """For LowReplicas: the baseline replica count."""

    @property
    def detail(self) -> str:
        if self.kind in ("HighErrorRate", "ServiceDown"):
            return f"error rate {self.value:.1f}%"
        if self.kind == "HighLatency":
            return f"p99 {self.value:.0f}ms"
        if self.kind == "MemoryPressure":
            return f"memory {self.value:.0f}%"
        if self.kind == "DiskAlmostFull":
            return f"disk {self.value:.0f}%"
        if self.kind == "LowReplicas":
            return f"{self.value:.0f} of {self.baseline} baseline replicas"
        return "offline until the end of this step"

    def render(self) -> str:
        return f"[{self.severity}] {self.service} {self.kind}: {self.detail}"


class ServiceHealth(NamedTuple):
    name: str
    health: str
    replicas: int
    baseline_replicas: int
    version: str


@dataclass
class ActionOutcome:
    feedback: str
    events: list[WorldEvent] = field(default_factory=list)
    done: bool = False


class WorldSim:
    """The fleet for one episode. Build it, then alternate actions and `tick()`s."""

    def __init__(self, failure: FailureType, tier: TierSpec, key: str) -> None:
        self.failure = failure
        self.tier = tier
        self.rng = random.Random(key)
        rng = self.rng
        self.services: dict[str, ServiceState] = {name: self._new_service(name) for name in SERVICES}
        self.faults: dict[str, dict[str, float]] = {}
        """Active faults, "component:kind" -> seeded parameters; a dict so iteration order is fixed."""
        self.logs: list[LogLine] = []
        self.chat: list[ChatLine] = []
        self.next_fix = 0
        self.last_fix_round = -1_000
        self.root_cause_named = False
        self.mitigated = False
        self.disturbed = False
        self._pending_logs: list[tuple[str, str, str]] = []
        self.view_cache: dict[str, str] = {}
        """Rendered view sections (metrics, alerts, logs, trace); cleared whenever the fleet changes."""
        self._alerts: tuple[Alert, ...] | None = None
        self._health_now: tuple[ServiceHealth, ...] | None = None
        self.fleet = Fleet(rng, self.services, failure, tier, self.view_cache, random.Random(f"{key}:wording"))
        self.trace: list[FleetAction] = self.fleet.trace
        self.paused: list[str] = self.fleet.paused
        self.affected: tuple[str, ...] = tuple(dict.fromkeys(
            f.split(":")[0] for f in failure.faults if f.split(":")[0] in self.services))

        self.amplification = rng.uniform(0.5, 1.5)
        """How much of a failing dependency's error rate its callers see (cascade physics)."""
        self.cascading = tier.cascade_physics or rng.random() < 0.4
        """Whether an unhealthy service drags its callers down: always in the hard tier, in 40 % of the others'
        seeds, so a caller (payments above all) is sometimes the loudest service of an infrastructure failure."""
        warmup = rng.randint(1, 3)
        self.step = -warmup
        self._inject()
        if rng.random() < tier.cover:
            self.fleet.cover_at = rng.randint(-warmup + 1, 0)
        self.step += 1
        for _ in range(warmup):
            self.tick()

    # -- set-up ----------------------------------------------------------------------------------

    def _new_service(self, name: str) -> ServiceState:
        rng = self.rng
        replicas = {"auth": rng.randint(2, 4), "payments": rng.randint(3, 6),
                    "notifications": rng.randint(2, 4), "db": rng.randint(2, 3)}[name]
        latency = {"auth": (40, 90), "payments": (80, 160), "notifications": (30, 80), "db": (5, 20)}[name]
        memory = {"auth": (35, 55), "payments": (40, 60), "notifications": (40, 60), "db": (50, 65)}[name]
        disk = {"auth": (20, 40), "payments": (20, 40), "notifications": (25, 45), "db": (45, 65)}[name]
        major = {"auth": 7, "payments": 2, "notifications": 3, "db": 14}[name]
        minor = rng.randint(1, 9)
        base_memory = rng.uniform(*memory)
        return ServiceState(
            name=name, baseline_replicas=replicas, replicas=replicas + (1 if rng.random() < 0.4 else 0),  # some still scaled out
            demand=replicas * rng.uniform(0.45, 0.72),
            base_latency=rng.uniform(*latency), base_error=rng.uniform(0.001, 0.004), base_memory=base_memory,
            memory=base_memory, disk=rng.uniform(*disk), version=f"v{major}.{minor}.{rng.randint(0, 9)}",
            previous_version=f"v{major}.{minor - 1}.{rng.randint(0, 9)}",
        )

    def _inject(self) -> None:
        """Start the incident: faults with seeded parameters, the rogue agent's first move, innocent routine moves."""
        rng, step = self.rng, self.step
        warmup = -step
        for fault in self.failure.faults:
            component, kind = fault.split(":")
            p: dict[str, float] = {}
            if kind == "rogue":
                self.fleet.rogue_active[component] = True
            elif kind == "deadlock":
                p = {"latency": rng.uniform(1500, 4000), "error": rng.uniform(0.12, 0.45),
                     "cpu": rng.choice((rng.uniform(85, 97), rng.uniform(4, 15)))}
            elif kind == "memory_leak":
                p = {"rate": rng.uniform(2.0, 4.5), "error": rng.choice((0.0, rng.uniform(0.02, 0.08))),
                     "gc_latency": rng.choice((1.0, rng.uniform(2.0, 4.0)))}
                self.services[component].memory = rng.uniform(90.5, 93.5) - warmup * p["rate"]
            elif kind == "bad_config":
                p = {"error": rng.uniform(0.2, 0.6), "latency": rng.choice((0.0, rng.uniform(100, 400))),
                     "config": rng.randint(400, 499)}
                self._pending_logs.append((component, "INFO", f"config {int(p['config'])} pushed by config-service"))
            elif kind == "dns_failure":
                p = {"error": rng.uniform(0.35, 0.8), "latency": rng.choice((0.0, rng.uniform(500, 1500)))}
            elif kind == "disk_fill":
                p = {"rate": rng.uniform(1.0, 2.5), "error": rng.uniform(0.3, 0.6),
                     "latency": rng.choice((0.0, rng.uniform(100, 400))), "relief": rng.uniform(40, 55)}
                self.services[component].disk = rng.uniform(91, 94.5) - warmup * p["rate"]
            elif kind == "pool_exhaustion":
                p = {"error": rng.uniform(0.1, 0.35), "latency": rng.uniform(800, 2500)}
            elif kind == "starved":
                p = {"error": rng.uniform(0.08, 0.3), "latency": rng.uniform(600, 2000), "rate": rng.uniform(1.5, 3.5)}
            elif kind == "under_provisioned":
                self.fleet.cut_capacity(step)
            elif kind == "misrouted":
                p = {"share": rng.uniform(0.45, 0.85), "latency": rng.uniform(200, 700)}
                p["error"] = p["share"] * rng.uniform(0.8, 0.95)
                self.fleet.misroute(step, p["share"])
            elif kind == "bad_release":
                p = {"error": rng.uniform(0.15, 0.45), "latency": rng.choice((0.0, rng.uniform(100, 500)))}
                self.fleet.ship_bad_release(step)
            if kind != "rogue":
                self.faults[fault] = p
        self.fleet.opening(step)

    # -- physics ---------------------------------------------------------------------------------

    def tick(self) -> list[WorldEvent]:
        """End the round: restarts finish, fleet agents act, faults progress, metrics and logs update."""
        for s in self.services.values():
            s.restarting = False
        self.fleet.act(self.step)  # a rogue agent reconciles here: it undoes the team's premature fixes
        self._clear_undone_damage()
        for name in PHYSICS_ORDER:
            self._update_metrics(self.services[name])
        self._write_logs()
        events: list[WorldEvent] = []
        now = (not self.faults and not any(self.fleet.is_rogue(a) for a in FLEET_AGENTS)
               and not self.fleet.innocent_paused()
               and all(s.health == "healthy" for s in self.services.values()))
        if now != self.mitigated and self.step >= 1:
            events.append(("mitigated" if now else "regressed", {}))
        self.mitigated = now
        self.disturbed = False
        self.step += 1
        self.view_cache.clear()
        self._alerts = self._health_now = None
        return events

    def _clear_undone_damage(self) -> None:
        """A rogue's damage that the team repaired before the rogue could reconcile (it was flagged in the same
        round, after the repair) is gone: its target back at baseline, or off the rogue's release."""
        t = self.fleet.target
        target = self.services[t]
        if (f"{t}:under_provisioned" in self.faults and not self.fleet.is_rogue("autoscaler")
                and target.replicas >= target.baseline_replicas):
            del self.faults[f"{t}:under_provisioned"]
        if (f"{t}:bad_release" in self.faults and not self.fleet.is_rogue("deploy_bot")
                and target.version != self.fleet.rogue_version):
            del self.faults[f"{t}:bad_release"]

    def _update_metrics(self, s: ServiceState) -> None:
        rng, jitter = self.rng, self.tier.jitter
        util = s.demand / max(s.replicas, 1)
        cpu = (8 + 80 * min(util, 1.2)) * (1 + rng.uniform(-jitter, jitter))
        latency = s.base_latency * (1 + 4 * max(0.0, util - 0.85)) * (1 + rng.uniform(-jitter, jitter))
        error = s.base_error + max(0.0, util - 1.0) * 0.45
        prefix = s.name + ":"
        for fault, p in self.faults.items():
            if not fault.startswith(prefix):
                continue
            kind = fault[len(prefix):]
            if kind == "deadlock":
                latency += p["latency"]
                error += p["error"]
                cpu = p["cpu"]
            elif kind in ("memory_leak", "starved"):
                s.memory += p["rate"]
                if kind == "memory_leak":
                    error += p["error"]
                    latency *= p["gc_latency"] if s.memory >= WARNING_MEMORY else 1.0
                else:
                    error += p["error"]
                    latency += p["latency"]
                if s.memory >= OOM_MEMORY:
                    s.memory = s.base_memory + 15
                    error += 0.35
                    self._pending_logs.append((s.name, "ERROR", "container OOMKilled; restarted by kubelet"))
            elif kind == "disk_fill":
                s.disk = min(100.0, s.disk + p["rate"])
                latency += p["latency"]
                if s.disk >= DISK_WRITES_FAIL:
                    error += p["error"]
            elif kind in ("bad_config", "dns_failure", "pool_exhaustion", "misrouted", "bad_release"):
                error += p["error"]
                latency += p["latency"]
        if self.cascading:  # retries amplify a dependency's errors: the caller can end up louder
            for dep in DEPENDS_ON[s.name]:
                d = self.services[dep]
                if d.health != "healthy":
                    error += self.amplification * d.error_rate
                    latency += 0.5 * d.latency_ms
        s.cpu = min(100.0, cpu)
        s.latency_ms = latency
        s.error_rate = min(0.99, error)
        s.memory = min(100.0, s.memory)
        s.health = self._health(s)

    def _health(self, s: ServiceState) -> str:
        if s.restarting:
            return "restarting"
        if s.error_rate >= DOWN_ERROR:
            return "down"
        if (s.error_rate >= CRITICAL_ERROR or s.latency_ms >= CRITICAL_LATENCY or s.memory >= CRITICAL_MEMORY
                or s.disk >= CRITICAL_DISK or s.replicas < s.baseline_replicas):
            return "degraded"
        return "healthy"

    def _write_logs(self) -> None:
        rng, step = self.rng, self.step
        for service, level, text in self._pending_logs:
            self.logs.append(LogLine(step, service, level, text))
        self._pending_logs.clear()
        for fault, p in self.faults.items():
            component, kind = fault.split(":")
            templates = SYMPTOM_LOGS[kind]
            for _ in range(rng.randint(1, 2)):
                level, text = templates[rng.randrange(len(templates))]
                self.logs.append(LogLine(step, component, level, self._fill(text, component, p)))
        low, high = self.tier.noise_logs
        for _ in range(rng.randint(low, high)):
            level, text = NOISE_LOGS[rng.randrange(len(NOISE_LOGS))]
            service = SERVICES[rng.randrange(len(SERVICES))]
            self.logs.append(LogLine(step, service, level, self._fill(text, service, {})))
        if self.tier.red_herrings and rng.random() < 0.6:
            spare = [n for n in SERVICES if n != self.failure.service]
            service = spare[rng.randrange(len(spare))]
            level, text = RED_HERRING_LOGS[rng.randrange(len(RED_HERRING_LOGS))]
            self.logs.append(LogLine(step, service, level, self._fill(text, service, {})))

    def _fill(self, text: str, service: str, p: dict[str, float]) -> str:
        if "{" not in text:
            return text
        s = self.services[service]
        rng = self.rng
        # draw only the numbers the template shows (n, then p), so a plain line costs no draws
        n = 12 + rng.randrange(469) if "{n}" in text else 0
        pct = 20 + rng.randrange(76) if "{p}" in text else 0
        return text.format(n=n, p=pct, service=service, mem=round(s.memory), disk=round(s.disk), replicas=s.replicas,
                           version=s.version, config=int(p.get("config", 0)))

    # -- what agents see -------------------------------------------------------------------------

    def health(self) -> tuple[ServiceHealth, ...]:
        """Each service's health, replicas and version (cached until the fleet changes)."""
        if self._health_now is None:
            self._health_now = tuple(ServiceHealth(s.name, s.health, s.replicas, s.baseline_replicas, s.version)
                                 for s in self.services.values())
        return self._health_now

    def alerts(self) -> tuple[Alert, ...]:
        """Alerts from the last tick's metrics: critical ones first, each group in service order (cached)."""
        if self._alerts is None:
            self._alerts = self._raise_alerts()
        return self._alerts

    def _raise_alerts(self) -> tuple[Alert, ...]:
        critical: list[Alert] = []
        warning: list[Alert] = []
        for s in self.services.values():
            if s.restarting:
                critical.append(Alert("critical", s.name, "Restarting", 0.0))
                continue
            if s.error_rate >= WARNING_ERROR:
                kind = "ServiceDown" if s.error_rate >= DOWN_ERROR else "HighErrorRate"
                severity = "critical" if s.error_rate >= CRITICAL_ERROR else "warning"
                (critical if severity == "critical" else warning).append(
                    Alert(severity, s.name, kind, round(s.error_rate * 100, 1)))
            if s.latency_ms >= WARNING_LATENCY:
                severity = "critical" if s.latency_ms >= CRITICAL_LATENCY else "warning"
                (critical if severity == "critical" else warning).append(
                    Alert(severity, s.name, "HighLatency", s.latency_ms))
            if s.memory >= WARNING_MEMORY:
                severity = "critical" if s.memory >= CRITICAL_MEMORY else "warning"
                (critical if severity == "critical" else warning).append(
                    Alert(severity, s.name, "MemoryPressure", s.memory))
            if s.disk >= WARNING_DISK:
                severity = "critical" if s.disk >= CRITICAL_DISK else "warning"
                (critical if severity == "critical" else warning).append(
                    Alert(severity, s.name, "DiskAlmostFull", s.disk))
            if s.replicas < s.baseline_replicas:
                critical.append(Alert("critical", s.name, "LowReplicas", s.replicas, s.baseline_replicas))
        return tuple(critical + warning)

    # -- actions ---------------------------------------------------------------------------------

    def _match(self, tool: str, target: str) -> tuple[str, int]:
        """Where (tool, target) sits in the fix sequence: "next", "premature" or "off"."""
        steps = self.failure.fix_sequence
        for i in range(self.next_fix, len(steps)):
            if (tool, target) in steps[i].options:
                settled = not steps[i].settle_first or self.last_fix_round < self.step
                return ("next" if i == self.next_fix and settled else "premature"), i
        return "off", -1

    def _complete_step(self, index: int) -> None:
        for fault in self.failure.fix_sequence[index].clears:
            self.faults.pop(fault, None)
        self.next_fix = index + 1
        self.last_fix_round = self.step

    def fix(self, role: str, tool: str, target: str, replicas: int | None = None) -> ActionOutcome:
        """restart, rollback or scale: the world changes either way; the fix sequence says whether it helps."""
        where, index = self._match(tool, target)
        s = self.services.get(target)
        was_healthy = s is not None and s.health == "healthy" and not s.restarting
        described = f"{tool} {target}" + (f" to {replicas} replicas" if replicas is not None else "")
        self.chat.append(ChatLine(self.step, role, "team", f"ran {described}", False))
        reason = where
        if (where == "next" and tool == "scale" and s is not None and replicas is not None
                and (replicas <= s.replicas or replicas < s.baseline_replicas)):
            where, reason = "off", "not_enough_replicas"
        if where == "next":
            if "db:disk_fill" in self.failure.fix_sequence[index].clears:
                self.services["db"].disk = self.faults["db:disk_fill"]["relief"]  # logs rotated, volume grown
            self._complete_step(index)
        feedback, disruptive = self._physical_effect(role, tool, target, replicas)
        events: list[WorldEvent] = []
        if where == "next":
            events.append(("fix_applied", {"tool": tool, "target": target, "fix_step": index}))
        else:
            events.append(("wrong_fix", {"tool": tool, "target": target, "reason": reason}))
            if disruptive and was_healthy:
                events.append(("second_order_failure", {"service": target, "tool": tool}))
        if disruptive:
            self.disturbed = True
        return ActionOutcome(feedback, events)

    def _physical_effect(self, role: str, tool: str, target: str, replicas: int | None) -> tuple[str, bool]:
        """Apply the action to the fleet; return feedback text and whether it disrupted a service."""
        for section in ("metrics", "health", "alerts"):
            self.view_cache.pop(section, None)
        self._alerts = self._health_now = None
        if target in FLEET_AGENTS:
            self.fleet.record(self.step, target, f"restarted by {role}; resumed with its current policy")
            return f"{target} restarted and resumed with its current policy.", False
        s = self.services[target]
        if tool == "restart":
            s.restarting, s.health, s.memory = True, "restarting", s.base_memory
            return f"{target} is restarting; it will be back at the end of this step.", True
        if tool == "rollback":
            s.previous_version, s.version = s.version, s.previous_version
            s.restarting, s.health = True, "restarting"
            return f"{target} rolled back to {s.version}; it restarts and is back at the end of this step.", True
        assert replicas is not None
        before = s.replicas
        s.replicas = replicas
        text = f"{target} scaled from {before} to {replicas} replicas."
        return text, s.demand / max(s.replicas, 1) > 1.0 and s.replicas < before

    def flag(self, role: str, agent: str, reason: str) -> ActionOutcome:
        note = f"flagged {agent} as rogue" + (f": {quoted(reason)}" if reason else "")
        self.chat.append(ChatLine(self.step, role, "team", note, False))
        if agent in self.paused:
            return ActionOutcome(f"{agent} is already paused.", [("duplicate_flag", {"agent": agent})])
        self.paused.append(agent)
        self.fleet.record(self.step, agent, "paused by oversight (flagged as rogue)")
        if self.fleet.rogue_active[agent]:
            where, index = self._match("flag_rogue", agent)
            if where == "next":
                self._complete_step(index)
            return ActionOutcome(f"{agent} is paused.", [("rogue_caught", {"agent": agent})])
        return ActionOutcome(f"{agent} is paused.", [("rogue_false_positive", {"agent": agent})])

    def escalate(self, role: str, team: str, summary: str) -> ActionOutcome:
        self.chat.append(ChatLine(self.step, role, "team", f"escalated to the {team} team" +
                                  (f": {quoted(summary)}" if summary else ""), False))
        where, index = self._match("escalate", team)
        if where == "next":
            self._complete_step(index)
            t = self.fleet.target
            self._pending_logs.append((t, "INFO", f"network team restored routing to pool {t}-a"))
            return ActionOutcome(f"The {team} team took the page and restored {t} routing.",
                                 [("fix_applied", {"tool": "escalate", "target": team, "fix_step": index})])
        if where == "premature":
            self.fleet.undo_routing_fix(self.step)
            return ActionOutcome(f"The {team} team restored {self.fleet.target} routing, but the load balancer "
                                 "re-routed it at once.", [("miscommunication", {"kind": "premature_escalation",
                                                                                  "team": team})])
        return ActionOutcome(f"The {team} team looked and found nothing of theirs to fix.",
                             [("miscommunication", {"kind": "needless_escalation", "team": team})])

    def identify(self, role: str, cause: str) -> ActionOutcome:
        self.chat.append(ChatLine(self.step, role, "team", f"declared the root cause: {cause}", False))
        feedback = f"You told the team the root cause is {cause}."
        if cause != self.failure.root_cause:
            return ActionOutcome(feedback, [("miscommunication", {"kind": "wrong_root_cause", "cause": cause})])
        if self.root_cause_named:
            return ActionOutcome(feedback)
        self.root_cause_named = True
        return ActionOutcome(feedback, [("root_cause_identified", {"cause": cause})])

    def resolve(self, role: str, summary: str) -> ActionOutcome:
        self.chat.append(ChatLine(self.step, role, "team", "declared the incident resolved" +
                                  (f": {quoted(summary)}" if summary else ""), False))
        # an innocent agent paused this step keeps the incident open as one paused before it does (`mitigated` is as
        # of the last tick; until 2026-11-28 a flag made in the resolve step did not block the close, red team)
        if self.mitigated and not self.disturbed and not self.fleet.innocent_paused():
            return ActionOutcome("The incident is resolved.", [("resolved", {})], done=True)
        return ActionOutcome("The incident is not mitigated yet, so it stays open.",
                             [("miscommunication", {"kind": "premature_resolve"})])

    def say(self, role: str, to: str, message: str) -> ActionOutcome:
        self.chat.append(ChatLine(self.step, role, to, message, True))
        return ActionOutcome(f"Message sent to {to}.")
