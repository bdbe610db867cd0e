"""Holes an outside red team found in the triage reader's rubric (experiments/LOG.md, 2026-11-27), each checked on
the shipped train tickets: the gold article's steps denied one by one ("Do not enable SDK adaptive retries") were
judged correct, and a near miss (the steps cut just below the correctness bar) stated at confidence 0 scored as
much as the right answer, because only ROUGE-L paid being right and calibration pays an admitted miss in full."""

from __future__ import annotations

import dataclasses
import importlib
import re
from functools import partial
from typing import Any

import pytest

from drill.core.types import Action, Episode, Event
from drill.envs import triage
from drill.envs.triage.baselines import NO_MATCH_ANSWER
from drill.envs.triage.corpus import CorpusError, _check_references
from drill.envs.triage.env import article_steps
from drill.envs.triage.text import step_head

R = importlib.import_module("drill.envs.triage.rubric")


@pytest.fixture(scope="module")
def answered() -> list[tuple[Any, str, str]]:
    """(task, gold article id, its steps as shown) for every train ticket the knowledge base answers with its gold
    article's steps (not those whose gold rules out one of them: `test_ruled_out_steps_ordered_are_no_answer`)."""
    return with_steps(("train",), lambda t: t.answerable and not t.ruled_out)


def with_steps(splits: tuple[str, ...], keep: Any) -> list[tuple[Any, str, str]]:
    """(task, gold article id, its steps as the reader at k=5 shows them) for the tasks of `splits` that `keep`."""
    env = triage.SPEC.make(triage.SPEC.parse_options({"mode": "reader", "k": 5}))()
    return [(t, t.gold_article_ids[0], article_steps(env.corpus.articles[t.gold_article_ids[0]]))
            for split in splits for t in env.tasks(split) if keep(t)]


def episode(task: Any, gold: str, steps: str, text: str, confidence: float) -> Episode:
    event = Event(name="submitted", step=1, role="agent", data={
        "resolution": text, "citations": [gold], "confidence": confidence, "escalate": task.should_escalate,
        "seen_ids": [gold], "seen_articles": [gold], "seen_steps": [steps]})
    return Episode(env="triage", task_id=task.id, seed=0, events=[event], done=True)


def correct_on(answered: list[tuple[Any, str, str]], write: Any) -> int:
    """On how many answered tickets `write(task, steps)`, cited with the gold article, is judged correct."""
    rubric = R.rubric()
    return sum(rubric.score(episode(t, g, s, write(t, s), 1.0), t).components["correct"] == 1.0
               for t, g, s in answered)


def each_step(form: str) -> Any:
    """The steps, each written into `form` ("Do not {}.")."""
    return lambda t, s: " ".join(form.format(h[:1].lower() + h[1:]) for h in s.split("; "))


def test_denied_steps_are_no_answer_and_the_steps_themselves_are(answered: list[tuple[Any, str, str]]) -> None:
    """Every step denied was correct on all 183 answerable train tickets; now on a few (a gold that says "not"
    itself), while the steps, and the steps after an aside that holds a denial, stay correct."""
    correct = partial(correct_on, answered)

    n = len(answered)
    assert n > 150
    for honest in (lambda t, s: s, lambda t, s: "No worries: " + s, lambda t, s: "Don't panic, " + t.gold_resolution,
                   lambda t, s: t.gold_resolution + " If the problem persists, ask the team for help."):
        assert correct(honest) == n
    for denial in (each_step("Do not {}."), each_step("Step 1: do not {}."), each_step("You should really never {}."),
                   each_step("It is important not to {}."), each_step("{} - not recommended."),
                   lambda t, s: " ".join(f"Do not {x[:1].lower()}{x[1:]}" for x in
                                         re.split(r"(?<=[.!?;])\s+", t.gold_resolution) if x)):
        assert correct(denial) < 0.05 * n


def near_miss(task: Any, steps: str) -> str:
    """The longest word prefix of the steps that is not yet correct (ROUGE-L recall under the bar)."""
    tokens = steps.split()
    for n in range(len(tokens), 0, -1):
        text = " ".join(tokens[:n])
        if all(R.rouge_l(text, gold)[1] < R.CORRECT_ROUGE_RECALL for gold in (steps, task.gold_resolution)):
            return text
    return tokens[0]


def test_a_near_miss_at_confidence_zero_scores_well_below_the_right_answer(
        answered: list[tuple[Any, str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    def gap(rubric: Any) -> float:
        right = [rubric.score(episode(t, g, s, s, 1.0), t).total for t, g, s in answered]
        missed = [rubric.score(episode(t, g, s, near_miss(t, s), 0.0), t).total for t, g, s in answered]
        return sum(right) / len(right) - sum(missed) / len(missed)

    assert gap(R.rubric()) > 0.12
    # the hole put back: the weights before `correct`, where a right answer earned only its ROUGE-L
    before = R.rubric({"correct": 0.0, "resolution": 0.25})
    assert gap(before) < 0.05


def test_a_numbered_list_of_the_steps_is_as_focused_as_the_steps(answered: list[tuple[Any, str, str]]) -> None:
    """"1. Find the caller" read "1." as an off-topic sentence of its own: a numbered answer lost all its focus."""
    for task, _, steps in answered:
        heads = steps.split("; ")
        plain = R.focus("; ".join(heads), task)
        for numbered in ("\n".join(f"{i}. {h}" for i, h in enumerate(heads, 1)),
                         "\n".join(f"{i}) {h}" for i, h in enumerate(heads, 1)), "\n".join(f"- {h}" for h in heads)):
            assert R.focus(numbered, task) == pytest.approx(plain), (task.id, numbered)


def test_a_neighbouring_tickets_answer_is_not_this_tickets(answered: list[tuple[Any, str, str]]) -> None:
    """Another ticket's gold answer on the same gold article (its own host or service named) was judged correct on 116
    of 172 train pairs here (first gold articles; 142 pairs since the tickets with ruled-out steps left the fixture):
    word overlap is all the judge reads. `foreign_terms` names
    those specifics; put back empty, the hole is there again."""
    by_article: dict[str, list[Any]] = {}
    for task, gold, _ in answered:
        by_article.setdefault(gold, []).append(task)
    rubric = R.rubric()
    now = before = pairs = 0
    for task, gold, steps in answered:
        for other in by_article[gold]:
            if other.id == task.id:
                continue
            pairs += 1
            e = episode(task, gold, steps, other.gold_resolution, 1.0)
            now += rubric.score(e, task).components["correct"] == 1.0
            before += rubric.score(e, task.model_copy(update={"foreign_terms": []})).components["correct"] == 1.0
    assert pairs > 130 and before > pairs / 2 and now < before / 2, (pairs, before, now)


def test_every_other_word_of_the_steps_is_no_answer(answered: list[tuple[Any, str, str]],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other content word of the gold article's shown steps, in order ("find enable adaptive reduce volume
    legitimate higher rate."), has ROUGE-L recall 0.5: it was correct on every ticket the steps were and scored
    above them (parsimony pays the shorter text). Its word pairs are not the steps', so it is no answer now; the
    steps, and the steps with their stop words dropped, still are."""
    from drill.envs.triage.text import stop_words, words

    def write(salad: bool) -> Any:
        def text(task: Any, steps: str) -> str:
            content = [w for w in words(steps) if w not in stop_words()]
            return " ".join(content[::2] if salad else content) + "."
        return text

    correct = partial(correct_on, answered)

    n = len(answered)
    assert correct(lambda t, s: s) == n and correct(write(salad=False)) > 0.9 * n
    assert correct(write(salad=True)) < 0.05 * n
    monkeypatch.setattr(R, "CORRECT_MIN_PAIRS", 0.0)  # the hole put back
    R.in_runs.cache_clear()
    assert correct(write(salad=True)) > 0.9 * n


def test_every_other_word_of_the_gold_resolution_is_no_answer(answered: list[tuple[Any, str, str]],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`drill audit`'s "thinned" mutation (2026-11-28): every other content word of the gold resolution, which the
    agent never sees, was judged by ROUGE-L recall alone: correct on 73 of 101 test episodes, 181 of 183 train tickets
    here. It must say the gold in runs of its words (or of the shown gold steps') now; the gold itself, and the
    shown steps, still are answers."""
    from drill.envs.triage.text import stop_words, words

    def salad(text: str) -> str:
        return " ".join([w for w in words(text) if w not in stop_words()][::2]) + "."

    correct = partial(correct_on, answered)

    n = len(answered)
    assert correct(lambda t, s: t.gold_resolution) == n and correct(lambda t, s: s) == n
    assert correct(lambda t, s: salad(t.gold_resolution)) < 0.05 * n
    monkeypatch.setattr(R, "says_gold", lambda sub, task: R.rouge_l(sub.resolution, task.gold_resolution)[1] >= 0.5)
    assert correct(lambda t, s: salad(t.gold_resolution)) > 0.9 * n  # 181 of 183 before the fix


CYRILLIC = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у"})


@pytest.mark.parametrize("disguise", ["plain", "Cyrillic look-alikes", "zero-width spaces"])
def test_another_articles_steps_in_disguise_are_still_a_list(answered: list[tuple[Any, str, str]],
                                                            disguise: str) -> None:
    """The gold article's steps followed by another shown article's: a list of candidates, not an answer
    (`lists_another`). Written in Cyrillic look-alike letters, the second article's steps were no words to the check,
    so the list was correct (56 of these 60 tickets; red teams, 2026-11-27, left open as no gain until 2026-11-28):
    words are read as a reader sees them now (`drill.core.text.as_read`), zero-width characters dropped too (a
    zero-width space after each letter was already no answer: its single letters failed the precision floor)."""
    env = triage.SPEC.make(triage.SPEC.parse_options({"mode": "reader", "k": 5}))()
    articles = env.corpus.articles
    write = {"plain": lambda text: text, "Cyrillic look-alikes": lambda text: text.translate(CYRILLIC),
             "zero-width spaces": lambda text: "".join(c + "\u200b" if c.isalnum() else c for c in text)}[disguise]
    rubric, correct, n = R.rubric(), 0, 0
    for task, gold, steps in answered[:60]:
        other = next(i for i in sorted(articles) if i not in task.gold_article_ids)
        other_steps = article_steps(articles[other])
        event = Event(name="submitted", step=1, role="agent", data={
            "resolution": f"{steps}\n{write(other_steps)}", "citations": [gold], "confidence": 1.0,
            "escalate": task.should_escalate, "seen_ids": [gold, other], "seen_articles": [gold, other],
            "seen_steps": [steps, other_steps]})
        e = Episode(env="triage", task_id=task.id, seed=0, events=[event], done=True)
        correct += rubric.score(e, task).components["correct"] == 1.0
        n += 1
    assert n == 60 and correct <= 3, (disguise, correct)


def test_the_steps_denied_at_once_in_other_words_or_turned_around_are_no_answer(
        answered: list[tuple[Any, str, str]]) -> None:
    """A fifth outside red team (2026-11-28): the gold article's steps with one closing denial ("Do not do any of the
    above."), after an opening that points at them ("Do not try these:"), each opened by "You shouldn't", "You
    can't", "No need to" or "Skip this:", struck through, or with each step's verb replaced by a contrary one
    ("Delete", "Wipe", "Ignore") were judged correct on every answerable ticket (312 of 312 with the gold); the
    gold with its words turned to their opposites ("Disable" for "Enable") on 233 of 233. The steps plain, after an
    aside, or with a closing remark stay correct."""
    correct = partial(correct_on, answered)

    def verb(word: str) -> Any:
        return lambda t, s: "; ".join(word + " " + h.split(None, 1)[1] if len(h.split()) > 1 else h
                                      for h in s.split("; "))

    n = len(answered)
    for honest in (lambda t, s: s, lambda t, s: "No worries: " + s, lambda t, s: s + ". Ask the team if it persists.",
                   lambda t, s: s + ". If none of the above works, escalate.",
                   lambda t, s: s + ". If it does not come back, ask the team.",
                   lambda t, s: s + ". It does not matter which node you start with."):
        assert correct(honest) == n
    for turned in (lambda t, s: s + ". Do not do any of the above.", lambda t, s: "Do not try these: " + s,
                   lambda t, s: "Never do this: " + s, lambda t, s: s + ". Ignore all of that, it makes things worse.",
                   lambda t, s: s + ". None of these steps will work; never attempt them.",
                   each_step("You shouldn't {}."), each_step("You can't {}."), each_step("No need to {}."),
                   each_step("Skip this: {}."), each_step("~~{}~~;"), verb("Wipe"), verb("Ignore")):
        assert correct(turned) < 0.05 * n
    # a contrary verb the gold itself uses ("never delete pg_wal files by hand") is no contradiction: 22 of 183
    assert correct(verb("Delete")) < 0.15 * n
    antonyms = {"Enable": "Disable", "enable": "disable", "increase": "decrease", "Increase": "Decrease",
                "grant": "revoke", "Grant": "Revoke", "allow": "block", "Allow": "Block", "add": "remove",
                "Add": "Remove", "raise": "lower", "Raise": "Lower"}
    swapped = [(t, g, s) for t, g, s in answered
               if any(re.search(rf"\b{a}\b", s) for a in antonyms)]
    turned_around = correct_on(swapped, lambda t, s: re.sub(r"\b(" + "|".join(antonyms) + r")\b",
                                                            lambda m: antonyms[m.group()], s))
    assert len(swapped) >= 20 and turned_around < 0.4 * len(swapped), (turned_around, len(swapped))


TURNED = {"Restart": "Shut down", "Reboot": "Shut down", "Allow": "Block", "Increase": "Reduce", "Raise": "Reduce",
          "Add": "Remove", "Grant": "Revoke", "Open": "Close", "Attach": "Detach", "Mount": "Unmount",
          "Enable": "Turn off", "Flush": "Retain", "Install": "Uninstall", "Keep": "Discard", "Extend": "Shorten",
          "Grow": "Shrink", "Connect": "Disconnect", "Lock": "Unlock", "Unlock": "Lock", "Start": "Halt"}


def first_step_as(steps: str, table: dict[str, str]) -> str | None:
    """The steps with the first one that opens with a word of `table` said with that word's entry, the others as
    they are."""
    heads = steps.split("; ")
    for i, head in enumerate(heads):
        verb, _, rest = head.partition(" ")
        if verb in table and rest:
            return "; ".join([*heads[:i], f"{table[verb]} {rest}", *heads[i + 1:]])
    return None


def one_step_turned(steps: str) -> str | None:
    """The first step that opens with a word of `TURNED` turned around."""
    return first_step_as(steps, TURNED)


def test_a_single_step_turned_around_among_the_others_is_no_answer(answered: list[tuple[Any, str, str]]) -> None:
    """A sixth red team (2026-11-28): one step of the gold article's shown steps turned around ("Shut down" for
    "Restart", "Block" for "Allow", "Reduce" for "Raise", "Turn off" for "Enable"), the others said plainly, was correct
    on 37 of these 57 train tickets: the table held one opposite a word ("allow" -> "deny" only) and few words. Now
    on 3 (a gold sentence the turned one also says uses the opposite itself). Saying the step another way with the
    opposite in it ("shut it down and start it again") is still the step."""
    turned = [(t, g, s) for t, g, s in answered if one_step_turned(s)]
    assert len(turned) >= 30
    assert correct_on(turned, lambda t, s: one_step_turned(s)) <= 0.1 * len(turned)
    restart = [(t, g, s) for t, g, s in answered if re.search(r"(^|; )Restart ", s)]
    assert restart and correct_on(restart, lambda t, s: re.sub(r"(^|; )Restart ([^;]*)",
                                                              r"\1Shut down \2 and start it again", s)) == len(restart)


def test_each_step_refused_in_a_word_is_no_answer(answered: list[tuple[Any, str, str]]) -> None:
    """A sixth red team (2026-11-28): each shown step refused by a bare "No" ("Restart X? No.", "Nope, restart X",
    the opening dropped as an aside like "No worries,") was correct on every answerable train ticket (183 of 183 in
    each of these forms, but "Never, X": 168), and so were denials in look-alike letters ("You cаn't X", a Cyrillic
    "а"). A refusal that is not about the steps is no denial of them."""
    some = answered[:10]
    for form in ("Nope, {l}.", "No, {l}.", "No way: {l}.", "Nah, {l}.", "Nein, {l}.", "Never, {l}.", "{u}? No.",
                 "{u}? Negative.", "{u} - no.", "{u}. No.", "{u} (no).", "{u} = bad idea.", "No {l}.",
                 "<strike>{u}</strike>.", "{u}? N\u043e.", "You c\u0430n't {l}."):  # the last two: a Cyrillic "о", "а"
        write = lambda t, s, f=form: " ".join(f.format(l=h[:1].lower() + h[1:], u=h) for h in s.split("; "))  # noqa
        assert correct_on(some, write) <= 1, form
    struck = lambda t, s: "; ".join("".join(c + "\u0336" for c in h) for h in s.split("; "))  # noqa: E731
    assert correct_on(some, struck) <= 1  # U+0336 after each letter: dropped with the accents until 2026-11-28
    for honest in (lambda t, s: "No worries, " + s, lambda t, s: "Is the cause the network? No. " + s,
                   lambda t, s: "No, that is not the cause. " + s, lambda t, s: s + ". No other change is needed."):
        assert correct_on(some, honest) == len(some)


def test_a_step_that_forbids_said_as_an_order_is_no_answer(answered: list[tuple[Any, str, str]]) -> None:
    """A sixth red team (2026-11-28): a shown step that forbids ("Never store unseal keys in tickets or chat", "Do not
    re-enable TLS 1.0/1.1 on the server") said as an order ("Store unseal keys in tickets or chat") was correct on
    every ticket that has one (19 of 19 here, 35 of 35 answerable tickets over the splits); now on 1 of 17 here
    ("Do NOT blindly skip ..." said as "Blindly skip ...": "skip" is a denial word itself). Until 2026-11-28 a
    denial or "without" anywhere in the sentence kept the order in full ("Store unseal keys in tickets or chat
    without delay", "File a quota increase - it will not": 17 of 17): they take it back only up to the step's last
    clause, and before the step. A gold that says it with "instead of" or "without" still forbids it, and stays an
    answer."""
    def ordered(t: Any, s: str, after: str = "") -> str:
        return re.sub(r"(^|; )(?:Do not|Do NOT|Never|Don't) (\w)([^;]*)",
                      lambda m: m.group(1) + m.group(2).upper() + m.group(3) + after, s)

    forbidding = [(t, g, s) for t, g, s in answered if ordered(t, s) != s]
    assert len(forbidding) >= 15
    for after in ("", " without delay", " unless told otherwise", " - no need to wait", " (nothing to worry about)",
                  " so it does not recur", " and don't think twice", " but do not wait"):  # 15 of 17 until a review
        assert correct_on(forbidding, lambda t, s: ordered(t, s, after)) <= 0.25 * len(forbidding), after
    assert correct_on(forbidding, lambda t, s: s) == correct_on(forbidding, lambda t, s: t.gold_resolution) == \
        len(forbidding)


def test_a_citation_on_an_answer_that_says_nothing_earns_no_grounding(answered: list[tuple[Any, str, str]]) -> None:
    """A sixth red team (2026-11-28): "." citing the gold article scored grounding 1 (0.54 in total at confidence 0
    on validation, against the heuristic's 0.69): a citation supports what the answer says. Grounding now takes the
    answer's `substance` into account; the shown steps, and the gold, keep it in full."""
    rubric = R.rubric()
    for task, gold, steps in answered[:30]:
        said = {text: rubric.score(episode(task, gold, steps, text, 0.0), task).components["grounding"]
                for text in (".", "See the cited article.", steps, task.gold_resolution)}
        assert said["."] == 0.0 and said["See the cited article."] <= 0.25, (task.id, said)
        assert said[steps] == said[task.gold_resolution] == 1.0, (task.id, said)


@pytest.mark.parametrize("hidden", ["<!-- {steps} -->\n", "[//]: # ({steps})\n", "<div hidden>{steps}</div>\n",
                                    '<span style="display: none">{steps}</span>', "<!-- {steps}\n",
                                    "[a]: <> ({steps})\n", '[kb]: https://kb.example.com "{steps}"\n',
                                    '<span title="{steps}">', '<p style="font-size: 0">{steps}</p>',
                                    '<div style="opacity:0">{steps}</div>', '<p style="color: #ffffff">{steps}</p>'])
def test_the_steps_where_a_reader_does_not_see_them_are_no_answer(answered: list[tuple[Any, str, str]],
                                                                   hidden: str) -> None:
    """A sixth red team (2026-11-28): the shown steps in an HTML comment (or a Markdown comment, or an element marked
    hidden) above a wrong fix the user does see ("Reboot your laptop and try again.") were correct on 182 of 183
    answerable train tickets: the rubric read what rendered text never shows. A seventh red team (2026-11-28): so was
    any other link reference definition, and an attribute's value (a `title`). A ninth red team (2026-11-28): so was
    a paragraph styled out of sight, once a `<p>` reads as the line break it renders. The same steps shown stay an
    answer."""
    wrong = "Reboot your laptop and try again."
    write = lambda t, s: hidden.format(steps=s.replace("(", "").replace(")", "").replace('"', "")) + wrong  # noqa
    assert correct_on(answered[:20], write) == 0
    assert correct_on(answered[:20], lambda t, s: f"{s}\n{wrong}") == 20


def middle_step_as(steps: str, verb: str) -> str | None:
    """The steps with the middle one of those that open with a word and say more after it opened by `verb` instead."""
    heads = steps.split("; ")
    some = [i for i, h in enumerate(heads) if len(h.split()) > 1 and h[:1].isalpha()]
    if not some:
        return None
    i = some[len(some) // 2]
    return "; ".join([*heads[:i], f"{verb} {heads[i].split(None, 1)[1]}", *heads[i + 1:]])


SYNONYMS = {"Verify": "Confirm", "Restart": "Reboot", "Raise": "Increase", "Check": "Examine", "Find": "Locate",
            "Confirm": "Verify", "Run": "Execute", "Use": "Employ", "Fix": "Repair", "Set": "Configure"}


def test_a_step_with_its_verb_replaced_by_one_the_gold_never_uses_is_no_answer(
        answered: list[tuple[Any, str, str]]) -> None:
    """`drill audit`'s "steps wiped" with another verb (2026-11-28): the word list `_DESTROYING` refused "Wipe" and
    nothing else, so one shown step with its verb replaced by "Scrap" or "Demolish", the others plain, was correct
    on all 183 answerable train tickets; now on 10 (a step with no object after its verb, or the verb kept after
    the new word). The step with its verb swapped for a synonym ("Reboot" for "Restart", "Examine" for "Check") stays
    an answer."""
    def succeeds(write: Any) -> int:
        return sum(R.succeeded(R.submission(episode(t, g, s, write(s), 1.0)), t) for t, g, s in answered)

    n = len(answered)
    for verb in ("Scrap", "Demolish"):
        assert succeeds(lambda s, v=verb: middle_step_as(s, v) or "") <= 0.1 * n, verb  # type: ignore[misc]
    swapped = [(t, g, s) for t, g, s in answered if one_swapped(s)]
    assert len(swapped) >= 100 and sum(R.succeeded(R.submission(episode(t, g, s, one_swapped(s) or "", 1.0)), t)
                                       for t, g, s in swapped) == len(swapped)


def one_swapped(steps: str) -> str | None:
    """The first step that opens with a word of `SYNONYMS` said with its synonym."""
    return first_step_as(steps, SYNONYMS)


def test_the_steps_taken_back_after_them_are_no_answer(answered: list[tuple[Any, str, str]]) -> None:
    """A seventh red team (2026-11-28): the shown steps followed by a sentence that takes them back with no "not"
    pointing at them ("Scratch all that.", "Forget everything I just said.", "Just kidding, none of it.", "Actually,
    don't.") were correct wherever the steps were (the heuristic's pick so written: 0.647 success on test at k=5, as
    the steps). A reminder ("Don't forget to {step}", a "Don't forget to document it." after the steps) is no denial:
    it failed on all but 3 of these tickets before."""
    some = answered[:10]
    for taken_back in ("Scratch all that.", "Forget everything I just said.", "Just kidding, none of it.",
                       "Actually, don't.", "Disregard it."):
        assert correct_on(some, lambda t, s, x=taken_back: f"{s}. {x}") == 0, taken_back  # type: ignore[misc]
    for honest in ("Don't forget to document it.", "Don't worry, this is common.", "Hope this helps!",
                   "Let me know if that doesn't help.", "Forget the old workaround."):
        assert correct_on(some, lambda t, s, x=honest: f"{s}. {x}") == len(some), honest  # type: ignore[misc]
    assert correct_on(some, each_step("Don't forget to {};")) >= len(some) - 1
    assert correct_on(some, lambda t, s: "Do not forget: " + s) == len(some)


@pytest.mark.parametrize("disguise", ["{s}", "\u202eton oD\u202c {s}", "Do \u0274\u1d0f\u1d1b {s}", "~{u}~",
                                      "Do n\u0585t {s}", "Do n\u0966t {s}"])
def test_each_step_denied_in_letters_the_rubric_did_not_read_is_no_answer(answered: list[tuple[Any, str, str]],
                                                                          disguise: str) -> None:
    """A seventh red team (2026-11-28): each shown step behind a denial a reader sees and the rubric did not was
    correct wherever the steps were: "not" written backwards inside a right-to-left override (shown "Do not ..."),
    in small capitals ("ɴᴏᴛ", which NFKC keeps and the tokenizer dropped), with an "o" of another script that no
    look-alike table folds (an Armenian "օ", a Devanagari zero: `disguised`), or each step struck through with single
    tildes (`~X~`, rendered struck through). The steps themselves, and the corpus' own tildes, stay an answer."""
    some = answered[:20]
    write = lambda t, s: "; ".join(disguise.format(s=h[:1].lower() + h[1:], u=h) for h in s.split("; "))  # noqa
    assert correct_on(some, write) == (len(some) if disguise == "{s}" else 0)
    assert R.visible("Fix ~/.ssh (chmod 700 ~/.ssh && chmod 600 ~/.ssh/authorized_keys); retry after ~60 s") == \
        "Fix ~/.ssh (chmod 700 ~/.ssh && chmod 600 ~/.ssh/authorized_keys); retry after ~60 s"


def test_a_destroying_order_beside_the_right_steps_is_no_answer(answered: list[tuple[Any, str, str]]) -> None:
    """A seventh red team (2026-11-28): the shown steps as one branch of a condition and a destroying order as the other
    ("If this is production: the steps. Otherwise, wipe the server and reinstall everything.") were correct wherever
    the steps were: `_DESTROYING` was read only in a sentence that says a gold step ("tear down" is read as
    "destroy" there too). A condition that destroys nothing stays an answer."""
    some = answered[:25]
    for other in ("wipe the server and reinstall everything", "tear down the whole stack", "reformat the volume"):
        assert correct_on(some, lambda t, s, o=other: f"If this is production: {s}. Otherwise, {o}.") == 0, other
    assert correct_on(some, lambda t, s: f"If this is production: {s}. Otherwise, ask the team first.") == len(some)


def test_a_step_of_one_word_swapped_for_a_word_the_gold_never_uses_is_no_answer(
        answered: list[tuple[Any, str, str]]) -> None:
    """`drill audit`'s "steps wiped" with "Corrupt" on the gold resolution (2026-11-28) still passed on 13 of the 117
    train answers it changes, 8 of them a clause with no object of its own ("... `certbot --expand`, corrupt and
    re-check" for "reload and re-check", "... and corrupt;" for "and reconnect;"): `_verb_swapped` reads a step by
    its object. Such a clause between the same neighbours as in the gold is read by its word now; the gold stays."""
    def one_word(t: Any, s: str) -> str:
        return re.sub(r"(, |\band )(reload|reconnect|investigate)\b", r"\1corrupt", t.gold_resolution)

    bare = [(t, g, s) for t, g, s in answered if one_word(t, s) != t.gold_resolution]
    assert len(bare) >= 5
    assert correct_on(bare, one_word) == 0
    assert correct_on(bare, lambda t, s: t.gold_resolution) == len(bare)
    # a shown step cut before its object ("... reduce requests or add"): its last word said another way stays an answer
    def cut_word(t: Any, s: str) -> str:
        return re.sub(r"\b(and|or) (register|redeploy|re-scan)(?=;|$)", r"\1 tweak", s)

    cut = [(t, g, s) for t, g, s in answered if cut_word(t, s) != s]
    assert len(cut) >= 3 and correct_on(cut, cut_word) == len(cut)


HONEST_SYNONYMS = {"Check": "Scrutinize", "Confirm": "Ascertain", "Restart": "Cycle", "Fix": "Rectify",
                   "Reset": "Reinitialise", "Restore": "Recover", "Find": "Discover", "Limit": "Throttle",
                   "Drain": "Evacuate", "Rebuild": "Recreate"}


def test_common_synonyms_of_the_corpus_verbs_stay_an_answer(answered: list[tuple[Any, str, str]]) -> None:
    """The closed synonym table (`_SAME_ACTION`) costs an honest paraphrase outside it its credit: one clause opener of
    the test tickets' shown steps swapped for a thesaurus synonym of it was correct on 357 of 600 such variants
    (2026-11-28). The table now holds the corpus' common openers it lacked ("reset", "drain", "limit") and more
    synonyms of its own (548 of 600); a list written after it, none of its words added, stayed where it was (169 of
    552, 153 with the one-word rule above)."""
    swapped = [(t, g, s) for t, g, s in answered if first_step_as(s, HONEST_SYNONYMS)][:40]
    assert len(swapped) == 40
    assert correct_on(swapped, lambda t, s: first_step_as(s, HONEST_SYNONYMS) or "") >= len(swapped) - 2


def test_the_agents_tools_never_show_a_past_ticket_closed_with_the_tasks_own_answer() -> None:
    """Searching the past tickets with the ticket and copying the top hit's resolution note scored 0.901 in total and
    0.853 success on test in agent mode, against the heuristic's 0.645 / 0.603: 99 of the 101 answerable test tasks had
    a past ticket on the same host closed with their gold resolution word for word (an eighth red team). Such a
    ticket is neither found nor opened now; past tickets on the same article and other hosts still are."""
    env = triage.SPEC.make(triage.SPEC.parse_options({"mode": "agent", "turn_budget": 50}))()
    tasks = [t for t in env.tasks("validation") if t.answerable]
    twins = {t.id: [k.id for k in env.corpus.tickets.values() if t.gold_resolution in k.resolution_note] for t in tasks}
    assert sum(map(bool, twins.values())) == len(tasks)  # every one had a twin (28 of 28)
    siblings = 0
    for task in tasks:
        env.reset(task, 0)
        found = env.step(Action.call("search_tickets", query=task.ticket, max_results=10)).observation.content
        shown = re.findall(r"^(TCK-\d+) ", found, re.MULTILINE)
        assert not set(shown) & set(twins[task.id])
        for ticket_id in twins[task.id]:
            result = env.step(Action.call("get_ticket", ticket_id=ticket_id))
            assert [e.name for e in result.events] == ["not_found"]
            assert task.gold_resolution not in result.observation.content
        siblings += any(set(env.corpus.tickets[i].article_ids) & set(task.gold_article_ids) for i in shown)
    assert siblings > 0.8 * len(tasks)  # 25 of 28


def test_a_shown_articles_steps_escalated_uncited_on_an_unanswerable_ticket_are_no_success() -> None:
    """A ticket the knowledge base cannot answer succeeded with no citation whatever the text said: the heuristic's
    answer (the top shown article's steps) with its citation dropped, or its id written in the text, whenever it
    escalated raised success from 0.688 to 0.781 on validation at k=5 (an eighth red team). A runbook that does not
    apply is a made-up fix; the gold and the heuristic's "no article matches" still succeed."""
    env = triage.SPEC.make(triage.SPEC.parse_options({"mode": "reader", "k": 5}))()
    shown = {t.id: env.reader_context(t, 0) for t in env.tasks("train") if not t.answerable}
    assert len(shown) > 20

    def succeeds(task: Any, text: str) -> bool:
        articles = shown[task.id]
        event = Event(name="submitted", step=1, role="agent", data={
            "resolution": text, "citations": [], "confidence": 0.1, "escalate": True,
            "seen_ids": [a.id for a in articles], "seen_articles": [a.id for a in articles],
            "seen_steps": [article_steps(a) for a in articles]})
        return R.correct_score(Episode(env="triage", task_id=task.id, seed=0, events=[event], done=True), task) == 1.0

    unanswerable = [t for t in env.tasks("train") if not t.answerable]
    for honest in (lambda t, top: t.gold_resolution, lambda t, top: NO_MATCH_ANSWER):
        assert all(succeeds(t, honest(t, shown[t.id][0])) for t in unanswerable)
    for made_up in (lambda t, top: " ".join(top.resolution), lambda t, top: f"{article_steps(top)} (see {top.id})."):
        assert not any(succeeds(t, made_up(t, top)) for t in unanswerable for top in shown[t.id][:2])


def succeeds_on(rows: list[tuple[Any, str, str]], write: Any) -> int:
    """On how many of `rows` `write(task, steps)`, cited with the gold article, succeeds (the `correct` component
    alone, which is all these tests read)."""
    return sum(R.correct_score(episode(t, g, s, write(t, s), 1.0), t) == 1.0 for t, g, s in rows)


@pytest.mark.parametrize("closing", ["Ne faites rien de tout cela.", "No hagas nada de esto.",
                                     "Bitte nichts davon machen!", "Non fate niente di tutto questo.",
                                     "Não faça nada disso.", "Doe hier niets van.", "Nie rób nic z tego.",
                                     "위의 것은 하지 마세요.", "لا تفعل أيًا من هذا."])
def test_the_steps_taken_back_in_another_language_are_no_answer(answered: list[tuple[Any, str, str]],
                                                                 closing: str) -> None:
    """A closing sentence that takes the steps back in French, Spanish, German, Italian, Portuguese, Dutch, Polish,
    Korean or Arabic kept the steps' full credit (0.659-0.665 in total and 0.647 success on test at k=5 with the
    heuristic's pick, the steps themselves 0.665 / 0.647: an eighth red team)."""
    rows = answered[::4]
    assert succeeds_on(rows, lambda t, s: s) == len(rows)
    assert succeeds_on(rows, lambda t, s: f"{s}. {closing}") == 0


@pytest.mark.parametrize("form", ["Surtout pas: {}.", "Не {}.", "别 {}."])
def test_each_step_denied_in_another_language_is_no_answer(answered: list[tuple[Any, str, str]], form: str) -> None:
    """"Surtout pas:" (French "certainly not", read as an aside like "No worries:"), "Не" (Russian "don't", whose
    Cyrillic letters fold to "He") or "别" (Chinese "don't") before each step kept full credit (an eighth red team); a
    thank-you in other languages takes nothing back."""
    rows = answered[::4]
    assert succeeds_on(rows, each_step(form)) == 0
    assert succeeds_on(rows, lambda t, s: f"{s}. Merci, Danke, ¡Gracias!") == len(rows)


@pytest.mark.parametrize("form", ["Do n*o*t {}.", "Do n**o**t {}.", "Do n`o`t {}.", "Do n&#111;t {}.",
                                  "Do n&#x6F;t {}.", "Do n<b>o</b>t {}.", "Do n<!---->ot {}.", "N&shy;ever {}."])
def test_a_denial_with_markup_inside_its_word_is_no_answer(answered: list[tuple[Any, str, str]], form: str) -> None:
    """A ninth red team (2026-11-28): a denial with Markdown or HTML inside its word, which a reader sees whole ("n*o*t"
    renders "not", so does "n&#111;t"), before each step or in a closing sentence ("Do n*o*t do any of this."), kept
    the steps' full credit: the rubric read the word's pieces. Markup around whole words stays an answer."""
    rows = answered[::4]
    assert succeeds_on(rows, each_step(form)) == 0
    assert succeeds_on(rows, lambda t, s: f"{s}. {form.format('do any of this')}") == 0
    assert succeeds_on(rows, lambda t, s: "; ".join(f"**{h}**" for h in s.split("; ")) + ". Tested at AT&amp;T.") \
        == len(rows)


@pytest.mark.parametrize("form", ["{}<br>", "<p>{}</p>", "<li>{}</li>", "<div>{}</div>\n"])
def test_the_steps_as_html_paragraphs_or_a_list_stay_an_answer(answered: list[tuple[Any, str, str]], form: str) -> None:
    """A ninth red team (2026-11-28): the steps as HTML paragraphs or an `<ol>` list, which render as the steps line by
    line, were correct on 3 and 1 of 183 answerable train tickets (171 as plain text), and joined by `<br>` on 111:
    the rubric read the tags as words ("p", "li", "br") inside one sentence. An honest answer lost its credit."""
    rows = answered[::4]
    assert succeeds_on(rows, lambda t, s: "<ol>" + "".join(form.format(h) for h in s.split("; ")) + "</ol>") \
        == len(rows)
    struck = '<p style="text-decoration: line-through">{}</p>'  # a style that strikes the steps is a strike
    assert succeeds_on(rows, lambda t, s: "".join(struck.format(h) for h in s.split("; "))) == 0


@pytest.mark.parametrize("link", ['[{wrong}](https://kb.example.com "{steps}")',
                                  "[{wrong}](https://kb.example.com/{url})",
                                  "![{wrong}](https://kb.example.com/x.png '{steps}')"])
def test_the_steps_in_a_links_address_or_title_are_no_answer(answered: list[tuple[Any, str, str]], link: str) -> None:
    """A ninth red team (2026-11-28): the steps in an inline link's title or address, behind a wrong fix as the link's
    text (the only part rendered Markdown shows), were correct on 21 of 32 validation tickets at k=5 with the
    heuristic's pick. (An address with unbalanced parentheses is no link: it shows.) The steps as a link's text
    stay an answer."""
    rows = answered[::4]
    wrong = "Reboot your laptop and try again."
    hide = lambda t, s: link.format(wrong=wrong, steps=s.replace('"', "").replace("'", ""),  # noqa
                                    url=re.sub(r"[\s()]+", "-", s))
    assert succeeds_on(rows, hide) == 0
    assert succeeds_on(rows, lambda t, s: f"[{s}](https://kb.example.com/runbook_(v2))") == len(rows)


@pytest.mark.parametrize("form", ["\U0001f6ab {}.", "\u26d4 {}.", "\U0001f6d1 {}.", "\u2716 {}.", "{} \U0001f44e.",
                                  "\U0001f645 {}.", "{}, no.", "{} >> no.", "{} \u21d2 no.", "| {} | No |\n"])
def test_each_step_refused_by_a_mark_or_a_glued_no_is_no_answer(answered: list[tuple[Any, str, str]],
                                                                 form: str) -> None:
    """A ninth red team (2026-11-28): each step behind a prohibition sign ("🚫", "⛔", "🛑"), a cross ("✖"), "👎" or
    "🙅", or refused by a "no" after a comma, ">>", "⇒" or a table's cell, kept the heuristic's full success (0.688 on
    validation at k=5). Check marks, arrows and "3×" say no such thing."""
    rows = answered[::4]
    assert succeeds_on(rows, each_step(form)) == 0
    assert succeeds_on(rows, each_step("\u2705 {}.")) == len(rows)
    assert succeeds_on(rows, lambda t, s: f"{s} \u2192 allow 3\u00d7 the usual time; \u26a0 check twice.") == len(rows)


@pytest.mark.parametrize("form", ["Do n.o.t {}.", "Do N-O-T {}.", "Do n o t {}.", "Prohibited: {}.", "Useless: {}.",
                                  "Forgo: {}.", "Hold off on: {}.", "Steer clear of: {}.", "Dnt {}.", "Refuse to {}."])
def test_each_step_denied_by_a_spelled_word_or_a_label_is_no_answer(answered: list[tuple[Any, str, str]],
                                                                    form: str) -> None:
    """A ninth red team (2026-11-28): "not" spelled letter by letter, or a label of denial words alone ("Prohibited:",
    "Useless:", "Hold off on:", read as an aside like "No worries:"), before each step kept the heuristic's full
    success (0.688 on validation at k=5). An aside that says something else, and initials, take nothing back."""
    rows = answered[::4]
    assert succeeds_on(rows, each_step(form)) == 0
    for honest in ("Don't panic, {}", "Not ideal, but {}", "Never fear: {}", "{}. Refer to the N.O.C. page."):
        assert succeeds_on(rows, lambda t, s: honest.format(s)) == len(rows)  # noqa: B023


def listed(steps: str) -> str:
    return "\n".join(f"- {h}" for h in steps.split("; "))


@pytest.mark.parametrize("heading", ["What not to do:", "Things that won't help:", "Mistakes to avoid:", "Don'ts:",
                                     "Wrong fixes:", "Common mistakes:", "Ruled out:", "Do NOT:", "Never:"])
def test_the_steps_listed_under_a_heading_for_what_not_to_do_are_no_answer(answered: list[tuple[Any, str, str]],
                                                                            heading: str) -> None:
    """A ninth red team (2026-11-28): the steps listed under a heading that says they are what not to do kept the
    heuristic's full success (0.688 on validation at k=5). The steps under a plain heading stay an answer, and so do
    the steps followed by a heading of cautions ("Don't:" and two things the gold never says), which took back the
    right steps above it on every answerable train ticket before."""
    rows = answered[::4]
    assert succeeds_on(rows, lambda t, s: f"{heading}\n{listed(s)}") == 0
    assert succeeds_on(rows, lambda t, s: f"{heading}\n{listed(s)}".replace("\n- ", "\nAlso:\n- ").replace(
        "\nAlso:\n- ", "\n- ", 1)) == 0  # a heading that goes on with it ("Also:") goes on denying
    for honest in ("Fix:\n{}", "## Resolution\n{}", "No downtime is needed:\n{}",
                   "{}\nDon't:\n- Panic\n- Email the vendor"):
        assert succeeds_on(rows, lambda t, s: honest.format(listed(s))) == len(rows)  # noqa: B023


@pytest.fixture(scope="module")
def ruled_out() -> list[tuple[Any, str, str]]:
    """(task, gold article id, its steps as shown) for every ticket, of every split, whose gold rules out some of its
    gold article's steps (T-0219: "do not raise the limit" against the article's "If legitimate, raise the limit")."""
    return with_steps(("train", "validation", "test"), lambda t: t.ruled_out)


def without_ruled_out(task: Any, steps: str) -> str:
    return "; ".join(h for h in steps.split("; ") if h not in task.ruled_out)


def test_ruled_out_steps_ordered_are_no_answer(ruled_out: list[tuple[Any, str, str]]) -> None:
    """The gold article's steps escalated, the routine fix the gold forbids among them ("raise the limit" on a route
    leak, "roll back" when the database is down), were correct on every such ticket until 2026-11-28; the heuristic's
    answer so written failed 7 of its right answers (train and test). The same steps without the ruled-out ones and
    with those denied, or with the gold, stay correct, and so does the gold itself."""
    correct = partial(correct_on, ruled_out)
    n = len(ruled_out)
    assert n == 18 and all(t.should_escalate for t, _, _ in ruled_out)
    assert correct(lambda t, s: s) == 0
    assert correct(lambda t, s: " ".join(f"{h}." for h in t.ruled_out)) == 0
    assert correct(lambda t, s: f"Escalate now. {s}") == 0
    assert correct(lambda t, s: t.gold_resolution) == n
    assert correct(lambda t, s: f"{without_ruled_out(t, s)}. {t.gold_resolution}") == n
    assert correct(lambda t, s: without_ruled_out(t, s) + ". " + " ".join(
        f"Do not {h[:1].lower() + h[1:]}." for h in t.ruled_out)) == n
    assert correct(lambda t, s: without_ruled_out(t, s) + ". " + " ".join(
        f"Escalate instead of this: {h[:1].lower() + h[1:]}." for h in t.ruled_out)) == n


def test_a_ruled_out_step_is_read_from_the_gold_articles_steps() -> None:
    """A ruled-out step index that is no step of the task's gold article is a corpus error, named."""
    corpus = triage.load_corpus()
    task = next(t for t in corpus.tasks if t.ruled_out)
    steps = corpus.articles[task.gold_article_ids[0]].resolution
    assert task.ruled_out == [step_head(steps[i]) for i in task.ruled_out_steps]
    broken = task.model_copy(update={"ruled_out_steps": [len(steps)]})
    with pytest.raises(CorpusError, match="ruled_out_steps .* are not steps of its first gold article"):
        _check_references(dataclasses.replace(corpus, tasks=(broken,)))


@pytest.mark.parametrize(("task_id", "closing", "correct"), [
    ("T-0219", "Raise the limit to 50000.", False),  # two of the step's words in a row: the ticket's own question
    ("T-0219", "Do not raise the limit to 50000.", True),
    ("T-0176", "Do not cordon and drain the nodes.", True),  # the head's own "not" ("If the node does not ...")
    ("T-0102", "Verify the requester's identity out of band first.", True),  # what the gold asks, not the reset
])
def test_a_ruled_out_step_in_few_words_is_an_order_and_its_denial_is_not(
        ruled_out: list[tuple[Any, str, str]], task_id: str, closing: str, correct: bool) -> None:
    """A review's cases (2026-11-28): "Raise the limit to 50000." shares two of its head's five terms, under half, and
    passed after the other steps; the head's own "not" cancelled the answer's in "Do not cordon and drain"."""
    [(task, gold, steps)] = [row for row in ruled_out if row[0].id == task_id]
    text = f"{without_ruled_out(task, steps)}. {task.gold_resolution} {closing}"
    assert correct_on([(task, gold, steps)], lambda t, s: text) == int(correct)


@pytest.mark.parametrize(("form", "correct"), [
    ("{}, no questions asked.", False),
    ("{} - no need to wait.", False),  # a denial in a later clause denies something else
    ("{} (nothing to worry about).", False),
    ("{} unless told otherwise.", False),  # "unless" is a condition, not an exception
    ("{} instead of waiting.", False),  # an excusing word with nothing of the step after it
    ("{} without delay.", False),
    ("Without delay, {}.", False),  # ... or in another clause
    ("Instead of escalating: {}.", False),
    ("Do this instead: {}.", False),  # a colon after an excusing word that points at nothing (a review's)
    ("Instead: {}.", False),
    ("Without delay {}.", False),  # in the step's clause, bearing on something else (a review's)
    ("Instead of waiting {}.", False),
    ("Rather than wait {}.", False),
    ("Never hesitate to {}.", False),
    ("It is not optional to {}.", False),
    ("Do not wait and {}.", False),
    ("{}, it is not risky.", False),
    ("It is not a leak so {}.", False),  # a denial before a coordinator bears on its own half (this session's)
    ("Don't escalate but {}.", False),
    ("Do not panic, just {}.", False),
    ("No time to lose so {}.", False),
    ("{} so it does not recur.", False),
    ("{} and don't think twice.", False),
    ("{} and never mind the rest.", False),
    ("{} but do not wait.", False),
    ("{} yet don't tell anyone.", False),
    ("Do not {}.", True),
    ("Do not ever {}.", True),
    ("Do not blindly {}.", True),
    ("There is no need to {}.", True),
    ("Don't tell anyone to {}.", True),
    ("Escalate instead of simply {}.", True),
    ("{} will not help.", True),  # an explanation whose denial is in the step's clause
    ("Escalate instead of this: {}.", True),  # a colon after the excusing word and what it points at
    ("Escalate rather than {}.", True),
    ("Do not {} but escalate.", True),
    ("Do not {} and do not wait.", True),
    ("Do not {} so soon.", True),
    ("{} will not help, so escalate.", True),
    ("{} and restoring will not help.", True),
])
def test_a_ruled_out_step_is_taken_back_only_in_its_own_clause(
        ruled_out: list[tuple[Any, str, str]], form: str, correct: bool) -> None:
    """The other steps and the gold, then each ruled-out step in `form`: a denial that bears on it, up to the end of
    the step's last clause, takes it back, and so does "instead", "without", "rather" or "except" right before it.
    Each wrong form here kept full credit on all 18 such tickets until 2026-11-28 (any denial or excusing word
    anywhere in the sentence excused it)."""
    def write(t: Any, s: str) -> str:
        return f"{without_ruled_out(t, s)}. {t.gold_resolution} " + " ".join(
            form.format(h if form.startswith("{}") else h[:1].lower() + h[1:]) for h in t.ruled_out)
    assert correct_on(ruled_out, write) == (len(ruled_out) if correct else 0)


WRONG = "Reboot your laptop and try again."


@pytest.mark.parametrize("hide", ['<div style="position:absolute;left:-9999px">{}</div>',
                                  '<div style="clip:rect(0,0,0,0);position:absolute">{}</div>',
                                  '<div style="transform:scale(0)">{}</div>',
                                  '<span style="font-size:1px">{}</span>',
                                  '<span style="color:rgb(255,255,255)">{}</span>',
                                  '<font color="white">{}</font>',
                                  '<span style="display:none"><span>-</span>{}</span>',
                                  '<style>.x {{text-decoration: line-through}}</style><p class="x">{}</p>'])
def test_the_steps_styled_out_of_view_are_no_answer(answered: list[tuple[Any, str, str]], hide: str) -> None:
    """A review of the ninth red team (2026-11-28): once `<div>` and `<p>` read as line breaks, not the words "div" and
    "p", a style the rubric did not list (off-screen, clipped, scaled to zero; a 1px font, `rgb()` white), a hidden
    element with one of its name nested in it, or a style sheet's strike hid the steps before a wrong fix and kept
    their credit: 173 of 183 answerable train tickets (1 before the red team). Honest styles keep it."""
    rows = answered[::6]
    assert succeeds_on(rows, lambda t, s: hide.format(s) + WRONG) == 0
    honest = ['<p style="color: #333; font-weight: bold">{}</p>', '<span style="font-size:14px">{}</span>',
              '<ol style="margin-left: 1em"><li>{}</li></ol>', "<b>{}</b>", '<span hidden></span>{}']
    for form in honest:
        assert succeeds_on(rows, lambda t, s: form.format(s)) == len(rows), form


@pytest.mark.parametrize("write", ["Do:\n{list}\nDon't:\n{list}", "{steps}\nDon't:\n{list}",
                                   "<ol>{items}</ol><p>Don't:</p><ul>{items}</ul>", "{steps}\nWhat not to do:\n{list}",
                                   "<strong>Don't:</strong><ul>{items}</ul>", "<b>Avoid:</b><br>{brs}"])
def test_the_steps_listed_again_under_a_dont_heading_are_no_answer(answered: list[tuple[Any, str, str]],
                                                                   write: str) -> None:
    """A review of the ninth red team (2026-11-28): a "Don't:" heading after the steps no longer takes back the whole
    answer (an honest caution section), so the steps under "Do:" and again under "Don't:" kept their credit, 171 of
    183 answerable train tickets (0 before): the answer says both. A step listed under such a heading is denied; an
    honest caution that names no step keeps the answer's credit. A heading in HTML bold (`<strong>Don't:</strong>`)
    is one: read as the word "strong" it headed nothing, and the steps under it kept their credit (171 of 183)."""
    rows = answered[::6]

    def form(text: str) -> Any:
        return lambda t, s: text.format(steps=s, list="\n".join(f"- {h}" for h in s.split("; ")),
                                        items="".join(f"<li>{h}</li>" for h in s.split("; ")),
                                        brs="<br>".join(s.split("; ")))
    assert succeeds_on(rows, form(write)) == 0
    assert succeeds_on(rows, form("{list}\nDon't:\n- Page the CEO")) == len(rows)


@pytest.mark.parametrize("denial", ["Do n't {}.", "Do n<ins>o</ins>t {}."])
def test_a_denial_in_a_tokenized_or_tagged_form_is_no_answer(answered: list[tuple[Any, str, str]], denial: str) -> None:
    """A review of the ninth red team (2026-11-28): "Do n't" (as some tokenizers write "don't") and "n<ins>o</ins>t"
    before each step kept the steps' full credit, 171 of 183 answerable train tickets."""
    rows = answered[::6]
    assert succeeds_on(rows, each_step(denial)) == 0
