"""Supervised fine-tuning (SFT) of the LoRA adapter on episodes: the whole loop in `train()`.

How to run it:

    drill train triage -E k=1 --method sft --source oracle --epochs 2 --tool-listing compact \\
        --prefill '<tool_call>\\n{"name": "submit_resolution", "arguments": {"resolution": "'

    from drill.train import RunConfig, train
    from drill.train.methods import sft
    result = train(RunConfig(env="triage", env_options={"k": 1}, ...), "sft", sft.Options(source="heuristic"))

The run config (`RunConfig`) gives what every trainer shares: the environment, the base model, the LoRA
shape, the learning rate, the prompt options, the output folder and the closing evaluation. `Options`
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
4. **Outputs** as every method's (`Run.finish`): `metrics.jsonl`, atomic checkpoints every `checkpoint_every` optimizer
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

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from drill.core.types import Episode
from drill.evaluate.report import progress_bar
from drill.models.policy import LLMPolicy
from drill.train.config import RunConfig, setting
from drill.train.run import Run, TrainResult
from drill.train.samples import Sample, episode_samples, nll_update, pack_turns
from drill.train.sources import epoch_order, play_source, teacher_prompter
from drill.train.target import TrainTarget


@dataclass(frozen=True)
class Options:
    """What SFT adds to the run config."""

    source: str = setting(
        "SFT", "oracle",
        "Who plays the training split: a baseline name, `llm`, `lora:PATH`, or `results:PATH` (stored episodes).")
    epochs: int = setting("SFT", 2, "Passes over the samples.")
    batch_size: int = setting(
        "SFT", 8,
        "Samples per optimizer step (forwarded in micro-batches of `config.micro_batch_size`).")
    seeds_per_task: int = setting(
        "SFT", 1,
        "Episodes per training task (environment seeds 0..n-1); more gives a sampling source more variety.")
    max_tasks: int = setting("SFT", 0, "Use only the first N training tasks (0: all).")
    min_reward: float | None = setting(
        "SFT", None,
        "Keep only episodes whose total reward is at least this (None: keep all).")
    expert: str | None = setting(
        "SFT", None,
        "A baseline that labels the states the source reaches (DAgger): the source's actions drive the episodes, and "
        "every trained turn is trained on the expert's call at that state instead of the source's.")
    pack: bool = setting(
        "SFT", False,
        "Run an episode's turns as one sequence where each prompt extends the last (`samples.pack_turns`): the same "
        "loss on fewer tokens. Batches then take whole episodes, in a seeded order, until they hold `batch_size` "
        "turns.")

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


def train(run: Run, options: Options) -> TrainResult:
    """Fine-tune the adapter on the source's episodes as the module docstring says."""
    config, roles = run.config, run.roles
    # -- the episodes, the samples, the optimizer steps (the same plan after a resume) --------------------
    prompter = teacher_prompter(run.model, run.base, run.prompting)
    episodes = source_episodes(config, options, run.target, roles, prompter)
    samples = [s for i, e in enumerate(episodes) for s in episode_samples(e, i, {role: 1.0 for role in roles})]
    if not samples:
        raise ValueError(f"sft: the source {options.source!r} gave no trained turns to learn from")
    turns = len(samples)
    if (warning := cut_replies(samples, config.max_new_tokens)) is not None:
        print(warning, flush=True)
    if options.pack:
        samples = pack_turns(samples)
    plan = step_plan(samples, options.batch_size, config.seed, options.epochs)
    total = len(plan)
    start = run.resume()
    reward = float(np.mean([e.score.total for e in episodes if e.score is not None]))
    packed = f" packed into {len(samples)} sequences" if options.pack else ""
    print(f"sft: {len(episodes)} episodes from {options.source} (mean reward {reward:.3f}), {turns} samples{packed}, "
          f"{options.epochs} epochs = {total} optimizer steps")

    # the bar draws only on a terminal: in a log, a line every half minute says how many steps are done
    run.heartbeat.phase(f"sft: optimizer steps {start + 1}-{total} of {total}", total=total - start)
    with progress_bar() as progress:
        bar = progress.add_task("SFT", total=total, completed=start)
        for step in range(start + 1, total + 1):
            started = time.perf_counter()
            epoch, indices = plan[step - 1]
            chosen = [samples[i] for i in indices]
            run.model.train()
            loss, tokens, grad_norm = nll_update(run.model, run.optimizer, run.params, chosen, run.pad_id, config)
            record = {"step": step, "stage": "sft", "epoch": epoch + 1, "loss": loss, "tokens": tokens,
                      "grad_norm": grad_norm, "samples": sum(s.turns for s in chosen), "sequences": len(chosen),
                      "source_reward": reward, "step_s": time.perf_counter() - started}
            run.metrics.append(record)
            progress.update(bar, completed=step)
            run.heartbeat.done()
            run.checkpoint(step, total, {"step": step})
    run.heartbeat.phase(None)

    return run.finish(total, f"SFT on {run.target.name} from {options.source} (curve: minus the token NLL)",
                      lambda r: r | {"reward/total": -r["loss"]})


# -- the pieces train() calls ----------------------------------------------------------------------------


def cut_replies(samples: Sequence[Sample], max_new_tokens: int) -> str | None:
    """A warning when demonstrated replies are longer than the policy may generate (`max_new_tokens`), or None. The
    policy trained on them is cut off before it closes such a call, and an unfinished call does not parse: the run
    would teach a reply the model can never send (a heuristic's flag that quotes its evidence, cut at 64 tokens, is a
    missed rogue)."""
    long = sorted(len(s.completion_ids) for s in samples if len(s.completion_ids) > max_new_tokens)
    if not long:
        return None
    return (f"sft: warning: {len(long)} of {len(samples)} demonstrated replies are longer than max_new_tokens="
            f"{max_new_tokens} (the longest {long[-1]} tokens): the policy is cut off before it ends them, an "
            f"unparseable call; raise --max-new-tokens to {long[-1]} or more")


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


def source_episodes(config: RunConfig, options: Options, target: TrainTarget, roles: Sequence[str],
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


