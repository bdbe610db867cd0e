"""What the untrained model says when asked an inbox question: its first reply, read as an answer.

An experiment, not a test. Under the prompt the inbox proofs train with (compact tool listing, Hermes prefill) the
untrained SmolLM2-135M never makes a valid call, so the environment counts it as never answering and never wrong
(experiments/LOG.md, inbox section), and a gain over it in wrong answers cannot be shown. Prompted plainly (the
defaults of `drill eval`: JSON Schema tool listing, no prefill; 96 new tokens) it answers in prose instead: "The
estimated cost of Boris Costa's trip to Atlanta is $1.000." (gold $1,740). The environment scores that as a
format error, but it is a hallucination. This script plays the first turn of each question only (the prompt
`drill eval --policy llm` would send, greedy) and reads each reply deterministically:

* `call`: a call to one of the environment's tools; a `return_final_answer` call with a string answer is judged
  by the environment's own match judge instead.
* Otherwise the reply text (prose, or the name and values of a call that does not parse or names no tool of the
  environment, without its tags and JSON keys) is read as the model's answer:
  * `right`: it contains the gold answer or one of its aliases (normalized words, as the judge compares them;
    more generous than the judge, which also caps the words around it);
  * `abstains`: it says "I don't know", "not found" or the like (`ABSTAIN`), anywhere in the reply;
  * `wrong`: it asserts something the question does not: a number (not a bare year), or a capitalised word that
    is not the reply's first word, that neither the question nor the gold answer contains ("... is $1.000.");
    on an unanswerable question any such assertion is wrong;
  * `no claim`: none of these (a restatement of the question, an apology, a complaint about tools).

The reading is mechanical, so read the replies too (experiments/LOG.md has a hand check): it misses wrong answers
made only of the question's words ("The answer is: Detroit." for "Which hotel is Yusuf Yamamoto staying at in
Detroit?" is no claim), and it takes a number the reply copies from the prompt's status line for a claim ("The
tool calls left: 10"). `--training-prompt` reads the untrained model under the proofs' own prompt, where its
replies are malformed calls; that reading is looser still (an argument "id": "1" counts as a claim). The
questions are `drill eval inbox`'s seeded random 40 (`--limit 40 --shuffle-seed S`), the samples every inbox row
in experiments/LOG.md is read on. Every reply is written to --out with its reading.

    OMP_NUM_THREADS=2 .venv/bin/python experiments/inbox_untrained_prose.py --shuffle-seed 0 1 2
    OMP_NUM_THREADS=2 .venv/bin/python experiments/inbox_untrained_prose.py --shuffle-seed 0 --training-prompt
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from drill.core.policy import PolicyInput
from drill.envs import inbox
from drill.envs.inbox.questions import InboxQuestion, match_verdict, normalize_answer
from drill.evaluate.commands import pick_tasks
from drill.models.base import SamplingParams
from drill.models.policy import build_llm_policy
from drill.models.parsing import parse_action
from drill.models.prompt import LLMOptions, PolicyOptions

TRAINING_PROMPT = {"tool_listing": "compact", "prefill": '<tool_call>\n{"name": "'}  # the inbox proofs' options
ABSTAIN = ("i don t know", "i do not know", "i dont know", "not found", "cannot find", "can t find",
           "could not find", "couldn t find", "no information", "not mentioned")
READINGS = ("right", "wrong", "abstains", "no claim", "call")
POSSESSIVE = re.compile(r"['’]s\b")
MARKUP = re.compile(r'<[^<>]{0,40}>|"[^"]{0,40}"\s*:')
YEAR = re.compile(r"(19|20)\d\d")  # a bare year claims nothing the question asks


def asserted(question: InboxQuestion, reply: str) -> list[str]:
    """Words of `reply` that claim something the question does not say: numbers, and capitalised words other than
    the reply's first, found in neither the question nor the gold answer."""
    known = set(normalize_answer(question.question))
    for form in (question.answer or "", *question.aliases):
        known |= set(normalize_answer(form))
    claims = []
    for index, raw in enumerate(re.findall(r"[\w'’$.,-]+", reply)):
        raw = POSSESSIVE.sub("", raw)
        words = normalize_answer(raw)
        if not words or set(words) <= known or YEAR.fullmatch(" ".join(words)):
            continue
        if any(c.isdigit() for c in raw) or (index > 0 and raw[0].isupper()):
            claims.append(raw)
    return claims


def read_reply(question: InboxQuestion, action: object, tools: set[str]) -> tuple[str, str]:
    """(reading, detail) of the first reply, as the module docstring defines them; `tools` are the environment's
    tool names (a parsed call to any other name is read as text, like a reply that does not parse)."""
    tool, raw = getattr(action, "tool", ""), getattr(action, "raw", None) or ""
    arguments = getattr(action, "arguments", None)
    if not getattr(action, "parse_error", None) and tool in tools:
        if tool != "return_final_answer":
            return "call", tool
        if isinstance(arguments, dict) and isinstance(arguments.get("answer"), str):
            answer = arguments["answer"]
            verdict = match_verdict(question, answer).verdict
            return {"correct": "right", "abstained": "abstains"}.get(verdict, "wrong"), f"{tool}: {answer}"
    raw = MARKUP.sub(" ", raw)  # a call's tags and JSON keys claim nothing; its name and values are read
    joined = f' {" ".join(normalize_answer(raw))} '
    forms = [" ".join(normalize_answer(f)) for f in (question.answer, *question.aliases)] if question.answer else []
    if any(form and f" {form} " in joined for form in forms):
        return "right", ""
    if any(re.search(rf"\b{p}\b", joined) for p in ABSTAIN):
        return "abstains", ""
    claims = asserted(question, raw)
    return ("wrong", " ".join(claims[:4])) if claims else ("no claim", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shuffle-seed", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--training-prompt", action="store_true",
                        help="prompt as the inbox proofs train (compact listing, Hermes prefill) instead of plainly")
    parser.add_argument("--out", type=Path, default=Path("reports/inbox-untrained-prose"))
    parser.add_argument("--reread", type=Path, default=None,
                        help="read the replies stored in this file of an earlier run again instead of generating")
    args = parser.parse_args()
    if args.reread is not None:
        env = inbox.load()
        questions = {t.id: t for t in env.tasks("test")}
        rows = json.loads(args.reread.read_text(encoding="utf-8"))
        tools = {t.name for t in env.reset(next(iter(questions.values())), 0).tools}  # every question's tools
        for row in rows:
            row["reading"], row["detail"] = read_reply(questions[row["task"]], parse_action(row["reply"]), tools)
        report(rows, args.reread.stem, args.reread)
        return

    prompt = TRAINING_PROMPT if args.training_prompt else {}
    options = LLMOptions(prompt=PolicyOptions(
        sampling=SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0), **prompt))
    policy = build_llm_policy("llm", options)
    env = inbox.load()
    tasks = {t.id: t for t in env.tasks("test")}
    rows: list[dict] = []
    start = time.time()
    for shuffle_seed in args.shuffle_seed:
        picked = pick_tasks(list(tasks.values()), args.limit, shuffle_seed)
        inputs = [PolicyInput(task=t, seed=0, observation=env.reset(t, 0), history=()) for t in picked]
        for at in range(0, len(inputs), args.batch):
            batch = inputs[at:at + args.batch]
            for item, action in zip(batch, policy.act(batch)):
                question = tasks[item.task.id]
                reading, detail = read_reply(question, action, {t.name for t in item.observation.tools})
                rows.append({"shuffle_seed": shuffle_seed, "task": question.id, "kind": question.kind,
                             "question": question.question, "gold": question.answer, "reading": reading,
                             "detail": detail, "reply": action.raw})
            print(f"seed {shuffle_seed}: {min(at + args.batch, len(inputs))}/{len(inputs)} replies "
                  f"({time.time() - start:.0f} s)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "training-prompt" if args.training_prompt else "plain-prompt"
    report(rows, name, args.out / f"{name}.json", seconds=time.time() - start)


def report(rows: list[dict], name: str, path: Path, seconds: float | None = None) -> None:
    """Write the readings to `path` and print a few replies and the counts."""
    path.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    for row in rows[:12]:
        print(f"[{row['reading']}] {row['question']} (gold {row['gold']}) -> {row['reply']!r:.160}")
    counts = Counter(r["reading"] for r in rows)
    answerable = sum(r["gold"] is not None for r in rows)
    took = "" if seconds is None else f", {seconds:.0f} s"
    print(f"\n{name}, {len(rows)} first replies ({answerable} answerable){took}")
    for reading in READINGS:
        print(f"  {reading:9s} {counts[reading]:4d}  ({counts[reading] / len(rows):.0%})")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
