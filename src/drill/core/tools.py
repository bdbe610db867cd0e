"""Tools generated from plain Python functions.

A tool is written as a typed function with a Google-style docstring::

    def restart(service: Literal["auth", "db"]) -> None:
        '''Restart a service's pods.

        Args:
            service: The service to restart.
        '''

`Tool.from_function` turns it into a JSON Schema (for prompts and chat templates) and a pydantic
validator (for the environment), so the schema the model reads and the check the environment
applies can never drift apart.
"""

from __future__ import annotations

import inspect
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from drill.core.text import printable
from drill.core.types import ToolSpec

MAX_ARGUMENT_CHARS = 4000
"""Arguments whose JSON is longer than this are rejected before validation."""


class ToolArgumentError(ValueError):
    """Agent-supplied arguments do not fit the tool's schema. The message is shown to the agent."""


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and its per-argument descriptions."""
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if in_args:
            if line and not line[0].isspace():  # a new section (Returns:, Raises:) ends Args
                in_args = False
                continue
            match = _ARG_LINE.match(line)
            if match and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
            continue
        description.append(line)
    return " ".join(" ".join(description).split()), args


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    model: type[BaseModel]

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def from_function(cls, fn: Callable[..., Any], name: str | None = None) -> Tool:
        """Build a tool from a typed function. Every parameter needs a type hint and a docstring entry."""
        tool_name = name or fn.__name__
        if not fn.__doc__:
            raise TypeError(f"tool {tool_name!r} needs a docstring: it is the description the model reads")
        description, arg_docs = _parse_docstring(fn.__doc__)
        hints = get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn).parameters.values():
            if param.name not in hints:
                raise TypeError(f"tool {tool_name!r}: parameter {param.name!r} has no type hint")
            if param.name not in arg_docs:
                raise TypeError(f"tool {tool_name!r}: parameter {param.name!r} is not described under Args:")
            default = ... if param.default is inspect.Parameter.empty else param.default
            from pydantic import Field

            fields[param.name] = (hints[param.name], Field(default, description=arg_docs[param.name]))
        model = create_model(
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("required", [])
        return cls(ToolSpec(name=tool_name, description=description, parameters=schema), model)

    def validate(self, arguments: object) -> dict[str, Any]:
        """Return the validated arguments, or raise ToolArgumentError with a message for the agent."""
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"{self.name}: arguments must be a JSON object, got {type(arguments).__name__}"
            )
        try:
            size = _short(arguments) or len(json.dumps(arguments, default=str))
        except (TypeError, ValueError) as exc:
            raise ToolArgumentError(f"{self.name}: arguments are not JSON-serializable ({exc})") from exc
        if size > MAX_ARGUMENT_CHARS:
            raise ToolArgumentError(
                f"{self.name}: arguments are {size} characters long; the limit is {MAX_ARGUMENT_CHARS}"
            )
        try:
            parsed = self.model.model_validate(arguments, strict=True)  # no True for 1, no "1" for 1
        except ValidationError as exc:
            raise ToolArgumentError(f"{self.name}: {_describe(exc)}") from None
        return dict(parsed.__dict__)  # the declared fields (extra="forbid"), in declaration order


def _short(arguments: dict[Any, Any]) -> int:
    """A bound on the JSON length of flat `arguments` (scalar values, short text) that is surely under the cap, or 0
    when the exact length must be measured. JSON writes a character in at most 6 (`\\uXXXX`)."""
    bound = 2
    for key, value in arguments.items():
        if not isinstance(key, str):
            return 0
        if isinstance(value, str):
            bound += 6 * len(value)
        elif isinstance(value, int) and abs(value) >= 10**18:  # a huge integer is measured (and may not serialize)
            return 0
        elif not (value is None or isinstance(value, int | float)):
            return 0
        bound += 6 * len(key) + 30  # a float or a small integer is at most 24 characters
    return bound if bound < MAX_ARGUMENT_CHARS else 0


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False)[:4]:
        where = printable(".".join(str(p) for p in err["loc"]), 60) or "arguments"
        kind = err["type"]
        if kind == "missing":
            problems.append(f"missing required argument {where!r}")
        elif kind == "extra_forbidden":
            problems.append(f"unknown argument {where!r}")
        else:
            got = printable(repr(err.get("input")), 60)
            problems.append(f"argument {where!r}: {err['msg']} (got {got})")
    more = len(exc.errors()) - 4
    if more > 0:
        problems.append(f"and {more} more")
    return "; ".join(problems)


def random_arguments(spec: ToolSpec, rng: random.Random) -> dict[str, Any]:
    """Arguments drawn from a tool's JSON Schema: enums pick a member, strings a short word.

    Used by the generic random actor in check_env and by random baselines.
    """
    out: dict[str, Any] = {}
    for name, prop in spec.parameters.get("properties", {}).items():
        out[name] = _random_value(prop, spec.parameters.get("$defs", {}), rng)
    return out


def _random_value(prop: dict[str, Any], defs: dict[str, Any], rng: random.Random) -> Any:
    if "$ref" in prop:
        return _random_value(defs[prop["$ref"].split("/")[-1]], defs, rng)
    if "enum" in prop:
        return rng.choice(prop["enum"])
    if "const" in prop:
        return prop["const"]
    if "anyOf" in prop:
        return _random_value(rng.choice(prop["anyOf"]), defs, rng)
    kind = prop.get("type", "string")
    if kind == "integer":
        return rng.randint(int(prop.get("minimum", 0)), int(prop.get("maximum", 10)))
    if kind == "number":
        return round(rng.uniform(float(prop.get("minimum", 0.0)), float(prop.get("maximum", 1.0))), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(prop.get("items", {}), defs, rng) for _ in range(rng.randint(0, 2))]
    if kind == "null":
        return None
    return rng.choice(["status", "restart", "db", "error", "unknown", "help", "deadline", "invoice"])
