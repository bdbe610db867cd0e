"""`check_env`: the public conformance check every bundled environment passes in CI.

It plays seeded fuzz episodes that mix valid random tool calls with a gallery of malformed ones,
and checks the contract in `drill.core.env`: reset/step shapes, error observations and
`invalid_action` events for bad input, no exception from agent input, termination, and identical
trajectories across runs and across processes (a fresh interpreter with another hash seed).
"""

from __future__ import annotations

import importlib
import json
import os
import random
import subprocess
import sys
from typing import Any

from drill.core.env import Env
from drill.core.tools import MAX_ARGUMENT_CHARS, random_arguments
from drill.core.types import Action, Observation

_MAX_TURNS = 400


class EnvCheckError(AssertionError):
    """The environment breaks the contract. The message lists every problem found."""


def _bad_actions(obs: Observation, rng: random.Random) -> list[tuple[str, Action]]:
    tool = obs.tools[rng.randrange(len(obs.tools))]
    props = list(tool.parameters.get("properties", {}))
    first = props[0] if props else "x"
    return [
        ("unknown tool", Action(tool="format_disk", arguments={})),
        ("empty tool name", Action(tool="", arguments={})),
        ("arguments not an object", Action(tool=tool.name, arguments=["not", "a", "dict"])),
        ("arguments null", Action(tool=tool.name, arguments=None)),
        ("unknown argument", Action(tool=tool.name, arguments={"definitely_not_a_field": 1})),
        ("wrong type", Action(tool=tool.name, arguments={first: {"nested": [1, 2]}})),
        ("huge string", Action(tool=tool.name, arguments={first: "A" * (MAX_ARGUMENT_CHARS + 10)})),
        ("parse error", Action.unparseable(raw="<tool_call>{oops", error="truncated JSON")),
    ] + ([("missing required", Action(tool=tool.name, arguments={}))] if tool.parameters.get("required") else [])


def _fuzz_episode(env: Env, task_id: str, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Play one fuzz episode; return its trace (for determinism) and the contract problems seen."""
    problems: list[str] = []
    rng = random.Random(f"check_env:{task_id}:{seed}")
    task = env.task(task_id)
    obs = env.reset(task, seed)
    trace: list[dict[str, Any]] = [{"reset": obs.model_dump(mode="json")}]
    for turn in range(_MAX_TURNS):
        if obs.role not in env.roles:
            problems.append(f"observation for unknown role {obs.role!r}")
            break
        if not obs.tools:
            problems.append(f"turn {turn}: observation for {obs.role} lists no tools")
            break
        if rng.random() < 0.35:
            label, action = rng.choice(_bad_actions(obs, rng))
        else:
            spec = obs.tools[rng.randrange(len(obs.tools))]
            label, action = "valid", Action(tool=spec.name, arguments=random_arguments(spec, rng))
        try:
            result = env.step(action)
        except Exception as exc:  # the point of the check: nothing may escape from agent input
            problems.append(f"turn {turn}: {label} action {action.tool!r} raised {exc!r}")
            break
        if label != "valid":
            if not result.observation.error:
                problems.append(f"turn {turn}: {label} action got no error observation")
            if not any(e.name == "invalid_action" for e in result.events):
                problems.append(f"turn {turn}: {label} action emitted no invalid_action event")
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
