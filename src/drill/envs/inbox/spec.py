"""The inbox's registry entry: how `drill eval/watch/train inbox` load, score, summarize and describe it."""

from __future__ import annotations

import functools
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from drill.core.judge import words
from drill.core.spec import Chart, Column, EnvOption, EnvSpec, percent
from drill.core.types import Episode
from drill.envs.inbox.baselines import baselines
from drill.envs.inbox.env import InboxEnv
from drill.envs.inbox.questions import PROPER_WORDS, AnswerJudge, InboxQuestion, lexicon_of
from drill.envs.inbox.store import MailStore
from drill.envs.inbox.rubric import outcome, rubric
from drill.envs.inbox.synthetic import DEFAULT_MESSAGES

OUTCOMES = ("correct", "abstained", "wrong", "no_answer")
JUDGE_OPTIONS = ("judge", "judge_base_url", "judge_api_key_env")
"""Options of the rubric's answer judge; the environment itself never judges."""


def load(**options: Any) -> InboxEnv:
    """An inbox env from the spec's options (the judge's options go to the rubric, not here)."""
    return InboxEnv(**{k: v for k, v in options.items() if k not in JUDGE_OPTIONS})


def judge_lexicon(env: InboxEnv) -> dict[str, tuple[str, ...]]:
    """What the judge knows of each kind: every gold answer of the question file, all three splits (`lexicon_of`) and,
    as names, every person the mail store holds. A name no gold uses, written in lower case, is still a second name:
    "lucas fontaine chidi yilmaz", every name of a mail packed, was judged correct on 21 more train questions than the
    heuristic answered (an outside red team, experiments/LOG.md, 2026-11-27). Until 2026-11-28 validation's golds were
    left out, so "Harbor Room the royal mile hotel" (a hotel only a validation question names) was one place.

    Places and names also know every run of capitalised words the mail writes (`_mail_names`) that holds none of the
    kind's values, and places every person: the judge reads such a run as a second value when it is capitalised, so
    it must in lower case too. Until 2026-11-29 a source mail's runs packed in lower case ("harrowgate books q2 cedar
    room lucas fontaine chidi yilmaz account executive") were correct on 175 of the 324 place and name questions, the
    same packs capitalised on none (eighth red team). And the judge knows the words the mail only writes capitalised
    (`PROPER_WORDS`), to read an answer's lower-case words as the mail would write them."""
    lexicon = lexicon_of([q for split in ("train", "validation", "test") for q in env.tasks(split)])
    people = env.store.people()
    lexicon["name"] = tuple(dict.fromkeys([*lexicon.get("name", ()), *people]))
    lexicon["place"] = tuple(dict.fromkeys([*lexicon.get("place", ()), *people]))
    runs, proper = _mail_names(env.store)
    for kind in ("place", "name"):
        values = {tuple(words(v)) for v in lexicon[kind]}
        lexicon[kind] += tuple(run for run in runs if not _holds_any(tuple(words(run)), values))
    lexicon[PROPER_WORDS] = proper
    return lexicon


_RUN = re.compile(r"\b[A-Z][\w'&-]*(?: [A-Z][\w'&-]*)+")
"""Two or more capitalised words in a row, as the judge's own run reader finds them in an answer."""


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_ADDRESS = re.compile(r"\S+@\S+|\S+://\S+|www\.\S+")
"""Mail and web addresses, whose lower-case words ("chidi.yilmaz@kestrel.example") say nothing of how names are
written."""


@functools.lru_cache(maxsize=8)
def _mail_names(store: MailStore) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every run of capitalised words (`_RUN`) in the subjects and bodies of the store's dated mail, and every word
    they write capitalised and never in lower case outside an address (lower-cased: "harrowgate", "lucas")."""
    found: dict[str, None] = {}
    capitalised: set[str] = set()
    lower: set[str] = set()
    for inbox in store.inboxes():
        for message in store.dated_messages(inbox):
            for text in (message.subject, message.body):
                found.update(dict.fromkeys(m.group() for m in _RUN.finditer(text)))
                for word in _WORD.findall(_ADDRESS.sub(" ", text)):
                    (capitalised if word[0].isupper() else lower).add(word.lower())
    return tuple(found), tuple(sorted(capitalised - lower))


def _holds_any(run: tuple[str, ...], values: set[tuple[str, ...]]) -> bool:
    """`run` (words) holds one of `values` in a row: "Hotel Marlowe Chicago" holds the gold "Hotel Marlowe", and
    must not hide it as another place when an answer copies it."""
    return any(run[i:i + len(v)] == v for v in values if v for i in range(len(run) - len(v) + 1))


def make_rubric(options: Mapping[str, Any], params: Mapping[str, float]) -> Any:
    """The rubric, its judge knowing the inbox's values of each kind (`judge_lexicon`)."""
    env = load(**options)
    judge = AnswerJudge(options.get("judge") or "match", options.get("judge_base_url"),
                        options.get("judge_api_key_env") or "OPENAI_API_KEY", judge_lexicon(env))
    return rubric(int(options.get("max_turns") or 10), judge)


def summarize(episodes: Sequence[Episode], tasks: Mapping[str, InboxQuestion]) -> dict[str, Any]:
    """Mean reward, outcome rates, source precision on correct answers, turns and invalid calls."""
    outcomes = [outcome(e.score.components) for e in episodes if e.score is not None]
    row: dict[str, Any] = {"reward": statistics.fmean(e.score.total for e in episodes if e.score)}
    for name in OUTCOMES:
        row[name] = outcomes.count(name) / len(episodes)
    correct = [e for e, o in zip(episodes, outcomes) if o == "correct"]
    row["sources"] = statistics.fmean(e.score.components["sources"] for e in correct if e.score) if correct else 0.0
    row["turns"] = statistics.fmean(len(e.turns) for e in episodes)
    row["format_errors"] = statistics.fmean(e.count("invalid_action") for e in episodes)
    return row


def success(episode: Episode, task: InboxQuestion) -> bool:
    """The judge's verdict is correct ("I don't know" counts where the inbox holds no answer)."""
    return episode.score is not None and outcome(episode.score.components) == "correct"


def kind(task: InboxQuestion) -> str:
    return "no answer" if task.answer is None else task.kind


def describe(task: InboxQuestion) -> str:
    gold = task.answer if task.answer is not None else "I don't know (the inbox has no answer)"
    return f"{task.id}: {task.question} · gold answer: {gold} · sources: {', '.join(task.sources) or 'none'}"


def train_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """The prompt every inbox proof trains and evaluates with (experiments/inbox_extractive_sft.py): the compact tool
    listing and the opening of a Hermes call, so the model calls a tool instead of answering in prose; short replies;
    and micro-batches bounded by tokens, since a late turn's prompt holds the mail it read. Under it the untrained
    SmolLM2-135M still writes no valid call (8 of 8 sampled episodes: ten cut-off calls each), so GRPO alone gets no
    variance here: start with an SFT stage on a teacher, as the proofs do (`--stage sft:source=...`)."""
    return {"tool_listing": "compact", "prefill": '<tool_call>\n{"name": "', "max_new_tokens": 96,
            "micro_batch_tokens": 4096}


def _commands() -> Any:
    from drill.envs.inbox.commands import inbox_app

    return inbox_app


SPEC: EnvSpec[InboxQuestion] = EnvSpec(
    name="inbox",
    summary="questions answered from one person's email over SQLite FTS5",
    load=load,
    rubric=make_rubric,
    baselines=lambda options: baselines,
    summarize=summarize,
    success=success,
    columns=(Column("reward"), *(Column(name, percent) for name in OUTCOMES), Column("sources"),
             Column("turns", "{:.1f}".format), Column("format_errors")),
    describe=describe,
    options=(
        EnvOption("seed", int, 0, "Seed of the synthetic company inbox (when no --db is given).",
                  flag="--synthetic-seed"),
        EnvOption("messages", int, DEFAULT_MESSAGES, "About how many messages the synthetic inbox has."),
        EnvOption("db", str, None, "A mail store from `drill inbox ingest` instead of the synthetic inbox.",
                  flag="--db"),
        EnvOption("questions", str, None, "The questions JSONL for --db.", flag="--questions"),
        EnvOption("cache_dir", str, None, "Where the synthetic inbox is built; default the user cache."),
        EnvOption("max_turns", int, 10, "Tool calls per episode.", flag="--max-turns"),
        EnvOption("judge", str, "match", "match (normalized match) or openai:MODEL (an LLM judge).", flag="--judge"),
        EnvOption("judge_base_url", str, None, "OpenAI-compatible endpoint of the judge model.",
                  flag="--judge-base-url"),
        EnvOption("judge_api_key_env", str, "OPENAI_API_KEY", "Environment variable holding the judge's API key."),
    ),
    group=kind,
    group_name="kind",
    charts=(Chart("inbox_by_kind.png", "by_group", "inbox QA: mean reward per question kind", "mean reward"),),
    commands=_commands,
    train_defaults=train_defaults,
)
