"""Coderepair: tasks and splits, the agent's view, invalid actions, determinism, the rubric and the baselines."""

from __future__ import annotations

import ast
import json

import pytest

from drill.core import Action, run_episodes
from drill.envs.coderepair import (
    SPEC,
    CodeRepairEnv,
    HeuristicPolicy,
    OraclePolicy,
    RandomPolicy,
    rubric,
)
from drill.envs.coderepair import sandbox
from drill.envs.coderepair.baselines import candidates
from drill.envs.coderepair.mutations import apply_all, mutations
from drill.envs.coderepair.problems import VISIBLE_SHARE, _answer, _without_message, problem, problems
from drill.envs.coderepair.tasks import all_tasks

from .test_coderepair_gallery import play


def test_splits_are_by_problem_and_both_tiers_are_there() -> None:
    tasks = all_tasks()
    train = {t.problem_id for t in tasks if t.split == "train"}
    test = {t.problem_id for t in tasks if t.split == "test"}
    assert train and test and not train & test
    assert {t.tier for t in tasks if t.split == "test"} == {"single", "double"}
    assert all(len(t.kinds) == (1 if t.tier == "single" else 2) for t in tasks)
    assert all(t.buggy != t.canonical and t.visible_failed >= 1 for t in tasks)
    assert len(CodeRepairEnv().tasks("test")) == len(test)  # one variant per problem by default
    assert len(CodeRepairEnv(per_problem=0).tasks("test")) == sum(t.split == "test" for t in tasks)


def test_hidden_tests_are_other_inputs_than_the_visible_ones() -> None:
    for p in problems():
        assert p.visible and p.hidden
        assert not {t.source for t in p.visible} & {t.source for t in p.hidden}


def test_mutations_are_deterministic_and_keep_the_file_parseable() -> None:
    p = problem("HumanEval/0")
    first = list(mutations(p.canonical, len(p.prompt), p.entry_point))
    assert first == list(mutations(p.canonical, len(p.prompt), p.entry_point))
    assert {"comparison", "arithmetic", "wrong variable", "dropped statement"} <= {m.kind for m in first}
    for m in first:
        compile(m.apply(p.canonical), "solution.py", "exec")


def test_the_heuristic_search_space_holds_the_inverse_of_every_invertible_single_bug() -> None:
    invertible = {"comparison", "arithmetic", "off-by-one", "boolean", "swapped arguments", "swapped branches",
                  "wrong variable"}
    checked = 0
    for task in all_tasks():
        if task.tier == "single" and task.kinds[0] in invertible:
            fixes = {c.apply(task.buggy) for c in candidates(task.buggy, task.entry_point)}
            assert task.canonical in fixes, task.id
            checked += 1
    assert checked > 150


def test_the_task_statement_is_the_docstring_and_the_failing_report_and_never_the_answer() -> None:
    env = CodeRepairEnv()
    task = env.task("humaneval-3-a")
    first = env.reset(task, 0)
    assert "below_zero" in first.content and "detect if at any point the balance" in first.content
    assert "FAILED test_2" in first.content and "returned True" in first.content
    assert "balance += op" not in first.content
    episodes = run_episodes(lambda: CodeRepairEnv(), [(task, 0)], HeuristicPolicy(), rubric())
    hidden = [t.source for t in problem(task.problem_id).hidden]
    for turn in episodes[0].turns:
        assert not any(source in turn.observation.content for source in hidden)


def test_tools_and_invalid_actions() -> None:
    env = CodeRepairEnv(max_turns=6)
    task = env.task("humaneval-3-a")
    _, seen = play(env, task, [
        Action.call("list_files"),
        Action.call("read_file", path="../etc/passwd"),
        Action.call("replace_lines", path="solution.py", start=99, end=120, text="x"),
        Action.call("read_file", path="solution.py", start=15, end=16),
        Action.call("run_tests"),
        Action.call("run_tests"),
    ])
    assert seen[0].startswith("solution.py  (20 lines)")
    assert "there is no file '../etc/passwd'" in seen[1] and "do not fit solution.py" in seen[2]
    assert seen[3] == "  15|     for op in operations:\n  16|         balance -= op"
    assert "turn limit (6) is reached" in seen[5]
    episode, _ = play(CodeRepairEnv(max_turns=6), task, [Action.call("read_file", path="nope")] * 6)
    assert episode.count("invalid_action") == 6 and episode.count("out_of_turns") == 1
    assert episode.score is not None and episode.score.components["hidden_passed"] == 0.0


def test_same_actions_give_the_same_episode_byte_for_byte() -> None:
    task = CodeRepairEnv().task("humaneval-3-a")
    actions = [Action.call("replace_lines", path="solution.py", start=16, end=16, text="        balance += op[0]"),
               Action.call("run_tests"),
               Action.call("replace_lines", path="solution.py", start=16, end=16,
                           text="        balance += op\n        print(object())"),
               Action.call("run_tests"),
               Action.call("replace_lines", path="solution.py", start=16, end=16, text="        while True: pass"),
               Action.call("run_tests"), Action.call("submit")]
    one, seen = play(CodeRepairEnv(call_seconds=0.3), task, actions)
    two, _ = play(CodeRepairEnv(call_seconds=0.3), task, actions)
    assert "raised TypeError: 'int' object is not subscriptable" in seen[1]
    assert 'File "solution.py", line 16, in below_zero' in seen[1] and "/tmp" not in seen[1]
    assert "timeout" in seen[5]
    assert json.dumps(one.model_dump(mode="json")) == json.dumps(two.model_dump(mode="json"))


def test_the_oracle_solves_every_test_task() -> None:
    env = CodeRepairEnv(per_problem=0)
    tasks = env.tasks("test")
    episodes = run_episodes(lambda: CodeRepairEnv(per_problem=0), [(t, 0) for t in tasks], OraclePolicy(), rubric())
    assert all(e.score and e.score.components["all_passed"] == 1.0 and len(e.turns) == 2 for e in episodes)


def test_random_is_below_the_heuristic_which_is_below_the_oracle() -> None:
    tasks = CodeRepairEnv().tasks("test")[:6]
    jobs = [(t, 0) for t in tasks]

    def mean(policy: object) -> float:
        episodes = run_episodes(lambda: CodeRepairEnv(), jobs, policy, rubric())  # type: ignore[arg-type]
        return sum(e.score.total for e in episodes if e.score) / len(episodes)

    random_, heuristic, oracle = mean(RandomPolicy()), mean(HeuristicPolicy()), mean(OraclePolicy())
    assert random_ < heuristic < oracle
    assert oracle == pytest.approx(1.7 - 2 * 0.005)


def test_submitting_at_once_or_twice_cannot_beat_the_oracle() -> None:
    task = CodeRepairEnv().task("humaneval-3-a")
    at_once, _ = play(CodeRepairEnv(), task, [Action.call("submit")])
    fixed, _ = play(CodeRepairEnv(), task, [OraclePolicy.__dict__["act"](OraclePolicy(), [_Input(task)])[0],
                                            Action.call("submit")])
    assert at_once.score and fixed.score and at_once.score.total < fixed.score.total
    assert fixed.score.total == pytest.approx(1.69)
    assert SPEC.rubric_for({}).weights == rubric().weights


class _Input:
    def __init__(self, task: object) -> None:
        self.task, self.history = task, []


def test_a_bug_no_hidden_test_sees_is_not_solved_by_submitting_it() -> None:
    """humaneval-112-a breaks three of its visible tests and none of its hidden ones (like 14 other variants): the
    buggy file submitted at once was "solved" and scored 1.5 or more, above the heuristic's 1.49 on such variants
    (it found no fix on 12 of them and submitted the file back, "solved" too). A real fix keeps the bonus."""
    task = CodeRepairEnv().task("humaneval-112-a")
    shown = len(task.problem.visible)
    assert task.hidden_failed == 0 and task.visible_failed == 3
    at_once, _ = play(CodeRepairEnv(), task, [Action.call("submit")])
    oracle_edit = OraclePolicy().act([_Input(task)])[0]  # type: ignore[list-item]
    fixed, _ = play(CodeRepairEnv(), task, [oracle_edit, Action.call("submit")])
    assert at_once.score and at_once.score.components["hidden_passed"] == 1.0
    assert not SPEC.success(at_once, task) and at_once.score.components["all_passed"] == 0.0
    assert at_once.score.total == pytest.approx(1.0 + 0.2 * (shown - 3) / shown - 0.005)
    assert fixed.score and SPEC.success(fixed, task) and fixed.score.total == pytest.approx(1.69)


def test_the_buggy_file_is_the_canonical_one_with_the_planted_edits() -> None:
    task = CodeRepairEnv().task("humaneval-3-a")
    assert apply_all(task.canonical, []) == task.canonical
    assert task.buggy.replace("balance -= op", "balance += op") == task.canonical


def test_reports_list_set_items_in_a_stable_order() -> None:
    from drill.envs.coderepair.sandbox import stable_repr

    assert stable_repr({"b", "a", "c"}) == "{'a', 'b', 'c'}" and stable_repr(set()) == "set()"
    assert stable_repr((1,)) == "(1,)" and stable_repr({"k": [frozenset({2, 1})]}) == "{'k': [frozenset({1, 2})]}"
    task = CodeRepairEnv().task("humaneval-3-a")
    body = "    return {'pear', 'apple', 'fig', 'kiwi'}"
    _, seen = play(CodeRepairEnv(), task, [Action.call("replace_lines", path="solution.py", start=15, end=20,
                                                       text=body), Action.call("run_tests")])
    assert "returned {'apple', 'fig', 'kiwi', 'pear'}" in seen[1], seen[1]


def test_no_hidden_test_repeats_a_visible_one_or_falls_to_one_constant() -> None:
    """A table of the visible tests' answers must earn no hidden test, and a constant beside it must not pass them
    all: HumanEval/111 and 144 repeated a visible assert under another message (one hidden test each), and the hidden
    tests of HumanEval/30, 54, 56, 61 and 134 all expected one answer (`[]`, False) that the visible ones did not,
    so `return False` (or `[]`) and a table solved every variant of them."""
    used = {t.problem_id for t in all_tasks()}
    asks = lambda test: _without_message(ast.parse(test.code).body[0].body[-1])  # type: ignore[attr-defined]
    repeated, constant = [], []
    for p in problems():
        asked = {asks(t) for t in p.visible}
        repeated += [f"{p.id} {t.name}" for t in p.hidden if asks(t) in asked]
        for value in (True, False, 0, "", [], None):
            if p.id in used and all(sandbox._judge(t, p.namespace(), lambda *a: value, t.name, []).passed
                                    for t in p.hidden):
                constant.append(f"{p.id} {value!r}")
    assert not repeated, repeated
    assert not constant, constant


def test_a_moved_split_keeps_its_size_and_both_answers_on_the_visible_side() -> None:
    """A reviewer after the ninth red team: ending the visible tests before the last one that a constant hidden side
    did not expect left HumanEval/54, 56 and 61 with only True on the visible side (any bug that answers True passed
    every visible test, and the build found one mutant of 54 where it finds three) and one visible test fewer on each
    of the five problems, and the constant with its table still scored above the heuristic there. The split now
    trades one visible test for one hidden one: every problem keeps its 40% visible, and a visible side whose first
    40% held two answers still holds two."""
    for p in problems():
        tests = [*p.visible, *p.hidden]
        count = max(1, round(len(tests) * VISIBLE_SHARE))
        assert len(p.visible) == count, p.id
        prefix = {_answer(t) for t in tests[:count]} - {None}
        if len(prefix) > 1:
            assert len({_answer(t) for t in p.visible} - {None}) > 1, p.id
        assert sorted(t.name for t in tests) == sorted({t.name for t in tests}), p.id
