"""The policy protocol.

A policy maps a batch of `PolicyInput`s to one action each. Batching is part of the contract
because that is how language-model policies are fast: G rollouts of one task advance together and
share one batched `generate` call per turn. Scripted policies simply loop.

Policies are stateless between calls: everything an episode has seen so far is in
`PolicyInput.history`, so the same inputs give the same actions and episodes can be interleaved
freely. Only the oracle may read `PolicyInput.task` beyond its id; that is where ground truth lives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

from drill.core.types import Action, Observation, PolicyInfo, Task, Turn


class PolicyInput(NamedTuple):
    """What a policy sees for one episode's next turn. Immutable; a named tuple because the runner builds one per
    turn (a frozen dataclass took twice as long to build)."""

    task: Task
    seed: int
    observation: Observation
    history: Sequence[Turn]

    def own_turns(self) -> list[Turn]:
        """The earlier turns of the role that acts now."""
        return [t for t in self.history if t.role == self.observation.role]


@runtime_checkable
class Policy(Protocol):
    @property
    def info(self) -> PolicyInfo: ...

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]: ...


RoleAssignment = Mapping[str, Policy]


def parse_role_assignment(spec: str, roles: Sequence[str]) -> dict[str, str]:
    """Parse `--policy` text into a policy spec per role.

    `"oracle"` gives every role the oracle; `"heuristic,oversight=llm"` gives Oversight the LLM and
    every other role the heuristic; `"sre=oracle,oversight=llm,dev=oracle,manager=oracle"` names each.
    """
    default: str | None = None
    per_role: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        role, sep, value = part.partition("=")
        if sep and role.strip() in roles:
            if role.strip() in per_role:
                raise ValueError(f"role {role.strip()!r} is assigned twice in {spec!r}")
            per_role[role.strip()] = value.strip()
        elif sep and ":" not in role:
            raise ValueError(f"unknown role {role.strip()!r} in {spec!r}; roles are {', '.join(roles)}")
        else:
            if default is not None:
                raise ValueError(f"more than one default policy in {spec!r}")
            default = part
    missing = [r for r in roles if r not in per_role]
    if missing and default is None:
        raise ValueError(f"no policy for roles {', '.join(missing)} in {spec!r}")
    return {r: per_role.get(r, default or "") for r in roles}
