"""Where demonstrations come from, and how they become model turns: a source plays the training split (a baseline,
a model, stored results, a trajectory store), `TeacherForcedPolicy` writes each of its actions as the model turn
that would have produced it, and `ExpertLabels` puts an expert's call at every state the source reached (DAgger).
SFT trains on these turns; DPO's expert pairs prefer the expert's call over the source's (`drill.train.methods`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drill.core.policy import Policy, PolicyInput
from drill.core.rollout import run_episodes
from drill.core.types import Action, Episode, Generation, PolicyInfo, Task
from drill.models.parsing import parse_action
from drill.models.policy import LLMPolicy, PolicyOptions, render_call
from drill.train.config import RunConfig
from drill.train.target import TrainTarget

def epoch_order(count: int, seed: int, epoch: int) -> list[int]:
    order = list(range(count))
    random.Random(f"sft-order:{seed}:{epoch}").shuffle(order)
    return order



def teacher_prompter(model: Any, base: Any, prompting: Mapping[str, Any]) -> LLMPolicy:
    """The LLM policy whose prompts the samples use: the training model's chat template, the run's prompt options."""
    from drill.models.local import TransformersChatModel

    chat = TransformersChatModel(model, base.tokenizer, base.model_id)
    info = PolicyInfo(name="sft-teacher", kind="lora", model=base.model_id, load_status="training")
    return LLMPolicy(chat, info, PolicyOptions(**prompting))


class TeacherForcedPolicy:
    """Plays `source`'s actions, each recorded as the model turn that would have produced it (see step 2 above)."""

    def __init__(self, source: Policy, prompter: LLMPolicy) -> None:
        if prompter.model.native_tools:
            raise ValueError("SFT writes replies in the JSON tool protocol; this model's chat template passes tools "
                             "natively, so the written replies would not be its format")
        self.source = source
        self.prompter = prompter
        self._info = PolicyInfo(name=f"sft:{source.info.name}", kind="lora", model=prompter.info.model,
                                load_status="teacher-forced")

    @property
    def info(self) -> PolicyInfo:
        return self._info

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        return [self.model_turn(item, action) for item, action in zip(inputs, self.source.act(inputs), strict=True)]

    def model_turn(self, item: PolicyInput, action: Action) -> Action:
        """`action` as the model would have written it for `item`: prompt ids, completion ids, parsed text."""
        if action.parse_error is not None:
            raise ValueError(f"the source's action on task {item.task.id} did not parse ({action.parse_error}); "
                             "only valid calls can be demonstrated")
        prefill = self.prompter.options.prefill
        reply = self.reply(item, action)
        if not reply.startswith(prefill):
            raise ValueError(f"the source's reply on task {item.task.id} does not start with the prefill {prefill!r} "
                             f"(reply: {reply[:80]!r}); put the prefill's arguments first or drop the prefill")
        chat = self.prompter.model
        completion = reply[len(prefill):]
        prompt_ids = chat.prompt_token_ids(self.prompter.conversation(item), None)
        ids = chat.tokenizer(completion, add_special_tokens=False)["input_ids"]
        generation = Generation(text=completion, prompt_token_ids=prompt_ids, token_ids=list(ids),
                                model=chat.model_id, finish_reason="stop")
        written = parse_action(reply, generation)
        if (written.tool, written.arguments) != (action.tool, action.arguments):
            raise ValueError(f"the source's call on task {item.task.id} does not survive the reply format: "
                             f"{action.tool}({action.arguments!r}) parsed back as "
                             f"{written.tool}({written.arguments!r})")
        return written

    def reply(self, item: PolicyInput, action: Action) -> str:
        """The text a model would have written for `action`: a Hermes block, or under ReAct prompting the
        source's own `Thought: ...` / `Action: {...}` text (a call alone would teach the model to skip its thought)."""
        if not self.prompter.options.react:
            return render_call(action.tool, action.arguments)
        if action.raw is None or not action.raw.startswith("Thought:"):
            raise ValueError(f"ReAct SFT trains on the thought as well as the call, and the source's action on task "
                             f"{item.task.id} carries none (its raw text is {str(action.raw)[:80]!r}); give the "
                             "source's actions a raw text written by drill.models.policy.render_react, or train "
                             "without --react")
        return action.raw


def _turn_key(item: PolicyInput) -> tuple[str, int, str, int]:
    """(task id, seed, role, the role's turn number): one turn of one episode."""
    return item.task.id, item.seed, item.observation.role, len(item.own_turns())


def _role_turn_numbers(roles: Sequence[str]) -> list[int]:
    """For an episode's turns, given by their roles in order: each turn's number among its role's turns."""
    counts: dict[str, int] = {}
    numbers = []
    for role in roles:
        numbers.append(counts.get(role, 0))
        counts[role] = numbers[-1] + 1
    return numbers


class ExpertLabels:
    """DAgger's data collection (Ross et al. 2011): plays `source`'s actions, and records at every state it reaches
    what `expert` (teacher-forced into a model turn) would have called there; `relabel` puts those calls into
    the episode's turns, so the samples are the expert's calls against the prompts the source's play produced."""

    def __init__(self, source: Policy, expert: TeacherForcedPolicy) -> None:
        self.source = source
        self.expert = expert
        self.labels: dict[tuple[str, int, str, int], Action] = {}
        self.disagreements = 0

    @property
    def info(self) -> PolicyInfo:
        return self.source.info

    @property
    def count(self) -> int:
        return len(self.labels)

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        played = self.source.act(inputs)
        for item, label, action in zip(inputs, self.expert.act(inputs), played, strict=True):
            self.labels[_turn_key(item)] = label
            self.disagreements += (label.tool, label.arguments) != (action.tool, action.arguments)
        return played

    def relabel(self, episode: Episode, roles: Sequence[str]) -> Episode:
        """`episode` with each trained turn's action replaced by the expert's labelled call at that state."""
        numbers = _role_turn_numbers([t.role for t in episode.turns])
        turns = [t.model_copy(update={"action": self.labels[(episode.task_id, episode.seed, t.role, k)]})
                 if t.role in roles else t for t, k in zip(episode.turns, numbers)]
        return episode.model_copy(update={"turns": turns})


class ReplayPolicy:
    """The actions of stored episodes, by (task id, seed, role, the role's turn number)."""

    info = PolicyInfo(name="replay")

    def __init__(self, episodes: Sequence[Mapping[str, Any]]) -> None:
        self.actions: dict[tuple[str, int, str, int], Action] = {}
        stored: set[tuple[str, int]] = set()
        for episode in episodes:
            task_id, seed = episode["task_id"], int(episode["seed"])
            if (task_id, seed) in stored:
                raise ValueError(f"replay: two stored episodes of task {task_id} seed {seed}; keep one of them")
            stored.add((task_id, seed))
            numbers = _role_turn_numbers([turn["role"] for turn in episode["turns"]])
            for turn, k in zip(episode["turns"], numbers):
                action = turn["action"]
                generation = action.get("generation")
                self.actions[(task_id, seed, turn["role"], k)] = Action(
                    tool=action["tool"], arguments=action["arguments"], parse_error=action.get("parse_error"),
                    raw=action.get("raw"),  # what a model wrote, so later prompts show it as it was
                    generation=None if generation is None else Generation.model_validate(generation))

    def act(self, inputs: Sequence[PolicyInput]) -> list[Action]:
        actions = []
        for item in inputs:
            key = _turn_key(item)
            if key not in self.actions:
                raise ValueError(f"replay: the stored episode of task {key[0]} seed {key[1]} has no turn {key[3]} for "
                                 f"role {key[2]}; the environment diverged from the stored episode")
            actions.append(self.actions[key])
        return actions


def play_source(config: RunConfig, source_name: str, expert: str | None, target: TrainTarget, roles: Sequence[str],
                prompter: LLMPolicy, max_tasks: int = 0, seeds_per_task: int = 1,
                ) -> tuple[list[Episode], ExpertLabels | None]:
    """The source's scored episodes on the training split. Without an expert they are teacher-forced into model
    turns; with one, they are the source's own turns as played, and the returned `ExpertLabels` holds the
    expert's call at every trained state (`relabel` puts them in)."""
    train_tasks = target.tasks("train")
    if max_tasks:
        train_tasks = train_tasks[:max_tasks]
    jobs: list[tuple[Task, int]] = [(t, s) for t in train_tasks for s in range(seeds_per_task)]
    source: Policy
    if source_name.startswith("results:"):
        source, jobs = _stored(Path(source_name.removeprefix("results:")), train_tasks)
    elif source_name.startswith("store:"):
        source, jobs = _from_store(Path(source_name.removeprefix("store:")), target, train_tasks)
    elif source_name in target.baselines:
        source = target.baselines[source_name]()
    elif source_name == "llm" or source_name.startswith("lora:"):
        from dataclasses import replace

        from drill.models.base import SamplingParams
        from drill.models.policy import build_llm_policy
        from drill.models.prompt import LLMOptions

        sampling = SamplingParams(max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                                  seed=config.seed)
        source = build_llm_policy(source_name, LLMOptions(model=config.model, device=config.device,
                                                          prompt=replace(prompter.options, sampling=sampling)))
    else:
        raise ValueError(f"unknown source {source_name!r}; choose from {', '.join(target.baselines)}, "
                         "llm, lora:PATH, results:PATH, store:PATH")
    teacher: Policy = TeacherForcedPolicy(source, prompter)
    labels: ExpertLabels | None = None
    if expert is not None:
        if expert not in target.baselines:
            raise ValueError(f"unknown expert {expert!r}; choose a baseline of {target.name}: "
                             f"{', '.join(target.baselines)}")
        teacher = labels = ExpertLabels(source, TeacherForcedPolicy(target.baselines[expert](), prompter))
    scripted = target.baselines[config.scripted_policy]() if len(roles) < len(target.roles) else None
    assignment = {role: teacher if role in roles else scripted for role in target.roles}
    episodes = run_episodes(target.make_env, jobs, assignment, target.rubric({}),  # type: ignore[arg-type]
                            config.max_turns)
    if labels is not None:
        print(f"{expert} labelled {labels.count} states the source reached; it would have acted "
              f"differently in {labels.disagreements} of them")
    return episodes, labels


def _from_store(path: Path, target: TrainTarget, train_tasks: Sequence[Task]) -> tuple[ReplayPolicy,
                                                                                      list[tuple[Task, int]]]:
    """A replay of a trajectory store's successes (drill.memory; `drill eval --store`, LATS finds included) on this
    environment's training tasks with the same options; the rest are counted and left out."""
    from drill.memory.store import TrajectoryStore

    if not path.is_file():
        raise ValueError(f"source: trajectory store {path} does not exist (fill one with drill eval ... --store PATH)")
    store = TrajectoryStore(path)
    rows = store.episodes(env=target.spec.name, split="train", success=True)
    by_id = {t.id: t for t in train_tasks}
    kept = [r for r in store.episodes(env=target.spec.name, split="train", success=True, options=target.options)
            if r.task_id in by_id]
    store.close()
    print(f"source: {len(kept)} of {len(rows)} successful training-split {target.spec.name} episodes in {path} are on "
          "these training tasks with these options")
    if not kept:
        raise ValueError(f"source: {path} holds no successful episode of a {target.spec.name} training task with "
                         "these options")
    episodes = [json.loads(r.episode_json) for r in kept]
    return ReplayPolicy(episodes), [(by_id[e["task_id"]], int(e["seed"])) for e in episodes]


def _stored(path: Path, train_tasks: Sequence[Task]) -> tuple[ReplayPolicy, list[tuple[Task, int]]]:
    """A replay of the training-split episodes stored in a results.json; validation- and test-split ones are dropped,
    and counted."""
    if not path.is_file():
        raise ValueError(f"source: results file {path} does not exist")
    stored = json.loads(path.read_text(encoding="utf-8")).get("episodes", [])
    by_id = {t.id: t for t in train_tasks}
    kept = [e for e in stored if e["task_id"] in by_id]
    print(f"source: {len(kept)} of {len(stored)} stored episodes are on the training tasks in use; the other "
          f"{len(stored) - len(kept)} (validation or test split, beyond max_tasks, or unknown) are not used")
    if not kept:
        raise ValueError(f"source: {path} holds no episode of a training task")
    return ReplayPolicy(kept), [(by_id[e["task_id"]], int(e["seed"])) for e in kept]

