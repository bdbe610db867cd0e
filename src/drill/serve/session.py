"""One served episode: a Drill environment behind OpenEnv's `Environment` interface.

OpenEnv's server (`openenv.core.env_server.HTTPEnvServer`, as `drill.serve.server.DrillEnvServer`) owns the
sessions: it builds one `EpisodeSession` per WebSocket session (or HTTP MCP session), runs its `reset`/`step` (and
here its MCP tool calls) in that session's own thread, enforces the concurrent-session limit and expires idle
sessions. This class only translates:

* `reset` data: `task_id` (default: the first test task), `seed` (default 0), `running_score` (score the
  episode so far after every turn; the web page asks for it), plus OpenEnv's own `episode_id`.
* a step's action (`DrillAction`): a tool call (`tool`, `arguments`, optionally the client's `parse_error`),
  or `policy` to let one of the server's policies play the turn (the oracle runs here, next to the ground truth).
* the observation (`DrillObservation`): Drill's observation fields (`role` — whose turn it is, `content`,
  `step`, `tools`, `instructions`, `error`), the `events` the last action caused, the action applied and the
  policy that chose it, and `score` (total, components, weights) at the end. The protocol's `reward` is the
  rubric's total at the end of the episode and `None` before it: never a default 0.

Ground truth stays here: the task travels only as its id; the rubric and the oracle read it server-side.
Bad client input raises `ServeError` with an HTTP status; the app turns it into a 4xx (HTTP) or a typed error
frame (WebSocket). The environment itself never raises on agent input (see `drill.core.env`).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action as WireAction
from openenv.core.env_server.types import EnvironmentMetadata, State
from openenv.core.env_server.types import Observation as WireObservation
from pydantic import Field

from drill.core.env import Env
from drill.core.policy import Policy, PolicyInput, parse_role_assignment
from drill.core.rubric import Rubric, RubricError
from drill.core.spec import EnvSpec
from drill.core.types import Action, Episode, Observation, PolicyInfo, Score, Task, Turn

__all__ = ["DrillAction", "DrillObservation", "DrillState", "EpisodeSession", "ServeError", "ServedEnv"]

CLIENT = PolicyInfo(name="client", kind="remote")
"""The policy recorded for turns whose action the client sent."""


class ServeError(Exception):
    """Bad client input: an HTTP status (4xx) and a message for a person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class DrillAction(WireAction):
    """One turn: a tool call by the acting role, or `policy` to let a server-side policy play it."""

    tool: str = ""
    arguments: Any = Field(default_factory=dict)
    parse_error: str | None = Field(default=None, description="The client's parse error for an unparseable model "
                                                              "output; the environment answers it as invalid.")
    policy: str | None = Field(default=None, description="A policy the server offers (see /web/info), per role "
                                                         "with commas, e.g. 'oracle' or 'heuristic,sre=oracle'.")


class DrillObservation(WireObservation):
    """Drill's observation for the role that acts next, with the last action's events and the score."""

    role: str = Field(default="", description="Whose turn it is now.")
    content: str = ""
    step: int = 0
    tools: list[dict[str, Any]] = Field(default_factory=list)
    instructions: str = ""
    error: str | None = None
    events: list[dict[str, Any]] = Field(default_factory=list, description="Events the last action caused.")
    task_id: str = ""
    seed: int = 0
    turn: int = Field(default=0, description="Turns played so far.")
    acted: str | None = Field(default=None, description="The role that played the last turn.")
    action: dict[str, Any] | None = Field(default=None, description="The action applied in the last turn.")
    policy: dict[str, Any] | None = Field(default=None, description="The policy that chose it (model, adapter, "
                                                                    "load status).")
    score: dict[str, Any] | None = Field(default=None, description="total, components, weights: at the end, or "
                                                                   "after every turn with running_score.")
    extra: dict[str, Any] | None = Field(default=None, description="The environment's own observation fields "
                                                                   "(ChaosOps' structured view), if it has any.")

    def drill(self) -> Observation:
        """The Drill observation inside, as the environment made it."""
        return Observation.model_validate({k: getattr(self, k) for k in
                                           ("role", "content", "step", "tools", "instructions", "error")})


class DrillState(State):
    task_id: str | None = None
    seed: int | None = None
    role: str | None = None
    done: bool = False


@dataclass
class ServedEnv:
    """What every session of one server shares: the spec, its options, the rubric and the policies offered."""

    spec: EnvSpec
    options: Mapping[str, Any]
    make_env: Callable[[], Env]
    rubric: Rubric
    policies: Mapping[str, Callable[[], Policy]]
    """Policy name -> factory: the baselines, and any model policy the server was started with (built once)."""

    def __post_init__(self) -> None:
        self.model_lock = threading.Lock()
        """Model policies are shared by every session: one turn at a time (scripted ones are built per session)."""
        env = self.make_env()
        self.roles: tuple[str, ...] = env.roles
        self.tasks: dict[str, Task] = {t.id: t for split in ("test", "validation", "train") for t in env.tasks(split)}
        self.first_task = env.tasks("test")[0].id

    def assignment(self, text: str) -> tuple[str, ...]:
        """The policy name per role (in `roles` order) that `text` assigns; ServeError for one this server lacks.
        Every spelling of one assignment (spaces, empty parts, roles named or not) gives the same tuple, so a
        session's cache of built policies, keyed by it, holds at most (policies offered) ** (roles) entries."""
        try:
            specs = parse_role_assignment(text, self.roles)
        except ValueError as exc:
            raise ServeError(422, str(exc)[:500]) from None
        unknown = sorted({s for s in specs.values() if s not in self.policies})
        if unknown:
            raise ServeError(422, f"this server has no policy {', '.join(repr(u[:80]) for u in unknown[:5])}; "
                                  f"it offers: {', '.join(self.policies)}")
        return tuple(specs[role] for role in self.roles)

    def build(self, assignment: tuple[str, ...]) -> dict[str, Policy]:
        built: dict[str, Policy] = {}
        return {role: built.setdefault(s, built.get(s) or self.policies[s]()) for role, s in zip(self.roles,
                                                                                              assignment, strict=True)}


class EpisodeSession(Environment[DrillAction, DrillObservation, DrillState]):
    """One session's environment instance and the episode it is playing."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    served: ServedEnv  # set on the per-server subclass (`session_class`)

    def __init__(self) -> None:
        super().__init__()
        self.env = self.served.make_env()
        self.lock = threading.Lock()  # one reset or step at a time, whichever thread OpenEnv runs it on
        self.executor: Executor | None = None
        """The session's own thread, where OpenEnv runs its reset and step; set by `DrillEnvServer` when it makes
        the session. MCP tool calls run there too, never on the event loop."""
        self.task: Task | None = None
        self.seed = 0
        self.turns: list[Turn] = []
        self.observation: Observation | None = None
        self.running_score = False
        self.policy_cache: dict[tuple[str, ...], dict[str, Policy]] = {}
        self.mcp_server = _ToolServer(self)
        self._state = DrillState()
        self.closed = False

    # -- OpenEnv's interface -------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              running_score: bool = False, **unknown: Any) -> DrillObservation:
        if unknown:
            raise ServeError(422, f"unknown reset field(s) {', '.join(sorted(unknown))}; "
                                  "reset takes task_id, seed, running_score, episode_id")
        if seed is None:
            seed = 0
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise ServeError(422, f"seed must be a non-negative integer, got {seed!r}")
        if task_id is None:
            task_id = self.served.first_task
        if not isinstance(task_id, str) or task_id not in self.served.tasks:
            raise ServeError(404, f"{self.served.spec.name} has no task {str(task_id)[:80]!r}; "
                                  "GET /web/info lists the task ids")
        if not isinstance(running_score, bool):
            raise ServeError(422, "running_score must be true or false")
        self._check_open()
        with self.lock:
            self.task, self.seed, self.turns = self.served.tasks[task_id], seed, []
            self.running_score = running_score
            self.observation = self.env.reset(self.task, seed)
            self._state = DrillState(episode_id=episode_id or str(uuid.uuid4()), step_count=0, task_id=task_id,
                                     seed=seed, role=self.observation.role, done=False)
            return self._wire(self.observation, events=[], done=False, score=None)

    def step(self, action: DrillAction, timeout_s: float | None = None, **_: Any) -> DrillObservation:
        self._check_open()
        with self.lock:
            return self._step(action)

    def close(self) -> None:
        """OpenEnv closes a session's environment when the session ends or idles out. A WebSocket that outlived
        its session (OpenEnv's reaper does not close the socket) is told so on its next message."""
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise ServeError(410, "this session was closed (idle for longer than the server's --idle-timeout); "
                                  "open a new session")

    @property
    def state(self) -> DrillState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        spec = self.served.spec
        return EnvironmentMetadata(name=spec.name, description=spec.summary, version=_version(),
                                   documentation_url="docs/serving.md")

    # -- the episode ------------------------------------------------------------------------------------------

    def _step(self, wire: DrillAction) -> DrillObservation:
        if self.task is None or self.observation is None:
            raise ServeError(409, "no episode in this session: send reset first (OpenEnv's HTTP /step is "
                                  "stateless; play an episode over the /ws session)")
        if self.env.done:
            raise ServeError(409, "the episode has ended; send reset to start another")
        observation = self.observation
        if wire.policy is not None:
            if wire.tool or wire.arguments or wire.parse_error:
                raise ServeError(422, "give either a tool call or a policy, not both")
            assignment = self.served.assignment(wire.policy)  # the cache is keyed by what the text means, never
            if assignment not in self.policy_cache:           # by the text: spellings without end, 1 MB each
                self.policy_cache[assignment] = self.served.build(assignment)
            policy = self.policy_cache[assignment][observation.role]
            policy_input = PolicyInput(task=self.task, seed=self.seed, observation=observation, history=tuple(self.turns))
            if policy.info.kind == "scripted":
                action = policy.act([policy_input])[0]
            else:
                with self.served.model_lock:
                    action = policy.act([policy_input])[0]
            info = policy.info
        else:
            action = Action(tool=wire.tool, arguments=wire.arguments, parse_error=wire.parse_error)
            info = CLIENT
        result = self.env.step(action)
        self.turns.append(Turn(index=len(self.turns), role=observation.role, observation=observation,
                               action=action, events=result.events, policy=info.name))
        self.observation = result.observation
        self._state = self._state.model_copy(update={"step_count": len(self.turns), "role": result.observation.role,
                                                     "done": result.done})
        score = self._score() if result.done or self.running_score else None
        return self._wire(result.observation, events=[e.model_dump(mode="json") for e in result.events],
                          done=result.done, score=score, acted=observation.role,
                          action=action.model_dump(mode="json", exclude={"generation"}),
                          policy=info.model_dump(mode="json"))

    def _score(self) -> Score:
        assert self.task is not None
        episode = Episode(env=self.served.spec.name, task_id=self.task.id, seed=self.seed, turns=self.turns,
                          events=[e for t in self.turns for e in t.events], done=self.env.done,
                          policies={r: CLIENT for r in self.served.roles})
        try:
            return self.served.rubric.score(episode, self.task)
        except RubricError:
            raise
        except Exception as exc:  # a rubric that cannot score a partial episode: say so, never a 0
            if self.env.done:
                raise
            raise RubricError(f"the rubric cannot score an unfinished episode: {exc}") from exc

    def _wire(self, observation: Observation, events: list[dict], done: bool, score: Score | None,
              **extra: Any) -> DrillObservation:
        assert self.task is not None
        data = observation.model_dump(mode="json")
        own = {k: data.pop(k) for k in list(data) if k not in Observation.model_fields}
        return DrillObservation(**data, extra=own or None, events=events, task_id=self.task.id, seed=self.seed, turn=len(self.turns),
                                done=done, reward=score.total if done and score is not None else None,
                                score=score.model_dump(mode="json") if score is not None else None, **extra)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """MCP `tools/call`: the same as a step with this tool call, run on the session's thread (OpenEnv would
        run a tool's function on the event loop, where a slow step stalls every other request); the observation
        envelope as `data`."""
        if self.executor is None:
            raise RuntimeError("this session has no thread of its own: it was not made by DrillEnvServer")
        action = DrillAction(tool=name, arguments=arguments)
        observation = await asyncio.get_running_loop().run_in_executor(self.executor, partial(self.step, action))
        envelope = observation.model_dump(mode="json", exclude={"reward", "done", "metadata"})
        return {"content": [{"type": "text", "text": observation.error or observation.content}],
                "isError": observation.error is not None,
                "data": {"observation": envelope, "reward": observation.reward, "done": observation.done}}


@dataclass(frozen=True)
class _McpTool:
    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]


class _ToolServer:
    """What OpenEnv's `/mcp` reads from an environment's `mcp_server`: `list_tools()`, each tool with `fn`.
    The tools are the acting role's, so they change as the turn passes."""

    def __init__(self, session: EpisodeSession) -> None:
        self.session = session

    async def list_tools(self) -> list[_McpTool]:
        observation = self.session.observation
        if observation is None or self.session.env.done:
            return []
        return [_McpTool(t.name, t.description, t.parameters, fn=self._call(t.name)) for t in observation.tools]

    def _call(self, name: str) -> Callable[..., Any]:
        async def call(**arguments: Any) -> dict[str, Any]:
            return await self.session.call_tool(name, arguments)

        return call


def session_class(served: ServedEnv) -> type[EpisodeSession]:
    """A subclass bound to one server's environment, so OpenEnv can build sessions from the class itself."""
    return type(f"{served.spec.name.title()}Session", (EpisodeSession,), {"served": served})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("drill")
    except PackageNotFoundError:
        return "0"
