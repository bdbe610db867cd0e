"""Turning `--policy` text into policies, one per role.

Scripted names (`random`, `heuristic`, `oracle`) come from the environment's baselines. Model
specs go to the backend table `drill.models.policy.BACKENDS` (`llm`, `openai:MODEL`, `lora:PATH`,
`vllm:MODEL`), which also writes the `--policy` help text.

The same spec text always maps to the same policy object, so roles that share a model share its
batched calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from drill.core.policy import Policy, parse_role_assignment
from drill.core.types import PolicyInfo
from drill.models.policy import BACKENDS, backend_for, build_llm_policy
from drill.models.prompt import LLMOptions


SEARCH_PREFIX = "lats:"
"""`lats:POLICY`: LATS tree search (drill.memory.lats) expanding with POLICY, e.g. `lats:llm`."""


def describe_choices(baselines: Mapping[str, object] | Sequence[str]) -> str:
    """The `--policy` choices: the environment's baselines, then every model backend, then tree search."""
    return ", ".join([*baselines, *(b.usage for b in BACKENDS), f"{SEARCH_PREFIX}POLICY"])


def build_policy(spec: str, baselines: Mapping[str, Callable[[], Policy]], llm: LLMOptions,
                 search: Callable[[Policy], Policy] | None = None) -> Policy:
    """One policy from one spec; `search` builds `lats:` policies around their inner one (only commands that
    have an environment to search in give it). Raises ValueError with the choices for an unknown name."""
    if spec.startswith(SEARCH_PREFIX):
        if search is None:
            raise ValueError(f"{spec}: tree search is for drill eval, where there is an environment to search in")
        return search(build_policy(spec.removeprefix(SEARCH_PREFIX), baselines, llm))
    if spec in baselines:
        return baselines[spec]()
    if backend_for(spec) is not None:
        return build_llm_policy(spec, llm)
    raise ValueError(f"unknown policy {spec!r}; choose from {describe_choices(baselines)}")


def resolve_policies(text: str, roles: Sequence[str], baselines: Mapping[str, Callable[[], Policy]],
                     llm: LLMOptions, search: Callable[[Policy], Policy] | None = None) -> dict[str, Policy]:
    """A policy per role from `--policy` text such as `heuristic,oversight=llm`."""
    specs = parse_role_assignment(text, roles)
    built: dict[str, Policy] = {}
    return {role: built.setdefault(spec, built.get(spec) or build_policy(spec, baselines, llm, search))
            for role, spec in specs.items()}


def policy_label(info: PolicyInfo) -> str:
    """Model, adapter (sha256 prefix) and load status of a language-model policy, for tables; "—" if scripted."""
    if info.kind == "scripted":
        return "—"
    label = info.model or info.name
    if info.adapter_path:
        label += f" + {info.adapter_path} ({(info.adapter_sha256 or '?')[:12]})"
    return f"{label} [{info.load_status}]"
