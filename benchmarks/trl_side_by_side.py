"""TRL's GRPOTrainer and Drill's trainer side by side on the same single-turn task, in one process.

A benchmark, not a test. TRL is NOT a dependency of Drill: `pip install trl` into the venv first.

    .venv/bin/pip install trl
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/trl_side_by_side.py --steps 6

The task: triage reader mode (k=1). The prompts are exactly the ones Drill's LLMPolicy renders (system prompt
with the tool protocol, worked examples, then the ticket and the article), with the settings `drill train triage`
takes by default (`EnvSpec.train_defaults`: the compact listing, two of the oracle's worked examples, the
`submit_resolution` prefill, 128 new tokens, temperature 0.7), under which the untrained model's samples differ
and earn reward beyond the format credit; `--plain-prompt` runs the JSON Schema listing with no examples and no
prefill instead. TRL gets each prompt as the text the model's chat template renders, prefill included (a
text-prompt dataset), so both condition on the same text; TRL's completion is parsed after the prefill. The
reward is the triage rubric total of the parsed reply, computed through
`drill.envs.triage.reader_target().score`, the same path Drill's episodes take. Both trainers use the
embedded SmolLM2-135M (fp32, CPU), LoRA r=16/alpha=32 on q,k,v,o, the same group size, learning
rate, max new tokens, temperature, steps, one prompt per step, KL beta 0.04 to the base weights, the `grpo` loss and
group-std advantage scaling. Printed: seconds per step and mean reward over the steps for both, as
TRL/Drill ratios. Each draws its own prompts from the same training tickets in its own order, and
samples differ, so over a few steps the reward comparison is noisy; the time per step is the figure.
Known difference: Drill stops generation at `</tool_call>` (the LLMPolicy's stop string); TRL
generates until the end-of-turn token or the token limit.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

import torch

GROUP = 4
LR = 1e-3
KL_BETA = 0.04
"""Both compute the reference log-probabilities and train on every sample (with beta = 0 Drill would skip the
forward pass of zero-variance groups and TRL would not, which is a difference in work, not in speed)."""
LORA = {"r": 16, "lora_alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "lora_dropout": 0.0}


def settings(plain: bool) -> dict[str, Any]:
    """The run settings both trainers share: triage's training defaults, or the plain prompt."""
    from drill import registry

    spec = registry.get("triage")
    defaults = dict(spec.train_defaults(spec.parse_options({"mode": "reader"})))  # type: ignore[misc]
    if plain:
        defaults |= {"tool_listing": "schema", "demos": 0, "prefill": ""}
    return defaults


def trl_run(steps: int, seed: int, output_dir: Path, plain: bool) -> tuple[float, list[float]]:
    """TRL GRPOTrainer; returns (seconds per step, reward per step)."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    from drill.core.policy import PolicyInput
    from drill.envs import triage
    from drill.models.local import fresh_model
    from drill.models.parsing import parse_action
    from drill.models.policy import LLMPolicy, PolicyOptions
    from drill.core.types import PolicyInfo
    from drill.train.methods import configure
    from drill.train.rollouts import prompt_options
    from drill.train.target import load_target

    shared = settings(plain)
    config, _ = configure("grpo", env="triage", **shared, output_dir=output_dir)
    target = triage.reader_target(k=shared["env_options"]["k"])
    model, tokenizer, model_id = fresh_model("embedded")
    # The GGUF is dequantized to float32 on load, but transformers still tags the model as GGUF-quantized and
    # the HF Trainer refuses to train it; the weights are plain float32 tensors, so drop the tag.
    model.hf_quantizer = None
    model.is_quantized = False
    from drill.models.local import TransformersChatModel

    chat = TransformersChatModel(model, tokenizer, model_id)
    options = PolicyOptions(**prompt_options(config, load_target("triage", config.env_options)))
    policy = LLMPolicy(chat, PolicyInfo(name="trl"), options)
    tasks = {t.id: t for t in target.tasks("train")}
    rows = []
    for task in tasks.values():
        observation = target.prompt(task, 0)
        conversation = policy.conversation(PolicyInput(task=task, seed=0, observation=observation, history=()))
        rows.append({"prompt": chat.template.render(conversation, None), "task_id": task.id, "episode_seed": 0})

    def triage_total(prompts: list[Any], completions: list[Any], task_id: list[str], episode_seed: list[int],
                     **_: Any) -> list[float]:
        rewards = []
        for completion, tid, seed in zip(completions, task_id, episode_seed):
            text = completion[0]["content"] if isinstance(completion, list) else completion
            episode = target.score(tasks[tid], seed, parse_action(options.prefill + text))
            assert episode.score is not None
            rewards.append(episode.score.total)
        return rewards

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self._start = 0.0

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self._start = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.times.append(time.perf_counter() - self._start)

    timer = StepTimer()
    args = TRLConfig(
        output_dir=str(output_dir), max_steps=steps, per_device_train_batch_size=GROUP, num_generations=GROUP,
        gradient_accumulation_steps=1, learning_rate=LR, max_completion_length=config.max_new_tokens,
        temperature=config.temperature, beta=KL_BETA, loss_type="grpo", scale_rewards="group", use_cpu=True, bf16=False,
        logging_steps=1, report_to="none", save_strategy="no", seed=seed, lr_scheduler_type="constant",
        warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0, disable_tqdm=True,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=triage_total, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=tokenizer, peft_config=LoraConfig(task_type="CAUSAL_LM", **LORA),
                          callbacks=[timer])
    trainer.train()
    rewards = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    return sum(timer.times) / len(timer.times), rewards


def drill_run(steps: int, seed: int, output_dir: Path, plain: bool) -> tuple[float, list[float]]:
    from drill.train.methods import configure, train

    config, options = configure(
        "grpo", env="triage", **settings(plain), steps=steps, group_size=GROUP, tasks_per_step=1,
        learning_rate=LR, kl_beta=KL_BETA,
        loss_type="grpo", advantage_scaling="group", lora_rank=LORA["r"], lora_alpha=LORA["lora_alpha"],
        lora_target_modules=LORA["target_modules"], seed=seed, eval_tasks=0, output_dir=output_dir,
        checkpoint_every=steps)
    result = train(config, "grpo", options)
    return (sum(r["step_s"] for r in result.metrics) / len(result.metrics),
            [r["reward/total"] for r in result.metrics])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", type=Path, default=Path("runs/trl-side-by-side"))
    parser.add_argument("--plain-prompt", action="store_true", help="the JSON Schema listing and no prefill")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    print(f"settings: triage reader, SmolLM2-135M fp32 CPU, G={GROUP}, 1 prompt/step, lr={LR}, kl_beta={KL_BETA}, "
          f"steps={args.steps}, LoRA r=16 a=32 q,k,v,o, {settings(args.plain_prompt)}")
    drill_step, drill_rewards = drill_run(args.steps, args.seed, args.output_dir / "drill", args.plain_prompt)
    trl_step, trl_rewards = trl_run(args.steps, args.seed, args.output_dir / "trl", args.plain_prompt)
    drill_mean = sum(drill_rewards) / len(drill_rewards)
    trl_mean = sum(trl_rewards) / len(trl_rewards)
    print(f"\n{'':<8} {'s/step':>8} {'mean reward':>12}  rewards per step")
    print(f"{'drill':<8} {drill_step:>8.1f} {drill_mean:>12.3f}  {[round(r, 3) for r in drill_rewards]}")
    print(f"{'trl':<8} {trl_step:>8.1f} {trl_mean:>12.3f}  {[round(r, 3) for r in trl_rewards]}")
    ratio = f"{trl_mean / drill_mean:.2f}" if drill_mean else "n/a (Drill's mean reward is 0)"
    print(f"TRL/Drill: time per step {trl_step / drill_step:.2f}x, mean reward {ratio}")


if __name__ == "__main__":
    main()
