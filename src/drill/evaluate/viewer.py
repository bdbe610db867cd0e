"""The terminal viewer behind `drill watch ENV`: one episode, turn by turn, for any registered environment.

For every turn: what the acting role saw (its observation, and the error its last action got), the raw model
output when a model acted, the action, the events it caused and the reward so far by component; then the
final score table and the task's ground truth line from the spec. Agent-visible text is printed literally,
never as rich markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from drill.console import console
from drill.core.env import Env
from drill.core.policy import Policy, PolicyInput
from drill.core.rubric import Rubric
from drill.core.spec import EnvSpec
from drill.core.text import clip
from drill.core.types import Episode, Event, Task, Turn
from drill.evaluate.matrix import model_label

_EVENT_VALUE_CHARS = 160


def _event_line(event: Event) -> str:
    data = {k: clip(v, _EVENT_VALUE_CHARS) if isinstance(v, str) else v for k, v in event.data.items()}
    return f"{event.name} {json.dumps(data, ensure_ascii=False)}"


def watch_episode(spec: EnvSpec, env: Env, task: Task, seed: int, policies: Mapping[str, Policy],
                  rubric: Rubric, title: str, max_turns: int = 1000) -> Episode:
    """Play one episode step by step, printing each turn as it happens; the scored episode."""
    console.rule(title)
    console.print(Text(f"task: {spec.describe(task)}"))
    infos = {role: p.info for role, p in policies.items()}
    if model_label(infos) != "—":
        console.print(Text(f"model: {model_label(infos)}"))
    obs = env.reset(task, seed)
    turns: list[Turn] = []
    events: list[Event] = []
    done = False
    while not done and len(turns) < max_turns:
        role, chosen = obs.role, policies[obs.role]
        action = chosen.act([PolicyInput(task=task, seed=seed, observation=obs, history=tuple(turns))])[0]
        result = env.step(action)
        turns.append(Turn(index=len(turns), role=role, observation=obs, action=action, events=result.events,
                          policy=chosen.info.name))
        events += result.events
        done = result.done
        episode = Episode(env=env.name, task_id=task.id, seed=seed, turns=turns, events=events, policies=infos,
                          done=done)
        score = rubric.score(episode, task)
        console.print(Panel(Text(obs.content), title=f"step {obs.step} · {role} ({chosen.info.name}) sees",
                            title_align="left", border_style="cyan"))
        if obs.error:
            console.print(Text.assemble(("error shown: ", "red"), obs.error))
        if action.raw is not None:
            console.print(Panel(Text(action.raw), title="raw model output", title_align="left", border_style="magenta"))
        if action.parse_error is not None:
            console.print(Text.assemble(("unparseable: ", "red"), action.parse_error))
        else:
            arguments = json.dumps(action.arguments, ensure_ascii=False, default=str)
            console.print(Text.assemble((f"{role} -> ", "bold"), f"{clip(action.tool)}({clip(arguments, 2000)})"),
                          soft_wrap=True)
        for event in result.events:
            console.print(Text.assemble(("  event ", "yellow"), _event_line(event)), soft_wrap=True)
        parts = [f"{name} {score.contribution(name):+.3g}" for name in score.components if score.contribution(name)]
        console.print(Text(f"  reward so far {score.total:+.3g}" + (f" = {' | '.join(parts)}" if parts else ""),
                           style="green"))
        obs = result.observation
    episode = episode.model_copy(update={"score": score})
    table = Table(title=f"score after {len(turns)} turns")
    for column in ("component", "value", "weight", "contribution"):
        table.add_column(column, justify="left" if column == "component" else "right")
    for name, value in score.components.items():
        table.add_row(name, f"{value:.3f}", f"{score.weights[name]:g}", f"{score.contribution(name):+.3f}")
    table.add_row("[bold]total", "", "", f"[bold]{score.total:+.3f}")
    console.print(table)
    console.rule(f"episode over after {len(turns)} turns · total {score.total:+g}")
    return episode
