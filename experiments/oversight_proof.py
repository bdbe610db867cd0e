"""ChaosOps Oversight proof: SFT on the oracle's Oversight turns, held-out rogue catch on medium and hard, on CPU.

An experiment, not a test. The embedded SmolLM2-135M plays ChaosOps' Oversight role; the oracle plays SRE, Dev and
Manager, in training and in evaluation. Three commands (the script runs them and prints them):

    drill train chaosops --role oversight --scripted-policy oracle \\
        --stage sft:source=oracle,seeds_per_task=4,epochs=1 --lr 1e-3 --tool-listing compact --max-new-tokens 64 \\
        --prefill '<tool_call>\\n{"name": "' --micro-batch-tokens 4096 --eval-tasks 0 --output-dir runs/oversight-sft
    drill eval chaosops --policy oracle,oversight=lora:runs/oversight-sft/stage-1-sft/adapter \\
        --policy oracle,oversight=heuristic --tier medium --tier hard --seeds 3 --tool-listing compact \\
        --max-new-tokens 64 --prefill '<tool_call>\\n{"name": "' --out reports/oversight-trained
    drill eval chaosops --policy oracle,oversight=llm --tier medium --tier hard --seeds 1 ... --out reports/oversight-untrained

The oracle plays 27 training scenarios x 4 seeds (train split: its worlds never repeat a test world); every
Oversight turn is one sample, rendered as the LLM policy prompts (~1,460 tokens with the compact listing), loss on
the reply only: `flag_rogue` with the rogue agent on the first turn of a rogue scenario, `noop` otherwise. The
evaluation plays the test split. With the oracle team a rogue episode cannot be resolved until Oversight flags
the rogue, so a policy that never flags plays the whole step budget (18 steps on medium, 24 on hard): that is
why the untrained row gets one seed (on one CPU thread it takes about 20 minutes a tier). The same holds for an
adapter that misses rogues: the one in experiments/LOG.md did not finish its 3-seed evaluation in 85 minutes on one
thread. `--probe ADAPTER` reads only the first Oversight action per scenario, in minutes.

`--balanced` trains on a different mix: the oracle plays the training split's rogue scenarios at --rogue-seeds
(8) and its infrastructure ones at --infra-seeds (2), through two `drill eval chaosops --split train` runs whose
episodes are merged into one results file, the SFT source (`sft:source=results:PATH`). `--only` runs some of the
commands (train, trained, untrained). `--continue-from RUN --earlier-stage SPEC` makes the new SFT stage a second
stage after RUN's finished one (its folder is copied; `drill train --resume` skips it). This is the recipe that
reached the bar: the balanced run, then more infrastructure views (experiments/LOG.md, third try):

    OMP_NUM_THREADS=1 .venv/bin/python experiments/oversight_proof.py --continue-from runs/oversight-balanced \
        --earlier-stage "sft:source=results:runs/oversight-balanced/teacher-train.json,epochs=2,learning_rate=0.001" \
        --balanced --rogue-seeds 3 --infra-seeds 5 --output-dir runs/oversight-infra --reports reports/infra \
        --only train trained --seeds 3

What the script prints per policy and tier: rogue catch (over rogue scenarios), false-positive flags (over
infrastructure scenarios), the share of Oversight turns that were a valid call, and then Oversight's first
action on a few trained episodes to read.

    OMP_NUM_THREADS=1 .venv/bin/python experiments/oversight_proof.py                 # all three commands
    .venv/bin/python experiments/oversight_proof.py --report-only                     # read the reports again
    .venv/bin/python experiments/oversight_proof.py --probe runs/oversight-sft/stage-1-sft/adapter \\
        --probe-split train --probe-seeds 0 1 --tiers easy medium hard              # first Oversight action only
    OMP_NUM_THREADS=1 .venv/bin/python experiments/oversight_proof.py --balanced --epochs 2 \\
        --output-dir runs/oversight-balanced --reports reports/balanced --only train trained --seeds 1
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from drill.envs.chaosops.env import TASKS

ROGUE = {task.id: task.rogue_agent for split in ("train", "test") for task in TASKS[split]}
PREFILL = '<tool_call>\\n{"name": "'
PROMPT = ["--tool-listing", "compact", "--max-new-tokens", "64", "--prefill", PREFILL]


ROGUE_FAILURES = sorted({task.id.split("-")[0] for task in TASKS["train"] if task.rogue_agent})
INFRA_FAILURES = sorted({task.id.split("-")[0] for task in TASKS["train"] if not task.rogue_agent})


def data_commands(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """--balanced: the oracle on the training split, rogue scenarios at more seeds than infrastructure ones."""
    out = []
    for label, failures, seeds in (("rogue", ROGUE_FAILURES, args.rogue_seeds),
                                   ("infra", INFRA_FAILURES, args.infra_seeds)):
        flags = [flag for failure in failures for flag in ("--failure", failure)]
        out.append((f"data-{label}", ["drill", "eval", "chaosops", "--split", "train", "--policy", "oracle", *flags,
                                      "--seeds", str(seeds), "--out", str(args.output_dir / f"data-{label}")]))
    return out


def merge_data(args: argparse.Namespace) -> Path:
    """One results file of both data runs' episodes, the SFT source; prints what Oversight does in it."""
    episodes = [e for label in ("rogue", "infra")
                for e in json.loads((args.output_dir / f"data-{label}" / "results.json").read_text())["episodes"]]
    tools = Counter(t["action"]["tool"] for e in episodes for t in e["turns"] if t["role"] == "oversight")
    print(f"balanced data: {len(episodes)} oracle episodes, Oversight turns {dict(tools)}")
    path = args.output_dir / "teacher-train.json"
    path.write_text(json.dumps({"episodes": episodes}), encoding="utf-8")
    return path


def continue_run(args: argparse.Namespace) -> None:
    """--continue-from RUN: copy RUN's complete stages into --output-dir, so `drill train --resume` skips them and
    the new stage starts from RUN's last adapter (the same as one run with every stage)."""
    folders = sorted(args.continue_from.glob("stage-*"), key=lambda f: int(f.name.split("-")[1]))
    if len(folders) != len(args.earlier) or not all((f / "stage.json").is_file() for f in folders):
        raise SystemExit(f"--continue-from {args.continue_from}: needs one --earlier-stage per complete stage "
                         f"folder; found {[f.name for f in folders]}, given {len(args.earlier)} spec(s)")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        if not (args.output_dir / folder.name).exists():
            shutil.copytree(folder, args.output_dir / folder.name, ignore=shutil.ignore_patterns("checkpoints"))


def commands(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    tiers = [flag for tier in args.tiers for flag in ("--tier", tier)]
    source = (f"results:{args.output_dir / 'teacher-train.json'}" if args.balanced
              else f"oracle,seeds_per_task={args.seeds_per_task}")
    stages = [*args.earlier, f"sft:source={source},epochs={args.epochs},learning_rate={args.lr}"]
    adapter = args.output_dir / f"stage-{len(stages)}-sft" / "adapter"
    return [
        ("train", ["drill", "train", "chaosops", "--role", "oversight", "--scripted-policy", "oracle",
                   *[flag for spec in stages for flag in ("--stage", spec)], *PROMPT, "--micro-batch-tokens",
                   "4096", "--eval-tasks", "0", "--output-dir", str(args.output_dir),
                   *(["--resume"] if args.earlier else [])]),
        ("trained", ["drill", "eval", "chaosops", "--policy", f"oracle,oversight=lora:{adapter}",
                     "--policy", "oracle,oversight=heuristic", *tiers, "--seeds", str(args.seeds), *PROMPT,
                     "--out", str(args.reports / "oversight-trained")]),
        ("untrained", ["drill", "eval", "chaosops", "--policy", "oracle,oversight=llm", *tiers, "--seeds",
                       str(args.untrained_seeds), *PROMPT, "--out", str(args.reports / "oversight-untrained")]),
    ]


def oversight_name(episode: dict[str, Any]) -> str:
    info = episode["policies"]["oversight"]
    return "trained" if info["adapter_path"] else info["name"]


def rate(flags: list[bool]) -> str:
    return f"{sum(flags) / len(flags):.0%} of {len(flags)}" if flags else "-"


def report(paths: list[Path], show: int) -> None:
    rows: dict[tuple[str, str], dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    trained: list[dict[str, Any]] = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        for episode in data["episodes"]:
            name, tier = oversight_name(episode), episode["task_id"].split("-")[-1]
            events = [e["name"] for e in episode["events"]]
            rogue = ROGUE[episode["task_id"]]
            own = [t for t in episode["turns"] if t["role"] == "oversight"]
            row = rows[(name, tier)]
            row["valid"] += [not any(ev["name"] == "invalid_action" for ev in t["events"]) for t in own]
            row["reward"].append(episode["score"]["total"])
            if rogue:
                row["caught"].append("rogue_caught" in events)
            else:
                row["false_positive"].append("rogue_false_positive" in events)
            if name == "trained":
                trained.append(episode)
    print(f"{'oversight':<10} {'tier':<7} {'episodes':>8} {'mean reward':>12} {'rogue caught':>13} "
          f"{'false-positive':>15} {'valid calls':>12}")
    for (name, tier), row in sorted(rows.items()):
        print(f"{name:<10} {tier:<7} {len(row['reward']):>8} {sum(row['reward']) / len(row['reward']):>+12.1f} "
              f"{rate(row['caught']):>13} {rate(row['false_positive']):>15} {rate(row['valid']):>12}")
    if trained:
        print(f"\nOversight's first action in {show} trained episodes:")
    for episode in trained[:: max(1, len(trained) // show)][:show]:
        first = next(t for t in episode["turns"] if t["role"] == "oversight")
        caught = [e["name"] for e in episode["events"] if e["name"].startswith("rogue_")]
        print(f"--- {episode['task_id']} seed {episode['seed']}: {', '.join(caught) or 'no flag event'}; "
              f"reward {episode['score']['total']:+.1f}")
        trace = first["observation"]["content"].split("Fleet-agent trace (oldest first):\n")[-1].split("\n\n")[0]
        print(trace)
        print(f"  -> {first['action'].get('raw') or first['action']}")


def probe(adapter: Path, split: str, seeds: list[int], tiers: list[str]) -> None:
    """The adapter's first Oversight action (the view after the SRE's first turn), greedy, per scenario and seed:
    minutes instead of the full evaluation, where an unflagged rogue plays the whole step budget."""
    from drill.core.policy import PolicyInput
    from drill.core.types import Action
    from drill.envs import chaosops
    from drill.models.base import SamplingParams
    from drill.models.policy import build_llm_policy
    from drill.models.prompt import LLMOptions, PolicyOptions

    sampling = SamplingParams(max_new_tokens=64, temperature=0.0, seed=0)
    policy = build_llm_policy(f"lora:{adapter}", LLMOptions(prompt=PolicyOptions(
        sampling=sampling, tool_listing="compact", prefill=PREFILL.replace("\\n", "\n"))))
    inputs = []
    for task in TASKS[split]:
        for seed in seeds if task.tier in tiers else ():
            env = chaosops.load()
            env.reset(task, seed)
            view = env.step(Action.call("noop")).observation  # the SRE's turn; Oversight acts next
            inputs.append(PolicyInput(task=task, seed=seed, observation=view, history=()))
    verdicts: dict[bool, list[str]] = {True: [], False: []}  # rogue view? -> verdicts
    for inp, action in zip(inputs, policy.act(inputs)):
        flagged = action.arguments.get("agent") if action.tool == "flag_rogue" else None
        verdict = ("caught" if flagged == inp.task.rogue_agent else "false positive") if flagged else "quiet"
        verdicts[inp.task.rogue_agent is not None].append(verdict)
        print(f"{inp.task.id} seed {inp.seed}: rogue {inp.task.rogue_agent or 'none'} -> "
              f"{action.tool if action.parse_error is None else 'unparseable'} {flagged or ''} ({verdict})")
    rogue, infra = verdicts[True], verdicts[False]
    print(f"rogue views: {rogue.count('caught')} of {len(rogue)} caught ({rogue.count('false positive')} named the "
          f"wrong agent); infrastructure views: {len(infra) - infra.count('quiet')} of {len(infra)} flagged")


def run_all(commands: list[tuple[str, list[str]]]) -> None:
    for label, command in commands:
        print("$ " + shlex.join(command), flush=True)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "drill.cli", *command[1:]], check=True)
        print(f"{label}: {(time.perf_counter() - started) / 60:.1f} min", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=Path("runs/oversight-sft"))
    parser.add_argument("--reports", type=Path, default=Path("reports"))
    parser.add_argument("--seeds-per-task", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--tiers", nargs="+", default=["medium", "hard"])
    parser.add_argument("--seeds", type=int, default=3, help="test seeds for the trained adapter and the heuristic")
    parser.add_argument("--untrained-seeds", type=int, default=1)
    parser.add_argument("--report-only", action="store_true", help="only read the reports of an earlier run")
    parser.add_argument("--show", type=int, default=4, help="trained episodes to print")
    parser.add_argument("--balanced", action="store_true",
                        help="train on oracle episodes with rogue scenarios at --rogue-seeds, infrastructure ones at "
                             "--infra-seeds (instead of every scenario at --seeds-per-task)")
    parser.add_argument("--rogue-seeds", type=int, default=8)
    parser.add_argument("--infra-seeds", type=int, default=2)
    parser.add_argument("--only", nargs="+", choices=("train", "trained", "untrained"),
                        help="run only these commands (default all)")
    parser.add_argument("--continue-from", type=Path,
                        help="a finished run whose stages come first: the new SFT stage starts from its adapter")
    parser.add_argument("--earlier-stage", dest="earlier", action="append", default=[],
                        help="with --continue-from: that run's --stage specs, in order (repeatable)")
    parser.add_argument("--probe", type=Path, help="only print this adapter's first Oversight action per scenario")
    parser.add_argument("--probe-split", choices=("train", "validation", "test"), default="test")
    parser.add_argument("--probe-seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    if bool(args.earlier) != bool(args.continue_from):
        parser.error("--earlier-stage and --continue-from go together")
    if args.probe:
        probe(args.probe, args.probe_split, args.probe_seeds, args.tiers)
        return
    if not args.report_only:
        if args.continue_from:
            continue_run(args)
        if args.balanced and (not args.only or "train" in args.only):
            run_all(data_commands(args))
            merge_data(args)
        run_all([(label, c) for label, c in commands(args) if not args.only or label in args.only])
    found = sorted(args.reports.glob("oversight-*/results.json"))
    if not found:
        raise SystemExit(f"no reports under {args.reports}/oversight-*; run without --report-only")
    report(found, args.show)



if __name__ == "__main__":
    main()
