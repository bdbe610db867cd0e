"""Supervised fine-tuning (SFT) of the LoRA adapter on episodes: the whole loop in `train()`.

How to run it:

    drill train triage -E k=1 --stage sft:source=oracle,epochs=2 --tool-listing compact \\
        --prefill '<tool_call>\\n{"name": "submit_resolution", "arguments": {"resolution": "'

    from drill.train.sft import SFTOptions, train
    result = train(GRPOConfig(env="triage", env_options={"k": 1}, ...), SFTOptions(source="heuristic", epochs=2))

The run config (`GRPOConfig`) gives what every trainer shares: the environment, the base model, the LoRA
shape, the learning rate, the prompt options, the output folder and the closing evaluation. `SFTOptions`
gives what SFT adds: where the episodes come from and how many epochs.

1. **Episodes.** A source plays the training split (never the test split): a baseline (`oracle`,
   `heuristic`), a model policy (`llm`, `lora:PATH`, sampled at `config.temperature`), `results:PATH`, the
   episodes of a `results.json`/`heldout.json` replayed through the environment (test-split episodes in
   it are dropped and counted), or `store:PATH`, the successful training-split episodes of a trajectory
   store (`drill eval --store`, LATS finds included; `drill.memory`) with the same env options. Episodes
   scoring below `min_reward` are dropped. With `expert=BASELINE` (DAgger, `ExpertLabels`), the source only
   drives the episodes (e.g. `source=lora:PATH`, or `results:PATH` of that adapter's stored training-split
   play), and every trained turn is labelled with the expert's call at the state the source reached: the
   model learns what to do where its own mistakes lead, not only on the demonstrator's path.
2. **Samples, rendered as the policy prompts.** `TeacherForcedPolicy` plays the source's actions and
   records each trained turn as the LLM policy would have produced it: the prompt ids are
   `LLMPolicy.conversation` rendered by the model's chat template (same instructions, tool listing,
   demonstrations, history and prefill), the completion ids are the call written in the reply format
   (`render_call`), minus the prefill, through `</tool_call>` (where generation stops). Under ReAct prompting
   (`react=True`) the reply is the source's own text, `Thought: ...` then `Action: {...}` through the stop
   string (`render_react`), so the source must write its thought into `Action.raw`: a model's stored turns do,
   and a scripted teacher can (`benchmarks/inbox_extractive_sft.py --quote`). The reply text is
   parsed back (`parse_action`) and must give the source's call, so the environment sees exactly what a
   model writing those tokens would send. `samples.episode_samples` then makes one sample per trained turn
   (multi-turn episodes give one per turn), loss only on the completion ids. With `pack=true` the turns of an
   episode whose prompts extend each other run as one sequence with loss on every turn's completion
   (`samples.pack_turns`): the same loss, each shared prefix computed once.
3. **Loss.** Mean negative log-likelihood per completion token over each optimizer batch (`batch_size` turns,
   `step_plan`), AdamW on the LoRA weights, gradient-norm clip; `epochs` passes in a seeded order.
4. **Outputs** as `grpo.train`: `metrics.jsonl`, atomic checkpoints every `checkpoint_every` optimizer
   steps (resume continues inside the epoch), `adapter/`, `learning_curve.png`, `heldout.json`.

DAgger here is one round with the learner alone driving (Ross et al.'s beta = 0), and it trains on the new
labels only; aggregating with the earlier data is a results file that holds both.

Where it departs from plain SFT: the data are whole-turn tool calls from episodes, not text pairs, and a
demonstration that cannot be written in the reply format (a source action the parser would not give
back) stops the run instead of being trained on approximately, and so does a ReAct source action without a
thought. Models whose chat template passes tools natively are refused: their reply format is not the JSON
protocol `render_call` writes.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drill.core.policy import Policy, PolicyInput
from drill.core.rollout import run_episodes
from drill.core.types import Action, Episode, Generation, PolicyInfo, Task
from drill.evaluate.report import atomic_write_text, progress_bar
from drill.models.parsing import parse_action
from drill.models.policy import LLMPolicy, PolicyOptions, render_call
from drill.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from drill.train.config import GRPOConfig
from drill.train.metrics import MetricsLog, plot_learning_curve
from drill.train.samples import (Sample, episode_samples, micro_batch_logprobs, micro_batches, pack_turns,
                                 token_budget)
from drill.train.target import TrainTarget


@dataclass(frozen=True)
class SFTOptions:
    """What SFT adds to the run config."""

    source: str = "oracle"
    """Who plays the training split: a baseline name, `llm`, `lora:PATH`, or `results:PATH` (stored episodes)."""
    epochs: int = 2
    """Passes over the samples."""
    batch_size: int = 8
    """Samples per optimizer step (forwarded in micro-batches of `config.micro_batch_size`)."""
    seeds_per_task: int = 1
    """Episodes per training task (environment seeds 0..n-1); more gives a sampling source more variety."""
    max_tasks: int = 0
    """Use only the first N training tasks (0: all)."""
    min_reward: float | None = None
    """Keep only episodes whose total reward is at least this (None: keep all)."""
    expert: str | None = None
    """A baseline that labels the states the source reaches (DAgger): the source's actions drive the episodes,
    and every trained turn is trained on the expert's call at that state instead of the source's."""
    pack: bool = False
    """Run an episode's turns as one sequence where each prompt extends the last (`samples.pack_turns`): the same
    loss on fewer tokens. Batches then take whole episodes, in a seeded order, until they hold `batch_size` turns."""

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "seeds_per_task"):
            if getattr(self, name) < 1:
                raise ValueError(f"sft: {name} must be at least 1, got {getattr(self, name)}")
        if self.max_tasks < 0:
            raise ValueError(f"sft: max_tasks must be >= 0, got {self.max_tasks}")
        if self.expert is not None and self.min_reward is not None:
            raise ValueError("sft: min_reward filters the source's own episodes, expert relabels every state the "
                             "source reaches; use one of them")
        if self.expert is not None and self.expert == self.source:
            raise ValueError(f"sft: expert {self.expert!r} is also the source; drop expert= (it would change nothing)")


# -- the loop ----------------------------------------------------------------------------------------------


def train(config: GRPOConfig, options: SFTOptions, target: TrainTarget | None = None, base: Any = None,
          init_adapter: Path | None = None) -> Any:
    """Fine-tune the adapter on the source's episodes as the module docstring says; returns a `TrainResult`."""
    from drill.models.adapters import save_adapter
    from drill.train.grpo import TrainResult, load_base, plan_run, seed_everything
    from drill.train.heldout import evaluate_heldout
    from drill.train.lora import lora_training
    from drill.train.rollouts import prompt_options

    # -- setup: environment, base model + LoRA (fresh or the previous stage's), the episodes, the samples --
    plan = plan_run(config, target)
    target, roles = plan.target, plan.roles
    base = base or load_base(config.model)
    seed_everything(config.seed)
    model, params, optimizer, pad_id = lora_training(base, config, init_adapter)
    out = config.output_dir
    metrics = MetricsLog(out / "metrics.jsonl")
    atomic_write_text(out / "config.json", json.dumps(config.to_dict() | {"sft": vars(options)}, indent=1))
    prompting = prompt_options(config, target)
    prompter = teacher_prompter(model, base, prompting)
    episodes = source_episodes(config, options, target, roles, prompter)
    samples = [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {role: 1.0 for role in roles})]
    if not samples:
        raise ValueError(f"sft: the source {options.source!r} gave no trained turns to learn from")
    turns = len(samples)
    if options.pack:
        samples = pack_turns(samples)
    plan = step_plan(samples, options.batch_size, config.seed, options.epochs)
    total = len(plan)
    start = resume_step(config, out, metrics, model, optimizer)
    reward = float(np.mean([e.score.total for e in episodes if e.score is not None]))
    packed = f" packed into {len(samples)} sequences" if options.pack else ""
    print(f"sft: {len(episodes)} episodes from {options.source} (mean reward {reward:.3f}), {turns} samples{packed}, "
          f"{options.epochs} epochs = {total} optimizer steps")

    with progress_bar() as progress:
        bar = progress.add_task("SFT", total=total, completed=start)
        for step in range(start + 1, total + 1):
            started = time.perf_counter()
            epoch, indices = plan[step - 1]  # the same plan after a resume
            chosen = [samples[i] for i in indices]
            model.train()
            loss, tokens, grad_norm = nll_update(model, optimizer, params, chosen, pad_id, config)
            record = {"step": step, "stage": "sft", "epoch": epoch + 1, "loss": loss, "tokens": tokens,
                      "grad_norm": grad_norm, "samples": sum(s.turns for s in chosen), "sequences": len(chosen),
                      "source_reward": reward, "step_s": time.perf_counter() - started}
            metrics.append(record)
            progress.update(bar, completed=step)
            if step % config.checkpoint_every == 0 or step == total:
                save_checkpoint(out, step, model, optimizer, {"step": step}, config.to_dict(),
                                config.keep_checkpoints)

    # -- outputs: adapter, learning curve (the loss), held-out evaluation -----------------------------------
    adapter_dir = out / "adapter"
    save_adapter(model, adapter_dir, base_model_id=base.model_id)
    records = metrics.read()
    plot_learning_curve([r | {"reward/total": -r["loss"]} for r in records], out / "learning_curve.png",
                        f"SFT on {target.name} from {options.source} (curve: minus the token NLL)")
    evaluation = (evaluate_heldout(config, target, roles, adapter_dir, base.model_id, out, prompting)
                  if config.eval_tasks else [])
    return TrainResult(output_dir=out, adapter_dir=adapter_dir, steps=total, metrics=records, evaluation=evaluation)


# -- the pieces train() calls ----------------------------------------------------------------------------


def nll_update(model: Any, optimizer: torch.optim.Optimizer, params: list[torch.Tensor], samples: Sequence[Sample],
               pad_id: int, config: GRPOConfig) -> tuple[float, int, float]:
    """One optimizer step on the mean NLL per completion token of `samples` (each weighted by its advantage,
    1 for plain SFT); returns the loss, the completion tokens and the gradient norm. Stops on a non-finite loss."""
    optimizer.zero_grad(set_to_none=True)
    device = next(model.parameters()).device
    batches = micro_batches(samples, config.micro_batch_size, pad_id,
                            token_budget(config.micro_batch_tokens, model, device))  # --micro-batch-tokens
    tokens = sum(len(s.trained_ids) for s in samples)
    loss_sum = 0.0
    for batch in batches:
        logprobs = micro_batch_logprobs(model, batch, 1.0)  # (B, T) at temperature 1: the model's own distribution
        mask = batch.tokens.completion_mask.to(logprobs.device).float()  # (B, T)
        weights = batch.tokens.advantages.to(logprobs.device)[:, None]  # (B, 1)
        loss = -(logprobs * mask * weights).sum() / tokens
        loss.backward()
        loss_sum += float(loss.detach())
    if not np.isfinite(loss_sum):
        raise FloatingPointError(f"the SFT loss is {loss_sum}; no update was applied")
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm))
    if not np.isfinite(grad_norm):
        raise FloatingPointError(f"the SFT gradient norm is {grad_norm}; no update was applied")
    optimizer.step()
    return loss_sum, tokens, grad_norm


def step_plan(samples: Sequence[Sample], batch_size: int, seed: int, epochs: int) -> list[tuple[int, list[int]]]:
    """Each optimizer step's (epoch, sample indices): every epoch the samples in a seeded order, cut into batches of
    `batch_size` turns (a packed sample counts its turns and is never split; a batch ends once it holds
    `batch_size` or more). Unpacked, these are plain batches of `batch_size` samples."""
    plan = []
    for epoch in range(epochs):
        batch: list[int] = []
        turns = 0
        for index in epoch_order(len(samples), seed, epoch):
            batch.append(index)
            turns += samples[index].turns
            if turns >= batch_size:
                plan.append((epoch, batch))
                batch, turns = [], 0
        if batch:
            plan.append((epoch, batch))
    return plan


def epoch_order(count: int, seed: int, epoch: int) -> list[int]:
    order = list(range(count))
    random.Random(f"sft-order:{seed}:{epoch}").shuffle(order)
    return order


def resume_step(config: GRPOConfig, out: Path, metrics: MetricsLog, model: Any, optimizer: Any) -> int:
    """0 for a fresh run; on `config.resume` the newest checkpoint's step, with adapter, optimizer and RNG restored."""
    if not config.resume:
        return 0
    checkpoint = latest_checkpoint(out)
    if checkpoint is None:
        raise ValueError(f"--resume: no checkpoint in {out / 'checkpoints'}")
    state = load_checkpoint(checkpoint, model, optimizer)
    metrics.truncate_after(state.step)
    print(f"resuming from {checkpoint} (step {state.step})")
    return state.step


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


def source_episodes(config: GRPOConfig, options: SFTOptions, target: TrainTarget, roles: Sequence[str],
                    prompter: LLMPolicy) -> list[Episode]:
    """The source's scored episodes on the training split, teacher-forced into model turns (relabelled by the
    expert, with `expert=`), filtered by reward."""
    episodes, labels = play_source(config, options.source, options.expert, target, roles, prompter,
                                   max_tasks=options.max_tasks, seeds_per_task=options.seeds_per_task)
    if labels is not None:
        episodes = [labels.relabel(e, roles) for e in episodes]
    if options.min_reward is not None:
        kept = [e for e in episodes if e.score is not None and e.score.total >= options.min_reward]
        print(f"sft: {len(kept)} of {len(episodes)} episodes reach min_reward={options.min_reward}")
        episodes = kept
    return episodes


def play_source(config: GRPOConfig, source_name: str, expert: str | None, target: TrainTarget, roles: Sequence[str],
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
    episodes = run_episodes(target.make_env, jobs, assignment, target.rubric({}), config.max_turns)  # type: ignore[arg-type]
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
    """A replay of the training-split episodes stored in a results.json; test-split ones are dropped, and counted."""
    if not path.is_file():
        raise ValueError(f"source: results file {path} does not exist")
    stored = json.loads(path.read_text(encoding="utf-8")).get("episodes", [])
    by_id = {t.id: t for t in train_tasks}
    kept = [e for e in stored if e["task_id"] in by_id]
    print(f"source: {len(kept)} of {len(stored)} stored episodes are on training tasks; "
          f"{len(stored) - len(kept)} (test split or unknown) are not used")
    if not kept:
        raise ValueError(f"source: {path} holds no episode of a training task")
    return ReplayPolicy(kept), [(by_id[e["task_id"]], int(e["seed"])) for e in kept]
