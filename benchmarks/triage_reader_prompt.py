"""Reader-mode prompt size in tokens of the embedded model, as the LLM policy renders it.

The GRPO trainer trains SmolLM2-135M on the triage reader prompt on CPU, so the prompt should stay
near or under 700 tokens. This prints the token count (system prompt with the tool protocol, plus
the ticket and k articles) over every task of both splits, and the machine it ran on.

    .venv/bin/python benchmarks/triage_reader_prompt.py [--k 3] [--tool-listing compact] [--demos 2]

`--tool-listing` and `--demos` are the LLM policy's prompt options (see docs/training.md).
"""

from __future__ import annotations

import argparse
import platform
import statistics

from drill.core.policy import PolicyInput
from drill.core.types import PolicyInfo
from drill.envs import triage
from drill.models.local import load_embedded
from drill.models.policy import LLMPolicy, PolicyOptions, demonstrations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=3, help="articles in the reader prompt")
    parser.add_argument("--tool-listing", choices=("schema", "compact"), default="schema")
    parser.add_argument("--demos", type=int, default=0, help="oracle demonstrations from training tasks")
    args = parser.parse_args()
    model = load_embedded()
    env = triage.load(mode="reader", k=args.k)
    shown = demonstrations(lambda: triage.load(mode="reader", k=args.k), env.tasks("train"),
                           triage.OraclePolicy(), args.demos)
    policy = LLMPolicy(model, PolicyInfo(name="llm", kind="llm", model=model.model_id),
                       PolicyOptions(tool_listing=args.tool_listing, demonstrations=shown))
    counts: list[int] = []
    for split in ("train", "test"):
        for task in env.tasks(split):
            observation = env.reset(task, 0)
            conversation = policy.conversation(PolicyInput(task=task, seed=0, observation=observation, history=()))
            tools = observation.tools if model.native_tools else None
            counts.append(len(model.prompt_token_ids(conversation, tools)))
    counts.sort()
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    print(f"model: {model.model_id} (native tools: {model.native_tools}); reader k={args.k}; "
          f"tool listing {args.tool_listing}; {args.demos} demonstrations; {len(counts)} tasks")
    print(f"prompt tokens: mean {statistics.fmean(counts):.0f}, median {counts[len(counts) // 2]}, "
          f"p90 {counts[int(0.9 * len(counts))]}, max {counts[-1]}; "
          f"{sum(c < 700 for c in counts) / len(counts):.0%} under 700")


if __name__ == "__main__":
    main()
