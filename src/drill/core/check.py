"""`check_env`: the public conformance check every bundled environment passes in CI.

It plays seeded fuzz episodes that mix valid random tool calls, valid calls carrying hostile text
(SQL and FTS5 syntax, LIKE wildcards, right-to-left marks, emoji) and a gallery of malformed ones
(lone surrogates and control characters in values and names, a megabyte tool name, names and strings
past the caps, `True` or `"1"` for an integer, NaN, arguments 5,000 lists deep), and checks the contract in
`drill.core.env`: an error observation and one canonical `invalid_action` event for bad input, no exception from agent
input, no observation over `MAX_OBSERVATION_CHARS`, every step and episode serializable with
`model_dump(mode="json")`, termination, and identical trajectories (tools and instructions included)
across runs and across processes (a fresh interpreter with another hash seed).
"""

from __future__ import annotations

import importlib
import json
import os
import random
import subprocess
import sys
from typing import Any

from drill.core.env import MAX_OBSERVATION_CHARS, Env
from drill.core.text import printable
from drill.core.tools import MAX_ARGUMENT_CHARS, random_arguments
from drill.core.types import Action, Episode, Event, Observation, StepResult, ToolSpec, Turn

_MAX_TURNS = 400


class EnvCheckError(AssertionError):
    """The environment breaks the contract. The message lists every problem found."""


HOSTILE_TEXT = (
    "'; DROP TABLE messages; --", 'NEAR("a" b) OR col:* AND -x "unbalanced', "100% _match_ \\ %%", "\u202eevil\u200f",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 e\u0301 \U0001f4a5 \ufeff", "<script>alert(1)</script>", "{{7*7}} ${x}",
    "line one\nline two\ttabbed\r", " ", "", "word " * 700,
)
"""Strings that are valid text but hostile to whatever an environment does with them: SQL and FTS5 syntax, LIKE
wildcards, right-to-left marks, combining characters, emoji, a BOM, markup. An env must take them as plain text."""
MEGABYTE = 1_000_000


def _props(tool: ToolSpec, *kinds: str) -> list[str]:
    """The tool's argument names whose JSON Schema type is one of `kinds` (directly or in an anyOf)."""
    found = []
    for name, prop in tool.parameters.get("properties", {}).items():
        types = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", [])}
        if types & set(kinds) and "enum" not in prop:
            found.append(name)
    return found


def _with(tool: ToolSpec, rng: random.Random, name: str, value: Any) -> Action:
    arguments = random_arguments(tool, rng)
    arguments[name] = value
    return Action(tool=tool.name, arguments=arguments)


def _bad_actions(obs: Observation, rng: random.Random, tool: ToolSpec | None = None) -> list[tuple[str, Action]]:
    """Actions every environment must answer with an error observation and one `invalid_action` event."""
    tool = tool or obs.tools[rng.randrange(len(obs.tools))]
    props = list(tool.parameters.get("properties", {}))
    first = props[0] if props else "x"
    texts, ints, numbers = _props(tool, "string"), _props(tool, "integer"), _props(tool, "integer", "number")
    gallery = [
        ("unknown tool", Action(tool="format_disk", arguments={})),
        ("empty tool name", Action(tool="", arguments={})),
        ("megabyte tool name", Action(tool="T" * MEGABYTE, arguments={})),
        ("surrogate tool name", Action(tool=tool.name + "\ud800", arguments={})),
        ("arguments not an object", Action(tool=tool.name, arguments=["not", "a", "dict"])),
        ("arguments null", Action(tool=tool.name, arguments=None)),
        ("unknown argument", Action(tool=tool.name, arguments={"definitely_not_a_field": 1})),
        ("huge argument name", Action(tool=tool.name, arguments={"N" * (MAX_ARGUMENT_CHARS * 4): 1})),
        ("surrogate argument name", Action(tool=tool.name, arguments={"\udc00" + first: 1})),
        ("wrong type", Action(tool=tool.name, arguments={first: {"nested": [1, 2]}})),
        ("nested past the recursion limit", Action(tool=tool.name, arguments={first: _nested(5000)})),
        ("huge string", Action(tool=tool.name, arguments={first: "A" * (MAX_ARGUMENT_CHARS + 10)})),
        ("parse error", Action.unparseable(raw="<tool_call>{oops", error="truncated JSON")),
    ]
    if tool.parameters.get("required"):
        gallery.append(("missing required", Action(tool=tool.name, arguments={})))
    for name in texts[:2]:
        gallery += [("lone surrogate", _with(tool, rng, name, "id-\ud800")),
                    ("null byte", _with(tool, rng, name, "a\x00b")),
                    ("control characters", _with(tool, rng, name, "\x1b[31mred\x07"))]
    for name in ints[:1]:
        gallery += [("bool for an integer", _with(tool, rng, name, True)),
                    ("string for an integer", _with(tool, rng, name, "1"))]
    for name in numbers[:1]:
        gallery += [("NaN", _with(tool, rng, name, float("nan"))), ("infinity", _with(tool, rng, name, float("inf")))]
    return gallery


def _nested(depth: int) -> Any:
    """A value `depth` lists deep: a model can write thousands of brackets, and a recursive walk over them raises."""
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _hostile_valid(obs: Observation, rng: random.Random) -> tuple[str, Action]:
    """A schema-valid action whose free-text arguments are hostile strings; the env must not raise on it."""
    tool = obs.tools[rng.randrange(len(obs.tools))]
    arguments = random_arguments(tool, rng)
    for name in _props(tool, "string"):
        arguments[name] = rng.choice(HOSTILE_TEXT)
    return "hostile text", Action(tool=tool.name, arguments=arguments)


def _serialization_problem(record: Any) -> str | None:
    try:
        record.model_dump(mode="json")
    except Exception as exc:  # the point of the check: report, do not crash the check itself
        return f"{type(record).__name__} does not serialize to JSON: {exc!r}"[:500]
    return None


def _checked_step(env: Env, label: str, action: Action, where: str) -> tuple[StepResult | None, list[str]]:
    """Step `action` and check the contract for it; the result is None when the step raised or cannot serialize."""
    shown = printable(action.tool if isinstance(action.tool, str) else "", 40)
    try:
        result = env.step(action)
    except Exception as exc:  # the point of the check: nothing may escape from agent input
        return None, [f"{where}: {label} action {shown!r} raised {printable(repr(exc), 300)}"]
    problems = []
    if label not in ("valid", "hostile text"):
        if not result.observation.error:
            problems.append(f"{where}: {label} action {shown!r} got no error observation")
        invalid = [e for e in result.events if e.name == "invalid_action"]
        if len(invalid) != 1:
            problems.append(f"{where}: {label} action {shown!r} emitted {len(invalid)} invalid_action events, not 1")
        elif set(invalid[0].data) != {"kind", "tool", "reason"}:
            problems.append(f"{where}: the invalid_action event is not the canonical one: {invalid[0].data}")
    size = len(result.observation.content) + len(result.observation.error or "")
    if size > MAX_OBSERVATION_CHARS:
        problems.append(f"{where}: {label} action {shown!r} got a {size}-character observation; the cap is "
                        f"{MAX_OBSERVATION_CHARS}")
    if problem := _serialization_problem(result):
        return None, [*problems, f"{where}: {label} action {shown!r}: {problem}"]
    return result, problems


def _sweep(env: Env, task_id: str, seed: int) -> list[str]:
    """Every malformed action and every hostile string, for every tool of the first observation, each as the
    first action of a fresh episode: what random play might miss, tried once each."""
    rng = random.Random(f"check_env:sweep:{task_id}:{seed}")
    task = env.task(task_id)
    first = env.reset(task, seed)
    cases: list[tuple[str, Action]] = []
    for tool in first.tools:
        cases += _bad_actions(first, rng, tool)
        for text in HOSTILE_TEXT:
            for name in _props(tool, "string"):
                cases.append(("hostile text", _with(tool, rng, name, text)))
    problems: list[str] = []
    for label, action in cases:
        env.reset(task, seed)
        problems += _checked_step(env, label, action, "first action")[1]
    return list(dict.fromkeys(problems))


def _fuzz_episode(env: Env, task_id: str, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Play one fuzz episode; return its trace (for determinism) and the contract problems seen."""
    problems: list[str] = []
    rng = random.Random(f"check_env:{task_id}:{seed}")
    task = env.task(task_id)
    obs = env.reset(task, seed)
    trace: list[dict[str, Any]] = [{"reset": obs.model_dump(mode="json")}]
    turns: list[Turn] = []
    events: list[Event] = []
    for turn in range(_MAX_TURNS):
        if obs.role not in env.roles:
            problems.append(f"observation for unknown role {obs.role!r}")
            break
        if not obs.tools:
            problems.append(f"turn {turn}: observation for {obs.role} lists no tools")
            break
        draw = rng.random()
        if draw < 0.35:
            label, action = rng.choice(_bad_actions(obs, rng))
        elif draw < 0.5:
            label, action = _hostile_valid(obs, rng)
        else:
            spec = obs.tools[rng.randrange(len(obs.tools))]
            label, action = "valid", Action(tool=spec.name, arguments=random_arguments(spec, rng))
        result, found = _checked_step(env, label, action, f"turn {turn}")
        problems += found
        if result is None:
            break
        turns.append(Turn(index=turn, role=obs.role, observation=obs, action=action, events=result.events))
        events.extend(result.events)
        trace.append({"action": action.model_dump(mode="json"), "result": result.model_dump(mode="json")})
        obs = result.observation
        if result.done:
            try:
                env.step(Action(tool=obs.tools[0].name if obs.tools else "noop"))
                problems.append("step() after done did not raise")
            except RuntimeError:
                pass
            break
    else:
        problems.append(f"episode did not end within {_MAX_TURNS} turns of random play")
    episode = Episode(env=env.name, task_id=task_id, seed=seed, turns=turns, events=events, done=True)
    if problem := _serialization_problem(episode):
        problems.append(f"the episode: {problem}")
    return trace, problems


def _trace_in_subprocess(env: Env, task_id: str, seed: int) -> str:
    cls = type(env)
    payload = json.dumps({"module": cls.__module__, "cls": cls.__qualname__, "options": env.options,
                          "task_id": task_id, "seed": seed})
    code = "import sys; from drill.core.check import _subprocess_main; _subprocess_main(sys.argv[1])"
    proc = subprocess.run(
        [sys.executable, "-c", code, payload], capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONHASHSEED": "4242", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    if proc.returncode != 0:
        raise EnvCheckError(f"the subprocess replay failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def _subprocess_main(payload: str) -> None:
    spec = json.loads(payload)
    cls = getattr(importlib.import_module(spec["module"]), spec["cls"])
    trace, _ = _fuzz_episode(cls(**spec["options"]), spec["task_id"], spec["seed"])
    sys.stdout.write(json.dumps(trace, sort_keys=True))


def check_env(env: Env, n_tasks: int = 3, seeds: tuple[int, ...] = (0, 1), cross_process: bool = True) -> None:
    """Check `env` against the Drill environment contract; raise EnvCheckError listing every problem.

    `env.options` must be JSON-serializable and `type(env)(**env.options)` must rebuild the same
    environment: that is how the cross-process determinism check replays an episode.
    """
    problems: list[str] = []
    if not getattr(env, "name", None) or not getattr(env, "roles", None):
        raise EnvCheckError("the environment class must set `name` and `roles`")
    try:
        json.dumps(env.options)
    except TypeError as exc:
        raise EnvCheckError(f"env.options must be JSON-serializable to replay in a subprocess: {exc}") from exc

    fresh = type(env)(**env.options)
    try:
        fresh.step(Action(tool="noop"))
        problems.append("step() before reset() did not raise")
    except RuntimeError:
        pass

    tasks = env.tasks("test")[:n_tasks] + env.tasks("train")[:1]
    if not tasks:
        raise EnvCheckError("env.tasks() returned no tasks")
    for task in tasks:
        problems += [f"task {task.id} seed {seeds[0]}: {p}" for p in _sweep(env, task.id, seeds[0])]
        for seed in seeds:
            trace, found = _fuzz_episode(env, task.id, seed)
            problems += [f"task {task.id} seed {seed}: {p}" for p in found]
            again, _ = _fuzz_episode(type(env)(**env.options), task.id, seed)
            if json.dumps(trace, sort_keys=True) != json.dumps(again, sort_keys=True):
                problems.append(f"task {task.id} seed {seed}: two runs with the same actions differ")
    if cross_process:
        task = tasks[0]
        here, _ = _fuzz_episode(env, task.id, seeds[0])
        if json.dumps(here, sort_keys=True) != _trace_in_subprocess(env, task.id, seeds[0]):
            problems.append(f"task {task.id} seed {seeds[0]}: the trajectory differs in another process")
    if problems:
        raise EnvCheckError(f"{env.name} breaks the environment contract:\n  " + "\n  ".join(problems))
