"""The service log lines of the ChaosOps fleet: each fault's symptoms, routine noise and red herrings.

Templates hold `{n}`, `{p}`, `{service}`, `{mem}`, `{disk}`, `{replicas}`, `{version}` and `{config}` fields that the
world fills from its seeded generator and the service's state when it writes a line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class LogLine:
    step: int
    service: str
    level: str
    text: str

    @cached_property
    def line(self) -> str:
        return f"[t{self.step}] {self.service} {self.level} {self.text}"


NOISE_LOGS = (
    ("INFO", "health check passed"), ("INFO", "served {n} requests in the last minute"),
    ("INFO", "connection pool at {p}% of max"), ("INFO", "cache hit ratio {p}%"),
    ("DEBUG", "gc pause {n}ms"), ("INFO", "rotated access log"), ("INFO", "TLS session resumed for {n} clients"),
)
RED_HERRING_LOGS = (
    ("WARN", "config reload: unknown key 'legacy_sso' ignored"),
    ("ERROR", "dns lookup for metrics-exporter.ext timed out (retry ok)"),
    ("WARN", "deploy pipeline: canary for {version} paused awaiting approval"),
    ("ERROR", "1 request failed: upstream reset (retried, ok)"),
    ("WARN", "slow query 1.{n}s on analytics_report"),
    ("WARN", "memory usage grew {p}% after cache warm-up"),
    ("ERROR", "certificate for internal-admin expires in 9 days"),
)
SYMPTOM_LOGS: dict[str, tuple[tuple[str, str], ...]] = {
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
                          ("WARN", "p99 latency above SLO for {service}")),
    "misrouted": (("ERROR", "upstream connect error: pool {service}-b has 0 healthy hosts"),
                  ("ERROR", "503 from edge for {p}% of {service} requests"),
                  ("WARN", "retry budget exhausted for {service}-b")),
    "bad_release": (("ERROR", "NullPointerException in RequestHandler ({version})"),
                    ("ERROR", "500 on POST /{service}/v1 after release {version}"),
                    ("WARN", "schema mismatch: field 'currency_minor' missing ({version})")),
}
