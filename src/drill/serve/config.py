"""`ServeConfig`: the limits of one server. Its own module, light to import: `drill` builds the `drill serve` flags
from these fields at start, and importing the app (OpenEnv, and with it gradio and pandas) costs seconds."""

from __future__ import annotations

from dataclasses import dataclass, field

from drill.serve.origins import Origin, parse_origin


@dataclass(frozen=True)
class ServeConfig:
    """Limits of one server; `drill serve` derives its flags from these fields."""

    max_sessions: int = field(default=256, metadata={
        "help": "Concurrent sessions (one environment each); one more is refused with CAPACITY_REACHED."})
    idle_timeout: float = field(default=600.0, metadata={
        "help": "Seconds without a message after which a session is closed (checked every max(t/4, 5) s)."})
    max_body: int = field(default=1_000_000, metadata={
        "help": "Largest request body or WebSocket message, in bytes (413, or close code 1009, past it)."})
    allow_origin: tuple[str, ...] = field(default=(), metadata={
        "help": "A web origin (scheme://host[:port]) whose pages may open sessions and call /mcp, besides the "
                "server's own page (repeatable). Clients that send no Origin (OpenEnv's, curl) always may."})

    withhold_policy: tuple[str, ...] = field(default=(), metadata={
        "help": "A policy not to offer (repeatable), e.g. oracle: any client may ask for an offered policy's turn, "
                "and the oracle's actions carry the ground truth (the gold answer, the fix, the rogue's name); so "
                "do inbox's reader's (it answers with the gold once it has read a gold source)."})

    def __post_init__(self) -> None:
        self.origins()  # a bad origin stops here, with the reason

    def origins(self) -> tuple[Origin, ...]:
        """`allow_origin`, parsed (ValueError for one that is not scheme://host[:port])."""
        return tuple(parse_origin(text) for text in self.allow_origin)
