"""Tokens per second of the embedded model on CPU: one batched `generate` call versus one call per row.

    .venv/bin/python benchmarks/batched_generation.py                 # 8 rows, 64 new tokens
    .venv/bin/python benchmarks/batched_generation.py --rows 16 --threads 1

Both ways generate greedily from the same eight agent-style prompts (a system prompt with the JSON
tool protocol and one incident observation each), so they produce the same tokens and the ratio of
tokens/s is the ratio of times. The batched call runs until its longest row ends, and the rows that
ended earlier still cost compute: that is counted, as it is in real rollouts. Wall and CPU time are
both printed: on a machine shared with other work, CPU time is the steadier of the two.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from drill.core import ToolSpec
from drill.models import SamplingParams
from drill.models.base import Message
from drill.models.local import load_embedded
from drill.models.policy import AGENT_INSTRUCTIONS, tool_protocol

TOOLS = [
    ToolSpec(name="restart", description="Restart a service's pods.",
             parameters={"type": "object", "properties": {"service": {"type": "string", "enum": ["auth", "db", "api"]}},
                         "required": ["service"]}),
    ToolSpec(name="read_logs", description="Read the last log lines of a service.",
             parameters={"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}),
]
OBSERVATIONS = [
    "db-0 is crash-looping since the 14:02 deploy; auth reports timeouts.",
    "Error rate on api is 12% and rising. Latency p99 is 4.1 s.",
    "The auth service returns 503 for every login. Nothing was deployed today.",
    "Disk usage on db-1 is at 97%. Writes are failing intermittently.",
    "A fleet agent scaled api down to 1 replica ten minutes ago; traffic is normal.",
    "Memory of the auth pods grows by 200 MB per hour; two were OOM-killed.",
    "Users report stale data. The cache hit rate dropped from 90% to 20%.",
    "All services are healthy, but the on-call channel has an unacknowledged page.",
]


def conversations(rows: int) -> list[list[Message]]:
    system = f"{AGENT_INSTRUCTIONS}\n\nYou are the on-call SRE.\n\n{tool_protocol(TOOLS, react=False)}"
    return [[{"role": "system", "content": system}, {"role": "user", "content": OBSERVATIONS[i % len(OBSERVATIONS)]}]
            for i in range(rows)]


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8, help="conversations per batch")
    parser.add_argument("--new-tokens", type=int, default=64, help="max_new_tokens per row")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    load_start = time.perf_counter()
    model = load_embedded()
    load_s = time.perf_counter() - load_start
    params = SamplingParams(max_new_tokens=args.new_tokens, temperature=0)
    batch = conversations(args.rows)
    model.generate(batch[:2], None, SamplingParams(max_new_tokens=4, temperature=0))  # warm-up

    start, cpu_start = time.perf_counter(), time.process_time()
    batched = model.generate(batch, None, params)
    batched_s, batched_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    start, cpu_start = time.perf_counter(), time.process_time()
    sequential = [model.generate([conversation], None, params)[0] for conversation in batch]
    sequential_s, sequential_cpu = time.perf_counter() - start, time.process_time() - cpu_start

    batched_tokens = sum(len(g.token_ids) for g in batched)
    sequential_tokens = sum(len(g.token_ids) for g in sequential)
    same = sum(a.token_ids == b.token_ids for a, b in zip(batched, sequential))
    load1, load5, _ = os.getloadavg()
    print(f"machine     {cpu_name()}, {os.cpu_count()} cores, torch {torch.__version__} "
          f"with {torch.get_num_threads()} threads, {platform.system()} {platform.release()}")
    print(f"load avg    {load1:.2f} (1 min), {load5:.2f} (5 min)  [other work on the machine skews timings]")
    print(f"model       {model.model_id} (loaded in {load_s:.1f} s), prompts of "
          f"{min(len(g.prompt_token_ids) for g in batched)}-{max(len(g.prompt_token_ids) for g in batched)} tokens")
    print(f"batched     {args.rows} rows in one call: {batched_tokens} tokens in {batched_s:.2f} s wall "
          f"({batched_cpu:.2f} s CPU) = {batched_tokens / batched_s:.1f} tokens/s")
    print(f"sequential  {args.rows} calls of one row: {sequential_tokens} tokens in {sequential_s:.2f} s wall "
          f"({sequential_cpu:.2f} s CPU) = {sequential_tokens / sequential_s:.1f} tokens/s")
    print(f"ratio       batched / sequential tokens/s = "
          f"{(batched_tokens / batched_s) / (sequential_tokens / sequential_s):.2f}x by wall time, "
          f"{(batched_tokens / batched_cpu) / (sequential_tokens / sequential_cpu):.2f}x by CPU time "
          f"({same}/{args.rows} rows produced identical tokens both ways)")


if __name__ == "__main__":
    main()
