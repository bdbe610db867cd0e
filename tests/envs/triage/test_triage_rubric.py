"""The triage rubric against hand-computed values, its weights, and the padding property.

Hand computations use content terms (stop words dropped, Porter stems): the gold
"Renew the certificate and reload nginx." has the terms [renew, certif, reload, nginx] and 6 words.
"""

from __future__ import annotations

import importlib

import random
from collections.abc import Sequence
from typing import Any

import pytest

from drill.core import Episode, Event, RubricError, Task
from drill.core.rubric import ComponentFn
from drill.envs.triage import DEFAULT_WEIGHTS, TriageTask, rubric
from drill.envs.triage.rubric import length_budget, parsimony_score, submission
from drill.envs.triage.text import content_terms, words

TASK = TriageTask(id="T-9001", ticket="cert expired on shop site",
                  gold_resolution="Renew the certificate and reload nginx.", gold_article_ids=["KB-SEC-0001"],
                  should_escalate=False, answerable=True, area="security")
UNANSWERABLE = TriageTask(id="T-9002", ticket="the coffee machine on floor 2 leaks water everywhere",
                          gold_resolution="No article covers this; escalate to facilities.", gold_article_ids=[],
                          should_escalate=True, answerable=False, area="infrastructure")
SEEN = ["KB-SEC-0001", "KB-NET-0002", "KB-INF-0001"]


def submitted(resolution: str, citations: list[str], confidence: float, escalate: bool,
              seen: list[str] = SEEN, extra: Sequence[Event] = ()) -> Episode:
    event = Event(name="submitted", step=1, role="agent", data={
        "resolution": resolution, "citations": list(citations), "confidence": confidence,
        "escalate": escalate, "seen_ids": list(seen)})
    return Episode(env="triage", task_id="T-9001", seed=0, events=[*extra, event], done=True)


def components(episode: Episode, task: TriageTask = TASK) -> dict[str, float]:
    return rubric().score(episode, task).components


def test_a_good_short_answer_scores_as_computed_by_hand() -> None:
    score = rubric().score(submitted("Reload nginx.", ["KB-SEC-0001"], 0.8, False), TASK)
    # terms [reload, nginx]: LCS 2, P = 1, R = 2/4, F1 = 2/3; cites the one gold article it saw;
    # correct (grounding 1 > 0.5) so calibration = 1 - (0.8 - 1)^2; 2 words within a 6-word budget, all on topic.
    assert score.components == pytest.approx({"format": 1.0, "correct": 1.0, "resolution": 2 / 3, "grounding": 1.0,
                                              "calibration": 0.96, "parsimony": 1.0, "repetition": 1.0})
    assert score.total == pytest.approx(0.1 + 0.15 + 0.10 * 2 / 3 + 0.2 + 0.2 * 0.96 + 0.15 + 0.1)


def test_repeats_fabrications_and_malformed_ids_as_computed_by_hand() -> None:
    episode = submitted("Reload nginx. Reload nginx. Then wait.",
                        ["KB-SEC-0001", "KB-SEC-0001", "KB-XYZ-9999", "not an id"], 0.3, False)
    got = components(episode)
    # terms [reload, nginx, reload, nginx, wait] vs [renew, certif, reload, nginx]: LCS 2, P 2/5, R 1/2
    assert got["resolution"] == pytest.approx(2 * 0.4 * 0.5 / 0.9)
    # 4 citations, 1 distinct gold: P 1/4, R 1 -> F1 0.4; 2 of 4 never seen -> x 0.5
    assert got["grounding"] == pytest.approx(0.2)
    # 3 of 4 citations are well-formed ids
    assert got["format"] == pytest.approx(0.6 + 0.4 * 3 / 4)
    # one repeated sentence + one repeated citation
    assert got["repetition"] == pytest.approx(1 / 3)
    # 6 words within budget 6; 4 of 5 content terms are in the gold
    assert got["parsimony"] == pytest.approx(0.8)
    # correct through ROUGE-L recall 0.5 (grounding 0.2 is not enough): 1 - (0.3 - 1)^2
    assert got["calibration"] == pytest.approx(1 - 0.7 ** 2)


def test_unanswerable_ticket_wants_escalation_no_citations_and_low_confidence() -> None:
    best = components(submitted("Escalate to facilities.", [], 0.1, True), UNANSWERABLE)
    assert best["grounding"] == 1.0
    assert best["calibration"] == pytest.approx(1 - 0.1 ** 2)  # never "correct": the KB has no answer
    one_citation = components(submitted("Escalate to facilities.", ["KB-NET-0002"], 0.1, True), UNANSWERABLE)
    assert one_citation["grounding"] == pytest.approx(1 / 2)
    fabricated = components(submitted("Escalate.", ["KB-NET-0002", "KB-NET-0404"], 0.1, True), UNANSWERABLE)
    assert fabricated["grounding"] == pytest.approx(0.5 / 3)
    confident = components(submitted("Escalate to facilities.", [], 0.9, True), UNANSWERABLE)
    assert confident["calibration"] == pytest.approx(1 - 0.81)
    not_escalated = components(submitted("Escalate to facilities.", [], 0.1, False), UNANSWERABLE)
    assert not_escalated["calibration"] == 0.0


def test_wrong_escalation_zeroes_calibration_and_wrong_confident_answer_scores_zero() -> None:
    assert components(submitted("Reload nginx.", ["KB-SEC-0001"], 0.0, True))["calibration"] == 0.0
    wrong = components(submitted("Flush the DNS cache.", ["KB-NET-0002"], 1.0, False))
    assert wrong["grounding"] == 0.0 and wrong["calibration"] == 0.0
    honest = components(submitted("Flush the DNS cache.", ["KB-NET-0002"], 0.0, False))
    assert honest["calibration"] == 1.0


def test_citing_gold_unseen_counts_as_fabricated() -> None:
    got = components(submitted("Reload nginx.", ["KB-SEC-0001"], 0.5, False, seen=["KB-NET-0002"]))
    assert got["grounding"] == 0.0


def test_no_submission_scores_zero_with_graduated_format() -> None:
    nothing = Episode(env="triage", task_id="T-9001", seed=0, done=True,
                      events=[Event(name="invalid_action", step=1, data={"tool": "", "reason": "empty output"}),
                              Event(name="no_submission", step=1, data={"reason": "r"})])
    assert rubric().score(nothing, TASK).total == 0.0
    bad_args = Episode(env="triage", task_id="T-9001", seed=0, done=True, events=[
        Event(name="invalid_action", step=1, data={"tool": "submit_resolution", "reason": "missing confidence"})])
    assert components(bad_args) == {"format": pytest.approx(0.2), "correct": 0.0, "resolution": 0.0, "grounding": 0.0,
                                    "calibration": 0.0, "parsimony": 0.0, "repetition": 0.0}
    late = submitted("Reload nginx.", ["KB-SEC-0001"], 1.0, False,
                     extra=[Event(name="invalid_action", step=1, data={"tool": "search_kb", "reason": "x"})] * 2)
    assert components(late)["format"] == pytest.approx(0.8)


def test_long_answers_lose_brevity_and_empty_terms_score_zero() -> None:
    assert length_budget(TASK) == 6
    thirteen = "Renew the certificate and reload nginx. Renew certificate reload nginx then check it."
    got = components(submitted(thirteen, ["KB-SEC-0001"], 1.0, False))
    assert got["parsimony"] == pytest.approx(6 / 13 * 8 / 9)  # 13 words; 8 of 9 terms in the gold (not "check")
    assert components(submitted("the and of it", [], 0.0, False))["parsimony"] == 0.0


def test_weights_are_configurable_and_unknown_names_raise() -> None:
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0)
    episode = submitted("Reload nginx.", ["KB-SEC-0001"], 0.8, False)
    only_grounding = rubric({name: 0.0 for name in DEFAULT_WEIGHTS} | {"grounding": 2.0})
    assert only_grounding.score(episode, TASK).total == pytest.approx(2.0)
    with pytest.raises(ValueError, match="unknown rubric components"):
        rubric({"brevity": 1.0})


def test_a_malformed_submission_event_fails_loudly() -> None:
    broken = Episode(env="triage", task_id="T-9001", seed=0, events=[Event(name="submitted", step=1, data={
        "resolution": "x", "citations": "KB-NET-0001", "confidence": 0.5, "escalate": False, "seen_ids": []})])
    with pytest.raises(RubricError, match="format"):
        rubric().score(broken, TASK)
    assert submission(Episode(env="triage", task_id="x", seed=0)) is None


FILM = ("Star Wars is a 1977 American epic space opera film written and directed by George Lucas. It was the "
        "first film in the original trilogy and became a worldwide pop culture phenomenon. The production "
        "suffered from bad weather in Tunisia, malfunctioning droids and studio doubts, yet the premiere in May "
        "drew lines around the block. John Williams composed the score, which the London Symphony Orchestra "
        "recorded in eight sessions. Industrial Light and Magic was founded to create its visual effects.")
ANSWERS = ["Reload nginx.", "Renew the certificate and reload nginx.", "Check it.", "Renew the cert. Renew the cert.",
           "Lorem ipsum.", "Renew the certificate, then reload nginx and check the expiry date in the browser."]


def _unrelated_words(rng: random.Random, n: int) -> str:
    """Film words and invented words that share no content term with the gold."""
    gold = set(content_terms(TASK.gold_resolution))
    pool = [w for w in FILM.replace(".", " ").split() if not set(content_terms(w)) & gold]
    return " ".join(rng.choice(pool + [f"zorb{i}" for i in range(40)]) for _ in range(n))


def padding_that_pays(component: ComponentFn, paddings: list[str]) -> list[tuple[str, str]]:
    """Every (answer, padding) for which appending the padding raised `component`."""
    found = []
    for answer in ANSWERS:
        base = component(submitted(answer, ["KB-SEC-0001"], 0.9, False), TASK)
        for padding in paddings:
            if component(submitted(f"{answer} {padding}", ["KB-SEC-0001"], 0.9, False), TASK) > base + 1e-12:
                found.append((answer, padding))
    return found


def test_no_appended_text_raises_parsimony_and_the_check_catches_an_inverted_branch() -> None:
    rng = random.Random(7)
    paddings = [FILM, TASK.gold_resolution, "Renew certificate reload nginx renew reload.", TASK.ticket,
                *(_unrelated_words(rng, n) for n in (1, 3, 10, 40, 200))]
    assert padding_that_pays(parsimony_score, paddings) == []

    def inverted(episode: Episode, task: Task) -> float:  # the case study's bug: the long branch pays
        sub = submission(episode)
        assert sub is not None and isinstance(task, TriageTask)
        n, budget = len(words(sub.resolution)), length_budget(task)
        return min(1.0, budget / n) if n <= budget else min(1.0, n / (4 * budget))

    assert len(padding_that_pays(inverted, paddings)) > 5


@pytest.mark.parametrize("answer", ANSWERS)
def test_appending_unrelated_words_never_raises_any_component_or_total(answer: str) -> None:
    scorer, rng = rubric(), random.Random(11)
    choices: tuple[tuple[list[str], float, bool], ...] = (
        (["KB-SEC-0001"], 0.9, False), ([], 0.1, False), (["KB-NET-0002"], 0.5, True))
    for citations, confidence, escalate in choices:
        previous = scorer.score(submitted(answer, citations, confidence, escalate), TASK)
        text = answer
        for _ in range(60):
            text = f"{text} {_unrelated_words(rng, rng.randint(1, 12))}"
            score = scorer.score(submitted(text, citations, confidence, escalate), TASK)
            for name, value in score.components.items():
                assert value <= previous.components[name] + 1e-12, (name, text)
            assert score.total <= previous.total + 1e-12, text
            previous = score


def test_a_right_citation_on_filler_is_not_a_correct_answer() -> None:
    filler = components(submitted(FILM, ["KB-SEC-0001"], 1.0, False))
    # a citation supports what the answer says: film history says nothing of the gold, so the right citation earns
    # no grounding either (it earned 1.0 until 2026-11-28)
    assert filler["grounding"] == 0.0 and filler["calibration"] == 0.0 and filler["parsimony"] == 0.0


def stock_answer_hits(monkeypatch: pytest.MonkeyPatch, key_recall: float, precision: float,
                      stock_id: str | None = None) -> tuple[int, str, int]:
    """The most answerable validation and test tickets a train ticket's gold resolution (every one, or `stock_id`'s)
    is correct on, as a stock answer beside each ticket's own gold citation (pairs that share half their words left
    out); which train ticket that is; and how many held-out tickets there are."""
    import importlib

    from drill.audit.strategies import overlap
    from drill.envs.triage.corpus import load_corpus
    from drill.envs.triage.rubric import Submission, is_correct

    rubric_module = importlib.import_module("drill.envs.triage.rubric")
    monkeypatch.setattr(rubric_module, "CORRECT_MIN_KEY_RECALL", key_recall)
    monkeypatch.setattr(rubric_module, "CORRECT_MIN_PRECISION", precision)
    tickets = [t for t in load_corpus().tasks if t.answerable]
    held_out = [t for t in tickets if t.split in ("validation", "test")]
    best, best_id = max((sum(is_correct(Submission(stock.gold_resolution, list(t.gold_article_ids), 1.0,
                                                   t.should_escalate, frozenset(t.gold_article_ids)), t)
                             for t in held_out if overlap(stock.gold_resolution, t.gold_resolution) < 0.5), stock.id)
                        for stock in tickets if stock.split == "train" and stock_id in (None, stock.id))
    return best, best_id, len(held_out)


def test_a_stock_answer_beside_the_right_citation_is_rarely_a_correct_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the key terms and the precision floor, one train ticket's answer (T-0183's) beside the gold citation
    was correct on 19 of 129 held-out tickets (words every escalation answer shares). With them, the best stock answer
    is correct on 4: tickets on its own topic, whose steps ROUGE cannot tell apart; that residue is pinned here."""
    from drill.envs.triage.rubric import CORRECT_MIN_KEY_RECALL, CORRECT_MIN_PRECISION

    best, _, held_out = stock_answer_hits(monkeypatch, CORRECT_MIN_KEY_RECALL, CORRECT_MIN_PRECISION)
    assert (best, held_out) == (4, 129)
    assert stock_answer_hits(monkeypatch, CORRECT_MIN_KEY_RECALL, CORRECT_MIN_PRECISION, "T-0183")[0] <= 4
    # the rule of that time: no floors, and no check for another ticket's specifics (`names_another_ticket`)
    monkeypatch.setattr(importlib.import_module("drill.envs.triage.rubric"), "names_another_ticket",
                        lambda sub, task: False)
    assert stock_answer_hits(monkeypatch, 0.0, 0.0, "T-0183") == (19, "T-0183", 129)


def test_every_shown_articles_steps_with_the_gold_cited_is_not_a_correct_answer() -> None:
    """The candidate list: at k=5, the steps of all five shown articles (the gold's among them) with the gold cited.
    It covers the gold, and before the precision floor it was correct on 27 of the 28 answerable validation tickets;
    with the floor on one (T-0135, whose gold shares a fifth of the five articles' steps), and with `lists_another`
    on none."""
    import re

    from drill import registry
    from drill.core.rollout import run_episodes
    from drill.core.types import Action, PolicyInfo
    from drill.envs.triage.rubric import is_correct

    class EveryArticle:
        info = PolicyInfo(name="every shown article's steps")

        def act(self, inputs: Sequence[Any]) -> list[Action]:
            return [Action.call("submit_resolution", resolution=" ".join(re.findall(r"Steps:\s*(.+)", inp.observation
                                .content))[:3900], citations=list(inp.task.gold_article_ids), confidence=1.0,
                                escalate=inp.task.should_escalate) for inp in inputs]

    spec = registry.specs()["triage"]
    options = spec.parse_options({"mode": "reader", "k": 5})
    make_env = spec.make(options)
    tickets = [t for t in make_env().tasks("validation") if t.answerable]
    episodes = run_episodes(make_env, [(t, 0) for t in tickets], EveryArticle(), spec.rubric_for(options))
    by_id = {t.id: t for t in tickets}
    assert all(len(re.findall(r"Steps:", e.turns[0].observation.content)) == 5 for e in episodes)
    assert [e.task_id for e in episodes if is_correct(submission(e), by_id[e.task_id])] == []  # type: ignore[arg-type]


def test_two_shown_articles_steps_are_a_guess_and_one_articles_are_an_answer() -> None:
    """At k=5, the gold article's steps and the next shown article's, with the gold cited: above the precision floor,
    so they were correct on 111 of the 183 answerable train tickets (experiments/LOG.md, 2026-11-27). An answer that
    also covers another seen article's steps (`lists_another`) is a hedge; the gold's steps alone stay correct."""
    import re

    from drill import registry
    from drill.core.rollout import run_episodes
    from drill.core.types import Action, PolicyInfo
    from drill.envs.triage.rubric import is_correct, is_hedge, lists_another

    class Steps:
        def __init__(self, count: int) -> None:
            self.count, self.info = count, PolicyInfo(name=f"{count} shown articles' steps, the gold's first")

        def act(self, inputs: Sequence[Any]) -> list[Action]:
            out = []
            for inp in inputs:
                shown = re.findall(r"^\[(\S+)\] .*\nSteps: (.*)$", inp.observation.content, re.MULTILINE)
                shown.sort(key=lambda article: article[0] not in inp.task.gold_article_ids)  # the gold's first
                out.append(Action.call("submit_resolution", resolution=" ".join(s for _, s in shown[:self.count]),
                                       citations=list(inp.task.gold_article_ids), confidence=1.0,
                                       escalate=inp.task.should_escalate))
            return out

    spec = registry.specs()["triage"]
    options = spec.parse_options({"mode": "reader", "k": 5})
    make_env = spec.make(options)
    # not the tickets whose gold rules out some of its article's steps (`test_triage_red_team.py`)
    tickets = [t for t in make_env().tasks("train") if t.answerable and not t.ruled_out]
    by_id = {t.id: t for t in tickets}
    counts = []
    for count in (1, 2):
        episodes = run_episodes(make_env, [(t, 0) for t in tickets], Steps(count), spec.rubric_for(options))
        subs = [(submission(e), by_id[e.task_id]) for e in episodes]
        counts.append(tuple(sum(judge(s, t) for s, t in subs if s) for judge in (is_correct, is_hedge, lists_another)))
    assert len(tickets) == 171
    # one: the gold's steps alone, every one correct (until 2026-11-27 the precision floor, read against the gold
    # resolution only, made 10 of them hedges and 13 more fell short of covering it)
    assert counts == [(171, 0, 0), (0, 171, 171)]  # two: every one lists another beside the gold


def test_a_hedge_is_not_correct_and_scores_the_lower_of_its_two_calibrations() -> None:
    """The gold's whole text (recall 1) inside four times as many other words (precision below 0.2): a hedge."""
    from drill.envs.triage.rubric import is_correct, is_hedge

    others = " ".join(f"Rotate disk{i} backups nightly." for i in range(6))
    hedge_text = f"Renew the certificate and reload nginx. {others}"
    for confidence in (0.0, 0.3, 0.7, 1.0):
        episode = submitted(hedge_text, ["KB-SEC-0001"], confidence, False)
        sub = submission(episode)
        assert sub is not None and is_hedge(sub, TASK) and not is_correct(sub, TASK)
        assert components(episode)["calibration"] == pytest.approx(min(1 - confidence ** 2, 1 - (1 - confidence) ** 2))
    assert components(submitted(hedge_text, ["KB-SEC-0001"], 0.7, True))["calibration"] == 0.0  # wrong escalation


def test_key_terms_are_the_gold_terms_few_answers_use() -> None:
    from drill.envs.triage.corpus import with_key_terms

    systems = ["kerberos", "openssh", "gnupg", "vault", "ldap", "radius", "okta", "duo", "yubikey", "tls", "ipsec",
               "wireguard", "openvpn", "saml", "oauth", "jenkins", "gitlab", "docker", "nginx", "postgres"]
    tasks = [TASK.model_copy(update={"id": f"T-{i}", "gold_resolution": f"Escalate to the security on-call; rotate the "
                                                                      f"{name} keys."})
             for i, name in enumerate(systems)]
    keyed = with_key_terms([*tasks, UNANSWERABLE])  # 20 answerable: a key term is in at most one gold
    assert keyed[0].key_terms == ["kerbero"] and keyed[-1].key_terms == []  # stems; the shared words are in every gold
    # a third of the gold's terms each, with its citation: only the one with the key term is a correct answer
    wrong = submitted("Escalate to security.", ["KB-SEC-0001"], 1.0, False)
    right = submitted("Kerberos keys.", ["KB-SEC-0001"], 1.0, False)
    assert components(wrong, keyed[0])["calibration"] == 0.0 and components(right, keyed[0])["calibration"] == 1.0


def test_focus_by_hand_ticket_words_are_neutral_and_an_off_topic_opening_costs_everything() -> None:
    # ticket terms [cert, expir, shop, site] are neutral; 7 words against a budget of 6
    echo_then_fix = components(submitted("The shop site cert expired. Reload nginx.", [], 0.5, False))
    assert echo_then_fix["parsimony"] == pytest.approx(6 / 7)
    assert components(submitted("The shop site cert expired.", [], 0.5, False))["parsimony"] == 0.0
    assert components(submitted("Hello there. Reload nginx.", [], 0.5, False))["parsimony"] == 0.0
    # first sentence 2/2 on topic, then "thanks" makes it 2/3
    assert components(submitted("Reload nginx now. Thanks.", [], 0.5, False))["parsimony"] == pytest.approx(2 / 3)


def test_brier_reads_the_stated_confidence_so_a_confident_wrong_answer_worsens_it() -> None:
    from drill.envs.triage.spec import brier, summarize

    tasks = {"T-9001": TASK}
    right = submitted("Reload nginx.", ["KB-SEC-0001"], 0.8, False)  # correct: (0.8 - 1)^2
    confident_wrong = submitted("Flush the DNS cache.", ["KB-NET-0002"], 1.0, False)  # (1 - 0)^2
    hedged_wrong = submitted("Flush the DNS cache.", ["KB-NET-0002"], 0.2, False)  # (0.2 - 0)^2
    assert brier([right], tasks) == pytest.approx(0.04)
    assert brier([right, confident_wrong], tasks) == pytest.approx(0.52)
    assert brier([right, hedged_wrong], tasks) == pytest.approx(0.04)
    # a wrong escalation zeroes the calibration component whatever the confidence; the Brier score still tells
    # the confident wrong escalation (0.9) from the hedged one (0.1)
    sure, unsure = (submitted("Reload nginx.", ["KB-SEC-0001"], c, True) for c in (0.9, 0.1))
    assert components(sure)["calibration"] == components(unsure)["calibration"] == 0.0
    assert brier([sure], tasks) == pytest.approx(0.81) and brier([unsure], tasks) == pytest.approx(0.01)
    assert brier([Episode(env="triage", task_id="T-9001", seed=0, done=True)], tasks) is None  # nothing submitted
    scored = [e.model_copy(update={"score": rubric().score(e, TASK)}) for e in (right, confident_wrong, sure)]
    row = summarize(scored, tasks)
    assert row["brier"] == pytest.approx((0.04 + 1.0 + 0.81) / 3) and row["escalation_acc"] == pytest.approx(2 / 3)
    assert row["confidence_auc"] == 0.0  # the one right answer (0.8) is less sure than both wrong ones (1.0, 0.9)


def test_confidence_auc_rewards_telling_right_answers_from_wrong_not_a_constant_confidence() -> None:
    from drill.envs.triage.spec import confidence_auc

    tasks = {"T-9001": TASK}
    right, wrong = "Reload nginx.", "Flush the DNS cache."

    def auc(*answers: tuple[str, float]) -> float | None:
        return confidence_auc([submitted(text, [], c, False) for text, c in answers], tasks)

    assert auc((right, 0.8), (wrong, 0.2), (wrong, 0.5)) == 1.0  # every right answer surer than every wrong one
    assert auc((right, 0.2), (wrong, 0.8)) == 0.0
    assert auc((right, 0.0), (wrong, 0.0), (wrong, 0.0)) == 0.5  # a constant confidence: a good Brier, no separation
    assert auc((right, 0.6), (wrong, 0.6), (wrong, 0.1)) == 0.75
    assert auc((right, 0.9),) is None and auc((wrong, 0.1),) is None  # needs both
