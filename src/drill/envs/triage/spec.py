"""Triage's registry entry: how `drill eval/watch/train triage` load, score, summarize and describe it."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from drill.core.spec import Chart, Column, EnvOption, EnvSpec, percent
from drill.core.types import Episode
from drill.envs.triage.baselines import HeuristicPolicy, OraclePolicy, RandomPolicy
from drill.envs.triage.corpus import TriageTask
from drill.envs.triage.env import MODES, TriageEnv
from drill.envs.triage.rubric import DEFAULT_WEIGHTS, is_correct, rubric, submission, succeeded

COMPONENT_NAMES = tuple(DEFAULT_WEIGHTS)


def escalation_correct(episode: Episode, task: TriageTask) -> bool:
    sub = submission(episode)
    return sub is not None and sub.escalate == task.should_escalate


def brier(episodes: Sequence[Episode], tasks: Mapping[str, TriageTask]) -> float | None:
    """Mean (confidence - correct)^2 over the submissions, correct as the rubric's `is_correct` (lower is better;
    None without a submission). Unlike the calibration component, which is 0 on a wrong escalation whatever the
    confidence, it reads the stated confidence alone: a confident wrong answer worsens it, a hedged one less."""
    errors = [(sub.confidence - float(is_correct(sub, tasks[e.task_id]))) ** 2
              for e in episodes if (sub := submission(e)) is not None]
    return statistics.fmean(errors) if errors else None


def confidence_auc(episodes: Sequence[Episode], tasks: Mapping[str, TriageTask]) -> float | None:
    """How well the stated confidence tells right answers from wrong ones: the chance that a right submission states
    a higher confidence than a wrong one, ties counting half (the ROC AUC, Mann-Whitney form). 0.5 for a constant
    confidence, 1 when every right answer is surer than every wrong one; None without both. The Brier score cannot
    tell the two apart: a weak answerer stating confidence 0 on every ticket scores a good Brier and knows nothing
    about which of its answers are right (experiments/LOG.md, "RL after SFT, third try")."""
    stated = [(sub.confidence, is_correct(sub, tasks[e.task_id])) for e in episodes
              if (sub := submission(e)) is not None]
    right = [confidence for confidence, ok in stated if ok]
    wrong = [confidence for confidence, ok in stated if not ok]
    if not right or not wrong:
        return None
    wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


def summarize(episodes: Sequence[Episode], tasks: Mapping[str, TriageTask]) -> dict[str, Any]:
    """The mean total and components, escalation accuracy, the Brier score of the stated confidence and how
    well it separates right answers from wrong ones (`confidence_auc`), submit rate,
    and turns (agent mode)."""
    row: dict[str, Any] = {"total": statistics.fmean(e.score.total for e in episodes if e.score)}
    for name in COMPONENT_NAMES:
        row[name] = statistics.fmean(e.score.components[name] for e in episodes if e.score)
    row["escalation_acc"] = statistics.fmean(escalation_correct(e, tasks[e.task_id]) for e in episodes)
    row["brier"] = brier(episodes, tasks)
    row["confidence_auc"] = confidence_auc(episodes, tasks)
    row["submitted"] = statistics.fmean(submission(e) is not None for e in episodes)
    multi_turn = any(len(e.turns) > 1 for e in episodes)
    row["turns"] = statistics.fmean(len(e.turns) for e in episodes) if multi_turn else None
    return row


def success(episode: Episode, task: TriageTask) -> bool:
    """A submission with the right escalation decision that answers an answerable ticket correctly
    (`is_correct`) or, for a ticket the knowledge base cannot answer, cites nothing."""
    return succeeded(submission(episode), task)


READER_PREFILL = '<tool_call>\n{"name": "submit_resolution", "arguments": {"resolution": "'
"""The reader's reply opened up to the resolution text: the embedded model then finishes a valid call often enough
for groups to differ (experiments/LOG.md, "GRPO on CPU, triage reader mode")."""


def train_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """What lets the embedded SmolLM2-135M start on the triage reader (experiments/grpo_cpu_proof.py): one article (a
    prompt near 1,000 tokens, which the CPU affords), the compact tool listing, two worked examples, the reader's
    prefill, and a temperature at which its samples differ but still close the call. Agent mode gets none: with the
    compact listing and a Hermes prefill its 8 sampled episodes on a training ticket all scored 0 (no valid call)."""
    if options["mode"] == "agent":
        return {}
    return {"env_options": {"k": 1}, "tool_listing": "compact", "demos": 2, "prefill": READER_PREFILL,
            "max_new_tokens": 128, "temperature": 0.7}


def describe(task: TriageTask) -> str:
    return (f"{task.id}: gold escalate={task.should_escalate}, answerable={task.answerable}, "
            f"gold articles={', '.join(task.gold_article_ids) or 'none'}")


SPEC: EnvSpec[TriageTask] = EnvSpec(
    name="triage",
    summary="IT tickets answered from a knowledge base; search agent or grounded reader",
    load=TriageEnv,
    rubric=lambda options, params: rubric(),
    baselines=lambda options: {"random": RandomPolicy,
                               "heuristic": functools.partial(HeuristicPolicy, options.get("data_dir")),
                               "oracle": OraclePolicy},
    summarize=summarize,
    success=success,
    columns=(Column("total"), *(Column(name) for name in COMPONENT_NAMES), Column("escalation_acc", percent),
             Column("brier", "{:.3f}".format), Column("confidence_auc", "{:.3f}".format), Column("submitted", percent),
             Column("turns", "{:.1f}".format)),
    describe=describe,
    options=(
        EnvOption("mode", str, "reader", "reader: one turn, ticket + k articles; agent: multi-turn search.",
                  flag="--mode", choices=MODES),
        EnvOption("k", int, 3, "Reader mode: articles in the prompt (gold + BM25 distractors).", flag="--k"),
        EnvOption("turn_budget", int, 8, "Agent mode: turns before the episode ends unsubmitted.",
                  flag="--turn-budget"),
        EnvOption("data_dir", str, None, "A corpus folder to use instead of the shipped one.", flag="--data-dir"),
    ),
    charts=(Chart("components.png", "components", "triage: mean reward components per policy", "mean (0-1)"),),
    batch=16,
    report_dir=lambda options: f"triage-{options['mode']}",
    train_defaults=train_defaults,
)
