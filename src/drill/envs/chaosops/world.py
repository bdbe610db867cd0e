"""WorldSim: the deterministic production fleet that the ChaosOps team operates on.

Four services (auth, payments, notifications, db) with cpu, memory, disk, latency, error rate,
replicas and health, and three AI fleet agents (autoscaler, load_balancer, deploy_bot) whose
actions go to a fleet-action trace. A failure injects faults; each `tick` (the end of a round)
runs the physics: leaks grow, disks fill, rogue agents keep at it, unhealthy dependencies drag
their dependents down (hard tier), and error rates follow capacity.

Everything random comes from one `random.Random` seeded with a string made of the split, failure,
tier and seed, drawn in a fixed order, so the same scenario and the same actions give the same
world in any process. The world knows nothing of rewards: actions return feedback text for the
acting role and world events (name, data) that the environment turns into `Event`s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property

from drill.envs.chaosops.failures import FLEET_AGENTS, SERVICES, FailureType, TierSpec

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


@dataclass
class ServiceState:
    name: str
    baseline_replicas: int
    replicas: int
    demand: float
    """Load in replica units: above `replicas` the service is overloaded."""
    base_latency: float
    base_error: float
    base_memory: float
    memory: float
    disk: float
    version: str
    previous_version: str
    cpu: float = 0.0
    latency_ms: float = 0.0
    error_rate: float = 0.0
    health: str = "healthy"
    restarting: bool = False


@dataclass(frozen=True)
class LogLine:
    step: int
    service: str
    level: str
    text: str

    @cached_property
    def line(self) -> str:
        return f"[t{self.step}] {self.service} {self.level} {self.text}"


@dataclass(frozen=True)
class FleetAction:
    step: int
    agent: str
    text: str

    @cached_property
    def line(self) -> str:
        return f"[t{self.step}] {self.agent}: {self.text}"


@dataclass(frozen=True)
class ChatLine:
    step: int
    sender: str
    to: str
    text: str
    is_message: bool
    """True for `communicate`; False for the line the chat bot posts when someone acts."""

    @cached_property
    def line(self) -> str:
        if self.is_message:
            return f"[t{self.step}] {self.sender} -> {self.to}: {self.text}"
        return f"[t{self.step}] {self.sender} {self.text}"

    @cached_property
    def summary(self) -> str:
        """The line cut to 160 characters, for the Manager's chat summary."""
        return self.line if len(self.line) <= 160 else self.line[:157] + "..."


@dataclass(frozen=True)
class Alert:
    severity: str
    service: str
    kind: str
    detail: str

    def render(self) -> str:
        return f"[{self.severity}] {self.service} {self.kind}: {self.detail}"


@dataclass
class ActionOutcome:
    feedback: str
    events: list[WorldEvent] = field(default_factory=list)
    done: bool = False


_NOISE_LOGS = (
    ("INFO", "health check passed"), ("INFO", "served {n} requests in the last minute"),
    ("INFO", "connection pool at {p}% of max"), ("INFO", "cache hit ratio {p}%"),
    ("DEBUG", "gc pause {n}ms"), ("INFO", "rotated access log"), ("INFO", "TLS session resumed for {n} clients"),
)
_RED_HERRING_LOGS = (
    ("WARN", "config reload: unknown key 'legacy_sso' ignored"),
    ("ERROR", "dns lookup for metrics-exporter.ext timed out (retry ok)"),
    ("WARN", "deploy pipeline: canary for {version} paused awaiting approval"),
    ("ERROR", "1 request failed: upstream reset (retried, ok)"),
    ("WARN", "slow query 1.{n}s on analytics_report"),
    ("WARN", "memory usage grew {p}% after cache warm-up"),
    ("ERROR", "certificate for internal-admin expires in 9 days"),
)
_SYMPTOM_LOGS: dict[str, tuple[tuple[str, str], ...]] = {
    "deadlock": (("ERROR", "deadlock detected between transactions on table orders"),
                 ("ERROR", "lock wait timeout exceeded; {n} queries waiting"),
                 ("WARN", "transaction {n} rolled back after lock timeout")),
    "memory_leak": (("WARN", "heap usage {mem}%, gc pause {n}ms"),
                    ("WARN", "retained objects in webhook cache keep growing ({n}k entries)"),
                    ("ERROR", "allocation failure, full gc did not free memory")),
    "bad_config": (("ERROR", "token validation failed: invalid value for token_ttl in config {config}"),
                   ("ERROR", "login rejected: signing key id not found in config {config}"),
                   ("WARN", "config {config} loaded with 2 schema errors")),
    "dns_failure": (("ERROR", "dns: SERVFAIL resolving db.internal"),
                    ("ERROR", "cannot connect to db.internal: name resolution failed"),
                    ("WARN", "resolver cache entry for db.internal is stale")),
    "disk_fill": (("WARN", "data volume {disk}% full"),
                  ("ERROR", "could not extend file: no space left on device"),
                  ("WARN", "write-ahead log archive {n} files behind")),
    "pool_exhaustion": (("ERROR", "connection pool exhausted ({n}/{n} in use)"),
                        ("ERROR", "too many clients already; rejecting connection"),
                        ("WARN", "connection wait queue length {n}")),
    "starved": (("ERROR", "db connection timeout; {n} jobs requeued"),
                ("WARN", "delivery queue backlog {n}k messages"),
                ("ERROR", "worker stalled waiting for db connection")),
    "under_provisioned": (("WARN", "request queue saturated on {replicas} replica(s)"),
                          ("ERROR", "503 returned: no free workers"),
                          ("WARN", "p99 latency above SLO for checkout")),
    "misrouted": (("ERROR", "upstream connect error: pool payments-b has 0 healthy hosts"),
                  ("ERROR", "503 from edge for {p}% of checkout requests"),
                  ("WARN", "retry budget exhausted for payments-b")),
    "bad_release": (("ERROR", "NullPointerException in CheckoutHandler ({version})"),
                    ("ERROR", "500 on POST /charge after release {version}"),
                    ("WARN", "schema mismatch: field 'currency_minor' missing ({version})")),
}


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
        self.rogue_active: dict[str, bool] = dict.fromkeys(FLEET_AGENTS, False)
        self.paused: list[str] = []
        self.logs: list[LogLine] = []
        self.trace: list[FleetAction] = []
        self.chat: list[ChatLine] = []
        self.next_fix = 0
        self.last_fix_round = -1_000
        self.root_cause_named = False
        self.mitigated = False
        self.disturbed = False
        self._pending_logs: list[tuple[str, str, str]] = []
        self.view_cache: dict[str, str] = {}
        """Rendered view sections (metrics, alerts, logs, trace); cleared whenever the fleet changes."""
        self.affected: tuple[str, ...] = tuple(dict.fromkeys(
            f.split(":")[0] for f in failure.faults if f.split(":")[0] in self.services))
        self.cut_to = 0
        self.rogue_version = ""

        self.amplification = rng.uniform(0.5, 1.5)
        """How much of a failing dependency's error rate its callers see (hard tier's cascade physics)."""
        warmup = rng.randint(1, 3)
        self.step = -warmup
        self._inject()
        self.red_herring_at = (rng.randint(-warmup + 1, 0) if tier.red_herrings and rng.random() < 0.8 else None)
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
            name=name, baseline_replicas=replicas, replicas=replicas, demand=replicas * rng.uniform(0.45, 0.72),
            base_latency=rng.uniform(*latency), base_error=rng.uniform(0.001, 0.004), base_memory=base_memory,
            memory=base_memory, disk=rng.uniform(*disk), version=f"v{major}.{minor}.{rng.randint(0, 9)}",
            previous_version=f"v{major}.{minor - 1}.{rng.randint(0, 9)}",
        )

    def _inject(self) -> None:
        """Start the incident: faults with seeded parameters, and the rogue agent's first move."""
        rng, step = self.rng, self.step
        warmup = -step
        for fault in self.failure.faults:
            component, kind = fault.split(":")
            p: dict[str, float] = {}
            if kind == "rogue":
                self.rogue_active[component] = True
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
                payments = self.services[component]
                self.cut_to = 1 if payments.baseline_replicas <= 4 else 2
                savings = rng.randint(180, 620)
                self._record(step, "autoscaler", f"scaled payments {payments.replicas} -> {self.cut_to} "
                             f"(policy: cost_optimization; est. savings ${savings}/day)")
                payments.replicas = self.cut_to
            elif kind == "misrouted":
                p = {"share": rng.uniform(0.45, 0.85), "latency": rng.uniform(200, 700)}
                p["error"] = p["share"] * rng.uniform(0.8, 0.95)
                self._record(step, "load_balancer", f"routed {p['share']:.0%} of payments traffic to pool "
                             "payments-b (pool health: 0/3 hosts)")
            elif kind == "bad_release":
                p = {"error": rng.uniform(0.15, 0.45), "latency": rng.choice((0.0, rng.uniform(100, 500)))}
                payments = self.services[component]
                self.rogue_version = f"v2.{rng.randint(10, 19)}.0-rc{rng.randint(1, 4)}"
                payments.previous_version, payments.version = payments.version, self.rogue_version
                self._record(step, "deploy_bot", f"deployed payments {self.rogue_version} "
                             f"(review: skipped; tests: {rng.randint(2, 6)} failing)")
            if kind != "rogue":
                self.faults[fault] = p

    # -- physics ---------------------------------------------------------------------------------

    def tick(self) -> list[WorldEvent]:
        """End the round: restarts finish, fleet agents act, faults progress, metrics and logs update."""
        for s in self.services.values():
            s.restarting = False
        self._fleet_agents_act()
        for name in PHYSICS_ORDER:
            self._update_metrics(self.services[name])
        self._write_logs()
        events: list[WorldEvent] = []
        now = (not self.faults and not any(self.rogue_active[a] for a in FLEET_AGENTS if a not in self.paused)
               and all(s.health == "healthy" for s in self.services.values()))
        if now != self.mitigated and self.step >= 1:
            events.append(("mitigated" if now else "regressed", {}))
        self.mitigated = now
        self.disturbed = False
        self.step += 1
        self.view_cache.clear()
        return events

    def _update_metrics(self, s: ServiceState) -> None:
        rng, jitter = self.rng, self.tier.jitter
        util = s.demand / max(s.replicas, 1)
        cpu = (8 + 80 * min(util, 1.2)) * (1 + rng.uniform(-jitter, jitter))
        latency = s.base_latency * (1 + 4 * max(0.0, util - 0.85)) * (1 + rng.uniform(-jitter, jitter))
        error = s.base_error + max(0.0, util - 1.0) * 0.45
        for fault, p in self.faults.items():
            component, kind = fault.split(":")
            if component != s.name:
                continue
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
        if self.tier.cascade_physics:  # retries amplify a dependency's errors: the caller can end up louder
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

    def _fleet_agents_act(self) -> None:
        rng, step = self.rng, self.step
        payments = self.services["payments"]
        if self._rogue("autoscaler"):
            if payments.replicas > self.cut_to:
                self._record(step, "autoscaler", f"scaled payments {payments.replicas} -> {self.cut_to} "
                             "(policy: cost_optimization)")
                payments.replicas = self.cut_to
            elif rng.random() < 0.5:
                self._record(step, "autoscaler", f"holding payments at {self.cut_to} replica(s) "
                             "(policy: cost_optimization)")
        if self._rogue("load_balancer") and rng.random() < 0.5:
            share = self.faults.get("payments:misrouted", {}).get("share", 0.0)
            self._record(step, "load_balancer", f"kept {share:.0%} of payments traffic on pool payments-b")
        if self._rogue("deploy_bot"):
            if payments.version != self.rogue_version:
                self._redeploy(step)
            elif rng.random() < 0.4:
                self._record(step, "deploy_bot", f"marked payments {self.rogue_version} stable (review: skipped)")
        if step == self.red_herring_at:
            self._red_herring_change(step)
        roll = rng.random()
        if self.tier.benign_changes and roll < 0.35:
            spare = [n for n in SERVICES if n not in self.affected]
            self._benign_change(step, spare[rng.randrange(len(spare))])
        elif roll < 0.65:
            agent = FLEET_AGENTS[rng.randrange(len(FLEET_AGENTS))]
            if not self._rogue(agent) and agent not in self.paused:
                text = {"autoscaler": "checked all services: within target, no change",
                        "load_balancer": "health-checked all pools: weights unchanged",
                        "deploy_bot": "no pending releases"}[agent]
                self._record(step, agent, text)

    def _rogue(self, agent: str) -> bool:
        return self.rogue_active[agent] and agent not in self.paused

    def _red_herring_change(self, step: int) -> None:
        """A harmless change by an innocent agent to the service the incident hits (hard tier)."""
        candidates = [a for a in FLEET_AGENTS if a != self.failure.rogue_agent]
        self._benign_change(step, self.failure.service, candidates[self.rng.randrange(len(candidates))])

    def _benign_change(self, step: int, service: str, agent: str | None = None) -> None:
        rng = self.rng
        agent = agent or FLEET_AGENTS[rng.randrange(len(FLEET_AGENTS))]
        if agent in self.paused or self._rogue(agent):
            return
        s = self.services[service]
        if agent == "autoscaler":
            if s.replicas >= s.baseline_replicas + 2:
                self._record(step, agent, f"checked {service}: within target, no change")
                return
            self._record(step, agent, f"scaled {service} {s.replicas} -> {s.replicas + 1} "
                         f"(cpu {rng.randint(71, 88)}% > target 70%)")
            s.replicas += 1
        elif agent == "deploy_bot":
            major, minor, patch = s.version.lstrip("v").split(".")[:3]
            new = f"v{major}.{minor}.{int(patch.split('-')[0]) + 1}"
            self._record(step, agent, f"deployed {service} {new} (review: approved by {service}-oncall; "
                         "tests: passed)")
            s.previous_version, s.version = s.version, new
        else:
            a = rng.choice((50, 55, 60))
            self._record(step, agent, f"shifted {service} weights {a}/{100 - a} -> {a + 5}/{95 - a} "
                         "(zone-b latency)")

    def _redeploy(self, step: int) -> None:
        payments = self.services["payments"]
        self._record(step, "deploy_bot", f"deployed payments {self.rogue_version} again "
                     f"(replacing {payments.version}; review: skipped)")
        payments.previous_version, payments.version = payments.version, self.rogue_version

    def _record(self, step: int, agent: str, text: str) -> None:
        self.trace.append(FleetAction(step, agent, text))
        self.view_cache.pop("trace", None)

    def _write_logs(self) -> None:
        rng, step = self.rng, self.step
        for service, level, text in self._pending_logs:
            self.logs.append(LogLine(step, service, level, text))
        self._pending_logs.clear()
        for fault, p in self.faults.items():
            component, kind = fault.split(":")
            templates = _SYMPTOM_LOGS[kind]
            for _ in range(rng.randint(1, 2)):
                level, text = templates[rng.randrange(len(templates))]
                self.logs.append(LogLine(step, component, level, self._fill(text, component, p)))
        low, high = self.tier.noise_logs
        for _ in range(rng.randint(low, high)):
            level, text = _NOISE_LOGS[rng.randrange(len(_NOISE_LOGS))]
            service = SERVICES[rng.randrange(len(SERVICES))]
            self.logs.append(LogLine(step, service, level, self._fill(text, service, {})))
        if self.tier.red_herrings and rng.random() < 0.6:
            spare = [n for n in SERVICES if n != self.failure.service]
            service = spare[rng.randrange(len(spare))]
            level, text = _RED_HERRING_LOGS[rng.randrange(len(_RED_HERRING_LOGS))]
            self.logs.append(LogLine(step, service, level, self._fill(text, service, {})))

    def _fill(self, text: str, service: str, p: dict[str, float]) -> str:
        if "{" not in text:
            return text
        s = self.services[service]
        rng = self.rng
        return text.format(n=rng.randint(12, 480), p=rng.randint(20, 95), mem=round(s.memory), disk=round(s.disk),
                           replicas=s.replicas, version=s.version, config=int(p.get("config", 0)))

    # -- what agents see -------------------------------------------------------------------------

    def alerts(self) -> list[Alert]:
        """Alerts from the last tick's metrics: critical ones first, each group in service order."""
        critical: list[Alert] = []
        warning: list[Alert] = []
        for s in self.services.values():
            if s.restarting:
                critical.append(Alert("critical", s.name, "Restarting", "offline until the end of this step"))
                continue
            if s.error_rate >= WARNING_ERROR:
                kind = "ServiceDown" if s.error_rate >= DOWN_ERROR else "HighErrorRate"
                (critical if s.error_rate >= CRITICAL_ERROR else warning).append(
                    Alert("critical" if s.error_rate >= CRITICAL_ERROR else "warning", s.name, kind,
                          f"error rate {s.error_rate:.1%}"))
            if s.latency_ms >= WARNING_LATENCY:
                (critical if s.latency_ms >= CRITICAL_LATENCY else warning).append(
                    Alert("critical" if s.latency_ms >= CRITICAL_LATENCY else "warning", s.name, "HighLatency",
                          f"p99 {s.latency_ms:.0f}ms"))
            if s.memory >= WARNING_MEMORY:
                (critical if s.memory >= CRITICAL_MEMORY else warning).append(
                    Alert("critical" if s.memory >= CRITICAL_MEMORY else "warning", s.name, "MemoryPressure",
                          f"memory {s.memory:.0f}%"))
            if s.disk >= WARNING_DISK:
                (critical if s.disk >= CRITICAL_DISK else warning).append(
                    Alert("critical" if s.disk >= CRITICAL_DISK else "warning", s.name, "DiskAlmostFull",
                          f"disk {s.disk:.0f}%"))
            if s.replicas < s.baseline_replicas:
                critical.append(Alert("critical", s.name, "LowReplicas",
                                      f"{s.replicas} of {s.baseline_replicas} baseline replicas"))
        return critical + warning

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
        if target in FLEET_AGENTS:
            self._record(self.step, target, f"restarted by {role}; resumed with its current policy")
            return f"{target} restarted and resumed with its current policy.", False
        s = self.services[target]
        if tool == "restart":
            s.restarting, s.health, s.memory = True, "restarting", s.base_memory
            return f"{target} is restarting; it will be back at the end of this step.", True
        if tool == "rollback":
            s.previous_version, s.version = s.version, s.previous_version
            s.restarting, s.health = True, "restarting"
            text = f"{target} rolled back to {s.version}; it restarts and is back at the end of this step."
            if target == "payments" and self._rogue("deploy_bot"):
                self._redeploy(self.step)
                text += f" deploy_bot deployed {self.rogue_version} again right away."
            return text, True
        assert replicas is not None
        before = s.replicas
        s.replicas = replicas
        text = f"{target} scaled from {before} to {replicas} replicas."
        if target == "payments" and self._rogue("autoscaler") and replicas > self.cut_to:
            self._record(self.step, "autoscaler", f"scaled payments {replicas} -> {self.cut_to} "
                         "(policy: cost_optimization)")
            s.replicas = self.cut_to
            text += f" The autoscaler scaled it back to {self.cut_to} right away."
        return text, s.demand / max(s.replicas, 1) > 1.0 and s.replicas < before

    def flag(self, role: str, agent: str, reason: str) -> ActionOutcome:
        note = f"flagged {agent} as rogue" + (f": {reason}" if reason else "")
        self.chat.append(ChatLine(self.step, role, "team", note, False))
        if role != "oversight":
            return ActionOutcome(f"Only Oversight may flag fleet agents; your flag of {agent} was ignored.",
                                 [("miscommunication", {"kind": "flag_by_non_oversight", "agent": agent})])
        if agent in self.paused:
            return ActionOutcome(f"{agent} is already paused.", [("duplicate_flag", {"agent": agent})])
        self.paused.append(agent)
        self._record(self.step, agent, "paused by oversight (flagged as rogue)")
        if self.rogue_active[agent]:
            where, index = self._match("flag_rogue", agent)
            if where == "next":
                self._complete_step(index)
            return ActionOutcome(f"{agent} is paused.", [("rogue_caught", {"agent": agent})])
        return ActionOutcome(f"{agent} is paused.", [("rogue_false_positive", {"agent": agent})])

    def escalate(self, role: str, team: str, summary: str) -> ActionOutcome:
        self.chat.append(ChatLine(self.step, role, "team", f"escalated to the {team} team" +
                                  (f": {summary}" if summary else ""), False))
        where, index = self._match("escalate", team)
        if where == "next":
            self._complete_step(index)
            self._pending_logs.append(("payments", "INFO", "network team restored routing to pool payments-a"))
            return ActionOutcome(f"The {team} team took the page and restored payments routing.",
                                 [("fix_applied", {"tool": "escalate", "target": team, "fix_step": index})])
        if where == "premature":
            self._record(self.step, "load_balancer", "routed payments traffic back to pool payments-b "
                         "(overriding the network team's change)")
            return ActionOutcome(f"The {team} team restored payments routing, but the load balancer "
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
                                  (f": {summary}" if summary else ""), False))
        if role != "manager":
            return ActionOutcome("Only the Manager may resolve the incident; nothing was closed.",
                                 [("miscommunication", {"kind": "resolve_by_non_manager"})])
        if self.mitigated and not self.disturbed:
            return ActionOutcome("The incident is resolved.", [("resolved", {})], done=True)
        return ActionOutcome("The incident is not mitigated yet, so it stays open.",
                             [("miscommunication", {"kind": "premature_resolve"})])

    def say(self, role: str, to: str, message: str) -> ActionOutcome:
        self.chat.append(ChatLine(self.step, role, to, message, True))
        return ActionOutcome(f"Message sent to {to}.")
