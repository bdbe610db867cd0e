"""Any registered Drill environment as a verifiers environment, in-process, without a server.

verifiers (and prime-rl, which trains on it) takes environments through `load_environment(**args)`, returning a
`vf.Environment` that plays rollouts against an OpenAI-compatible client and scores them with a `vf.Rubric`. This
module builds one from an environment's spec (verifiers' classic `MultiTurnEnv` API, 0.3.x):

    import verifiers as vf
    from drill.integrations.verifiers import load_environment

    env = load_environment("triage", mode="agent")              # env options as `-E` takes them
    client = vf.ClientConfig(api_base_url="http://localhost:8000/v1", api_key_var="OPENAI_API_KEY")
    results = env.evaluate_sync(client=client, model="Qwen/Qwen2.5-7B-Instruct", num_examples=8)

For prime-rl, an environment package is a module whose own `load_environment(**args)` returns this one's.

* The dataset holds one row per (task, seed) of the train split, the eval dataset the test split's: the acting
  role's standing brief as the system message, its first view as the user message, `info` naming the task and seed.
* The tools are the role's tools, from the environment's own schemas, offered natively (`tool_defs`).
* Every model reply is one Drill turn, read as `drill eval` reads a reply from an OpenAI-compatible server: its
  structured tool calls are written as `<tool_call>` blocks after its text and Drill's one parser reads them
  (`drill.models.openai_backend.response_text`, `drill.models.parsing.parse_action`). So a reply with no call,
  two calls, JSON that does not parse or arguments that are not an object is the environment's invalid action
  (error observation, `invalid_action` event), and the rollout goes on as Drill's own loop goes on; an unknown
  tool or arguments that do not fit the schema are rejected by the environment itself. No agent string raises.
* The rollout ends when the episode ends. One that verifiers stops earlier (its `max_turns` attribute, a timeout, a
  client error) is finished as Drill's loop finishes it for a policy that no longer calls tools (a last reply verifiers
  never answered is played first): each remaining turn of the trained role an invalid action, so the score carries
  the environment's format penalty, never an unscored 0.
* The reward is the rubric's total; each rubric component is a zero-weight metric, so verifiers logs it beside the
  total. The episode is scored once, when the rollout is cleaned up, so a rubric that fails raises out of the
  rollout (verifiers' own reward functions turn an exception into 0; these only read the score).
* In a multi-role environment the model plays `role`; the other roles are played by a named baseline (`others`,
  default the oracle) between its turns, as `drill eval --policy oracle,ROLE=llm` would.

A rollout's scored Drill episode is `state["drill_episode"]` (JSON; `state_columns=["drill_episode"]` puts it in
verifiers' outputs), its live session `state["drill"]`. The same replies give the same episode and score as
`drill eval` (tests/integrations/test_verifiers.py checks it with a scripted client).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import verifiers as vf
from datasets import Dataset

from drill.core.types import PolicyInfo, Score
from drill.integrations.trl import DrillEnvironment, environment_factory
from drill.models.openai_backend import response_text
from drill.models.parsing import parse_action

__all__ = ["DrillVerifiersEnv", "load_environment"]

VERIFIERS_POLICY = PolicyInfo(name="verifiers", kind="remote")
"""The policy recorded for the turns verifiers' model played."""
TOTAL = "drill_total"
"""The name of the reward function (the rubric's total) among verifiers' metrics."""
NOT_EXECUTED = "not executed: send one tool call per turn; the environment's answer is in the first call's result"


def load_environment(name: str, *, role: str | None = None, others: str = "oracle", seeds: int = 1,
                     **options: Any) -> DrillVerifiersEnv:
    """The registered environment `name` with env options `options` (as `-E` takes them: `max_turns=` here is the
    environment's own option where it has one) as a verifiers environment: `seeds` rows per task, the model
    playing `role`, the baseline `others` playing the rest. The episode's own end stops a rollout; verifiers' cap
    on model replies is the returned environment's `max_turns` attribute (-1: none)."""
    trl_class = environment_factory(name, role=role, others=others, **options)
    session_class = type(trl_class.__name__.replace("Environment", "Session"), (trl_class,),
                         {"model_policy": VERIFIERS_POLICY})
    return DrillVerifiersEnv(session_class, seeds=seeds)


class DrillVerifiersEnv(vf.MultiTurnEnv):
    """A verifiers multi-turn environment whose rollouts are episodes of one Drill environment. Each rollout gets
    its own Drill session (TRL's in-process `DrillEnvironment`, which already plays the other roles and records
    the episode as `drill eval` does), kept in `state["drill"]`; its stepping methods are underscore-named only
    because TRL offers every public method of that class to the model as a tool."""

    def __init__(self, factory: Callable[[], DrillEnvironment], *, seeds: int = 1) -> None:
        if seeds < 1:
            raise ValueError(f"seeds must be at least 1, got {seeds}")
        self.factory = factory
        probe = factory()
        self.drill_name = probe.spec.name
        rubric = vf.Rubric()
        rubric.add_reward_func(drill_total, weight=1.0)
        for key in probe._rubric.weights:
            rubric.add_metric(_component(key))
        super().__init__(dataset=lambda: _rows(factory, "train", seeds),
                         eval_dataset=lambda: _rows(factory, "test", seeds),
                         rubric=rubric, tool_defs=_tool_defs(probe), max_turns=-1,
                         env_id=f"drill-{self.drill_name}")
        self._check_metric_names()

    def _check_metric_names(self) -> None:
        """verifiers keys its metrics by function name, so a component named like another metric (the total,
        verifiers' own `num_turns`) would silently overwrite it: refuse it instead."""
        rubrics = getattr(self.rubric, "rubrics", [self.rubric])
        names = [getattr(f, "__name__", "") for r in rubrics for f in r.funcs]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise ValueError(f"{self.drill_name}: rubric components clash with other verifiers metrics: "
                             f"{', '.join(clashes)}")

    async def setup_state(self, state: vf.State) -> vf.State:
        """Start the row's episode in a fresh session; the prompt is that episode's own brief and first view."""
        info = state["info"]
        session = self.factory()
        first = session.reset(str(info["task_id"]), int(info["seed"]))
        state["drill"] = session
        state["drill_replies"] = 0
        brief, view = _brief_and_view(session, first)
        state["prompt"] = [vf.SystemMessage(content=brief), vf.UserMessage(content=view)]
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        """The environment's answer to the last reply, as one Drill turn: a tool message per structured call (the
        first carries the view; OpenAI-compatible servers want every call answered), or a user message when the
        reply made no structured call."""
        session: DrillEnvironment = state["drill"]
        reply = messages[-1]
        view = _play(session, reply, state)
        calls = list(getattr(reply, "tool_calls", None) or [])
        answer: vf.Messages = ([vf.ToolMessage(tool_call_id=calls[0].id, content=view)]
                               + [vf.ToolMessage(tool_call_id=c.id, content=NOT_EXECUTED) for c in calls[1:]]
                               if calls else [vf.UserMessage(content=view)])
        if session.env.done:  # the rollout ends here, with this answer recorded as the completion's last message
            state["final_env_response"] = answer
        return answer

    @vf.cleanup
    async def score_episode(self, state: vf.State) -> None:
        """Finish the episode (if verifiers stopped before it ended: a last reply it never answered is played first)
        and score it once, raising if the rubric fails; the scored episode goes in `state["drill_episode"]` as JSON
        (ask for it with `state_columns`). Runs after verifiers renders the completion (its render handler has the
        higher priority)."""
        session: DrillEnvironment | None = state.get("drill")
        if session is not None and session.task is not None:
            for step in state["trajectory"][state["drill_replies"]:]:  # a last reply verifiers stopped after
                if not session.env.done:
                    _play(session, step["completion"][-1], state)
            session.get_reward()
            state["drill_episode"] = session.episode.model_dump(mode="json")


def _play(session: DrillEnvironment, reply: Any, state: vf.State) -> str:
    """One model reply as one Drill turn (read by Drill's parser), the other roles' turns after it; the view the
    trained role gets next."""
    session._apply(parse_action(response_text(_as_openai(reply))))
    session._play_others()
    state["drill_replies"] += 1
    return session._text()


def drill_total(state: vf.State) -> float:
    """The rubric's total: the reward (its name, `TOTAL`, is the metric verifiers logs it under)."""
    return _score(state).total


def _component(key: str) -> Callable[[vf.State], float]:
    def component(state: vf.State) -> float:
        return _score(state).components[key]

    component.__name__ = key
    return component


def _score(state: vf.State) -> Score:
    session: DrillEnvironment = state["drill"]
    if session.score is None:
        raise RuntimeError("the episode was not scored: the rollout did not reach its cleanup")
    return session.score


def _rows(factory: Callable[[], DrillEnvironment], split: str, seeds: int) -> Dataset:
    """One row per (task, seed) of `split`: the prompt of that episode and the `info` that restarts it."""
    probe = factory()
    rows = []
    for task in probe.env.tasks(split):
        for seed in range(seeds):
            brief, view = _brief_and_view(probe, probe.reset(task.id, seed))
            rows.append({"prompt": [{"role": "system", "content": brief}, {"role": "user", "content": view}],
                         "info": {"task_id": task.id, "seed": seed}})
    if not rows:
        raise ValueError(f"{probe.spec.name} has no {split} tasks")
    return Dataset.from_list(rows)


def _brief_and_view(session: DrillEnvironment, first: str) -> tuple[str, str]:
    """The acting role's standing brief (the system message) and its first view (the user message)."""
    observation = session.observation
    return (observation.instructions if observation is not None else ""), first


def _tool_defs(probe: DrillEnvironment) -> list[vf.Tool]:
    """The trained role's tools, from its first view of the first training task (tools do not change by task)."""
    first = probe.env.tasks("train")[0]
    probe.reset(first.id, 0)
    observation = probe.observation
    if probe.env.done or observation is None:
        raise ValueError(f"{probe.spec.name}: the episode ended before {probe.role} acted; no tools to offer")
    return [vf.Tool(name=t.name, description=t.description or t.name, parameters=dict(t.parameters))
            for t in observation.tools]


def _as_openai(message: Any) -> SimpleNamespace:
    """A verifiers assistant message in the shape of an OpenAI chat message (`content`, `tool_calls[i].function`),
    so `response_text` writes it exactly as it writes a reply from an OpenAI-compatible server."""
    calls = [SimpleNamespace(function=SimpleNamespace(name=c.name, arguments=c.arguments))
             for c in getattr(message, "tool_calls", None) or []]
    return SimpleNamespace(content=_text(getattr(message, "content", None)), tool_calls=calls)


def _text(content: Any) -> str:
    """A message's content as text: a string as it is, content parts joined by their text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "\n".join(str(getattr(p, "text", None) or (p.get("text") if isinstance(p, dict) else "") or "")
                     for p in parts)
