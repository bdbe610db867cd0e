"""Any registered Drill environment inside TRL's `GRPOTrainer`, in-process, without a server.

TRL (>= 1.16) takes multi-turn environments through `GRPOTrainer(environment_factory=...)`: a class whose public
methods are the tools the model may call (typed, with Google-style docstrings), a `reset(**row)` that starts an
episode for one dataset row and returns the text appended to the prompt, and `get_reward()` that scores the
finished rollout. This module builds that class from an environment's spec:

    from trl import GRPOConfig, GRPOTrainer
    from drill.integrations import trl as drill_trl

    trainer = GRPOTrainer(model=model, processing_class=drill_trl.chatml_tools(tokenizer),
                          train_dataset=drill_trl.dataset("triage", mode="agent"),
                          environment_factory=drill_trl.environment_factory("triage", mode="agent"),
                          reward_funcs=drill_trl.component_rewards("triage", mode="agent"),
                          args=GRPOConfig(reward_weights=[0.0] * 6, ...))   # components logged, not optimized

* The tools are the acting role's tools, from the environment's own schemas; a call goes to `Env.step` as a Drill
  `Action`, so arguments that do not fit the schema get the environment's own error observation and its
  `invalid_action` event (the methods take `**arguments`: TRL never rejects a call before Drill sees it).
* The reward is the rubric's total (`get_reward`); `component_rewards` gives one zero-weight reward function per
  rubric component, so TRL logs each (`rewards/<component>/mean`) beside the total.
* In a multi-role environment the model plays `role`; the other roles are played by a named baseline (`others`,
  default the oracle) between its turns, as `drill eval --policy oracle,ROLE=llm` would.
* A rollout that ends (TRL stops when a reply has no tool call) before the environment ends the episode is finished
  as Drill's own loop finishes it for a policy that no longer calls tools: each remaining turn of the trained role
  is an invalid action, so the score carries the environment's format penalty, never an unscored 0.

The same actions give the same episode and score as `drill eval` (tests/integrations/test_trl.py checks it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drill import registry
from drill.core.env import Env
from drill.core.policy import Policy, PolicyInput
from drill.core.rubric import Rubric
from drill.core.spec import EnvSpec
from drill.core.tools import ToolSpec
from drill.core.types import SPLITS, Action, Episode, Event, Observation, PolicyInfo, Score, Task, Turn

__all__ = ["DrillEnvironment", "chatml_tools", "component_rewards", "dataset", "environment_factory"]

TRL_POLICY = PolicyInfo(name="trl", kind="remote")
"""The policy recorded for the turns TRL's model played."""
NO_CALL = "the reply made no tool call"
MAX_FINISHING_STEPS = 10_000
_JSON_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                                "object": dict}


class DrillEnvironment:
    """One rollout's Drill environment, as TRL's environment contract wants it. Subclassed per environment by
    `environment_factory`, which adds one method per tool of the trained role."""

    spec: EnvSpec
    options: Mapping[str, Any]
    role: str
    others: str
    _make_env: Callable[[], Env]
    _rubric: Rubric
    _tasks: Mapping[str, Task]
    model_policy: PolicyInfo = TRL_POLICY
    """The policy recorded for the trained role's turns (`drill.integrations.verifiers` records its own)."""

    def __init__(self) -> None:
        self.env = self._make_env()
        baselines = self.spec.baselines(self.options)
        if self.others not in baselines:
            raise ValueError(f"{self.spec.name} has no baseline {self.others!r} for the other roles; "
                             f"it has {', '.join(baselines)}")
        self._others: dict[str, Policy] = {r: baselines[self.others]() for r in self.env.roles if r != self.role}
        self.task: Task | None = None
        self.seed = 0
        self.turns: list[Turn] = []
        self.observation: Observation | None = None
        self.score: Score | None = None

    def reset(self, task_id: str, seed: int = 0, **_: Any) -> str:
        """Start the episode of one dataset row (`task_id`, `seed`); the trained role's first view."""
        self.task, self.seed, self.turns, self.score = self._tasks[task_id], int(seed), [], None
        self.observation = self.env.reset(self.task, self.seed)
        self._play_others()
        return self._text()

    def get_reward(self) -> float:
        """The rubric's total for the rollout, the episode finished first if TRL stopped before it ended."""
        return self._finish().total

    def _finish(self) -> Score:
        """Finish the episode (every remaining turn of the trained role an invalid action) and score it once."""
        if self.score is None:
            for _ in range(MAX_FINISHING_STEPS):
                if self.env.done:
                    break
                self._apply(Action(tool="", arguments={}, parse_error=NO_CALL))
            else:
                raise RuntimeError(f"{self.spec.name}: the episode did not end within {MAX_FINISHING_STEPS} turns")
            self.score = self._rubric.score(self.episode, self._task())
        return self.score

    @property
    def episode(self) -> Episode:
        """The episode so far, recorded as `drill eval` records it (a property: TRL offers every public method to
        the model as a tool, so nothing but `reset`, `get_reward` and the tools is a method here)."""
        task = self._task()
        policies = {r: self._others[r].info if r in self._others else self.model_policy for r in self.env.roles}
        return Episode(env=self.env.name, task_id=task.id, seed=self.seed, turns=list(self.turns),
                       events=[e for t in self.turns for e in t.events], policies=policies, done=self.env.done,
                       score=self.score)

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        if self.env.done:
            return "error: the episode has ended; no more tool calls"
        self._apply(Action(tool=tool, arguments=arguments))
        self._play_others()
        return self._text()

    def _apply(self, action: Action, policy: PolicyInfo | None = None) -> list[Event]:
        policy = policy or self.model_policy
        observation = self._observation()
        result = self.env.step(action)
        self.turns.append(Turn(index=len(self.turns), role=observation.role, observation=observation, action=action,
                               events=result.events, policy=policy.name))
        self.observation = result.observation
        return result.events

    def _play_others(self) -> None:
        """Let the baseline play every other role until the trained role acts or the episode ends."""
        while not self.env.done and self._observation().role != self.role:
            policy = self._others[self._observation().role]
            seen = PolicyInput(task=self._task(), seed=self.seed, observation=self._observation(),
                               history=tuple(self.turns))
            self._apply(policy.act([seen])[0], policy.info)

    def _text(self) -> str:
        observation = self._observation()
        text = observation.content if observation.error is None else f"error: {observation.error}\n{observation.content}"
        return text + ("\n[the episode has ended]" if self.env.done else "")

    def _observation(self) -> Observation:
        if self.observation is None:
            raise RuntimeError("reset() first: TRL resets every environment before its rollout")
        return self.observation

    def _task(self) -> Task:
        if self.task is None:
            raise RuntimeError("reset() first: TRL resets every environment before its rollout")
        return self.task


def environment_factory(name: str, *, role: str | None = None, others: str = "oracle",
                        **options: Any) -> Callable[[], DrillEnvironment]:
    """`GRPOTrainer(environment_factory=...)` for the registered environment `name` with env options `options`
    (as `-E` takes them): a class per call, whose methods are the trained role's tools."""
    spec = registry.get(name)
    parsed = spec.parse_options(options)
    make_env = spec.make(parsed)
    env = make_env()
    role = _role(env, role)
    tasks = {t.id: t for split in SPLITS for t in env.tasks(split)}
    tools = _role_tools(env, role, spec, parsed, others)
    members: dict[str, Any] = {"spec": spec, "options": parsed, "role": role, "others": others,
                               "_make_env": staticmethod(make_env), "_rubric": spec.rubric_for(parsed),
                               "_tasks": tasks, "__doc__": f"Drill's {name} environment, {role}'s tools."}
    for tool in tools:
        if tool.name in members or hasattr(DrillEnvironment, tool.name) or tool.name.startswith("_"):
            raise ValueError(f"{name}: the tool name {tool.name!r} clashes with the environment class's own members")
        members[tool.name] = _method(tool)
    return type(f"Drill{name.title()}Environment", (DrillEnvironment,), members)


def dataset(name: str, *, split: str = "train", seeds: int = 1, role: str | None = None, others: str = "oracle",
            **options: Any) -> Any:
    """A `datasets.Dataset` of (task, seed) rows for the environment's `split`: `prompt` (the role's standing brief
    as the system message, and an empty user message that `reset` fills with the first view), `task_id`, `seed`."""
    from datasets import Dataset

    factory = environment_factory(name, role=role, others=others, **options)
    probe = factory()
    rows = []
    for task in probe.env.tasks(split):
        for seed in range(seeds):
            probe.reset(task.id, seed)
            brief = probe._observation().instructions
            rows.append({"prompt": [{"role": "system", "content": brief}, {"role": "user", "content": ""}],
                         "task_id": task.id, "seed": seed})
    if not rows:
        raise ValueError(f"{name} has no {split} tasks")
    return Dataset.from_list(rows)


def component_rewards(name: str, **options: Any) -> list[Callable[..., list[float]]]:
    """One reward function per rubric component (each reads the rollout's finished score), named after the
    component, for `reward_funcs` with weight 0 in `GRPOConfig.reward_weights`: TRL logs each beside the total."""
    spec = registry.get(name)
    names = list(spec.rubric_for(spec.parse_options(options)).weights)

    def component(key: str) -> Callable[..., list[float]]:
        def reward(*_: Any, environments: Sequence[DrillEnvironment], **__: Any) -> list[float]:
            return [env._finish().components[key] for env in environments]

        reward.__name__ = key
        return reward

    return [component(key) for key in names]


def chatml_tools(tokenizer: Any) -> Any:
    """A ChatML tokenizer whose chat template ignores tools (SmolLM2's, the embedded model's) given the ChatML
    template that renders them and TRL's parser for the `<tool_call>` JSON replies it asks for (Qwen2.5's, whose
    format is the one Drill's own prompts teach). Other tokenizers are returned as they are."""
    from trl.chat_template_utils import qwen2_5_chat_template, qwen3_template

    template = tokenizer.chat_template or ""
    if "<|im_start|>" not in template or "tools" in template:
        return tokenizer
    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.response_template = qwen3_template
    return tokenizer


def _role(env: Env, role: str | None) -> str:
    if role is None:
        if len(env.roles) > 1:
            raise ValueError(f"{env.name} has several roles ({', '.join(env.roles)}): name the one to train (role=)")
        return env.roles[0]
    if role not in env.roles:
        raise ValueError(f"{env.name} has no role {role!r}; its roles: {', '.join(env.roles)}")
    return role


def _role_tools(env: Env, role: str, spec: EnvSpec, options: Mapping[str, Any], others: str) -> list[ToolSpec]:
    """The trained role's tools, from its first view of the first training task (tools do not change by task)."""
    probe_class = type("Probe", (DrillEnvironment,), {
        "spec": spec, "options": options, "role": role, "others": others, "_make_env": staticmethod(lambda: env),
        "_rubric": spec.rubric_for(options), "_tasks": {t.id: t for t in env.tasks("train")}})
    probe = probe_class()
    probe.reset(env.tasks("train")[0].id)
    if probe.env.done:
        raise ValueError(f"{env.name}: the episode ended before {role} acted; no tools to list")
    return list(probe._observation().tools)


def _method(tool: ToolSpec) -> Callable[..., str]:
    """A method named after the tool, whose signature and docstring are the tool's schema (what TRL renders into
    the prompt), and which sends whatever arguments it gets to the environment."""
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [tool.description or tool.name, "", "Args:"]
    for key, schema in properties.items():
        kind = _JSON_TYPES.get(str(schema.get("type", "string")), str)
        annotations[key] = kind
        default = inspect.Parameter.empty if key in required else schema.get("default")
        parameters.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind))
        description = " ".join(str(schema.get("description", key)).split())
        lines.append(f"    {key}: {description}")
    if not properties:
        lines = lines[:-1]
    lines += ["", "Returns:", "    What the environment shows next."]

    def call(self: DrillEnvironment, **arguments: Any) -> str:
        return self._call(tool.name, arguments)

    call.__name__ = call.__qualname__ = tool.name
    call.__doc__ = "\n".join(lines)
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = annotations
    return call
