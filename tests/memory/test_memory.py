"""The inference-time methods on a toy lock (tests/memory/lock_env.py): one of 27 press sequences opens each lock.

A trajectory store retrieves the right past episode and memory puts it in the prompt; a reflection is shown at
the next attempt and never holds the ground truth; LATS finds the one rewarding sequence; and all of it works
through `drill eval` flags, with an OpenAI-compatible stub as the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
import typer
from lock_env import SPEC, LockEnv, LockTask, Oracle, PressOne, code_of, rubric
from typer.testing import CliRunner

from drill.core import Generation, PolicyInfo, ToolSpec, run_episodes
from drill.evaluate.commands import eval_command
from drill.memory import (
    REFLECTION_WINDOW,
    LATSPolicy,
    Memory,
    MemoryPolicy,
    SearchSettings,
    SuccessRule,
    TrajectoryStore,
    play_attempts,
)
from drill.memory.reflexion import REFLECT_INSTRUCTIONS
from drill.models.base import Message, SamplingParams
from drill.models.policy import LLMPolicy
from drill.models.testing import StubOpenAIServer, text_reply

CALL = '<tool_call>\n{{"name": "press", "arguments": {{"button": {}}}}}\n</tool_call>'
EXAMPLE = "(Worked example"


def step_of(messages: Sequence[Message]) -> int:
    """Which press the current observation asks for (0, 1 or 2)."""
    left = re.search(r"(\d) presses left", messages[-1]["content"])
    return 3 - int(left.group(1)) if left else 0


def follow_examples(messages: Sequence[Message]) -> str:
    """A model that copies the first worked example's press at the same step, and otherwise presses 1."""
    starts = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"].startswith(EXAMPLE)]
    if not starts:
        return CALL.format(1)
    replies = [m["content"] for m in messages[starts[0]:] if m["role"] == "assistant"]
    return replies[step_of(messages)]


class ButtonModel:
    """A chat model for tests: in a batch of several prompts (a LATS expansion) row i presses i % 3 + 1; a single
    prompt follows its worked examples; a reflection request gets a numbered reflection."""

    model_id = "buttons"
    native_tools = False

    def __init__(self) -> None:
        self.calls: list[list[list[Message]]] = []
        self.reflections = 0

    def generate(self, conversations: Sequence[Sequence[Message]], tools: Sequence[ToolSpec] | None,
                 params: SamplingParams) -> list[Generation]:
        self.calls.append([list(c) for c in conversations])
        texts = []
        for row, conversation in enumerate(conversations):
            if conversation[0]["content"] == REFLECT_INSTRUCTIONS:
                self.reflections += 1
                texts.append(f"Reflection {self.reflections}: pressing 1 every time failed; try other buttons.")
            elif len(conversations) > 1:
                texts.append(CALL.format(row % 3 + 1))
            else:
                texts.append(follow_examples(conversation))
        return [Generation(text=t, prompt_token_ids=[1, 2], token_ids=[3], model=self.model_id) for t in texts]


def llm(model: ButtonModel | None = None) -> LLMPolicy:
    return LLMPolicy(model or ButtonModel(), PolicyInfo(name="llm", kind="llm", model="buttons"))


def success_rule() -> SuccessRule:
    return SuccessRule(LockEnv, rubric(), Oracle)


def filled_store(path: Path) -> TrajectoryStore:
    """Oracle and press-one episodes on the training locks, and oracle episodes on the test locks."""
    store = TrajectoryStore(path)
    env = LockEnv()
    for split, policy in (("train", Oracle()), ("train", PressOne()), ("test", Oracle())):
        tasks = env.tasks(split)
        episodes = run_episodes(LockEnv, [(t, 0) for t in tasks], policy, rubric())
        store.add(episodes, {t.id: t for t in tasks}, {}, success_rule(), policy.info.name)
    return store


def test_the_store_keeps_episodes_and_retrieves_the_right_past_success(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "memory.sqlite")
    rows = store.episodes(env="lock")
    assert len(rows) == 18 and {r.method for r in rows} == {"oracle", "heuristic"}
    red = next(r for r in rows if r.task_id == "train-red" and r.method == "oracle")
    assert red.success and red.components == {"opened": 1.0, "invalid": 0.0} and red.total == 1.0
    assert red.split == "train" and "red lock in the shed" in red.task_text and "code" not in red.task_text
    assert [a["arguments"]["button"] for a in red.actions] == list(code_of("red"))
    assert red.episode().score is not None and red.cost == {"model_calls": 0, "tokens": 0, "nodes": 0, "wall_s": 0.0}

    query = LockEnv().reset(LockEnv().task("test-red"), 0).content  # what the agent sees on the new task
    hits = store.similar("lock", {}, query, k=2)
    assert [h.task_id for h in hits][:1] == ["train-red"] and all(h.split == "train" and h.success for h in hits)
    assert "test-red" not in {h.task_id for h in store.similar("lock", {}, query, k=6)}  # the training split only
    assert store.similar("lock", {}, query, k=1, exclude_task="train-red")[0].task_id != "train-red"
    assert store.similar("lock", {"other": 1}, query, k=1) == []  # another env variant's episodes are not mixed in
    store.close()
    assert [h.task_id for h in TrajectoryStore(tmp_path / "memory.sqlite").similar("lock", {}, query, 1)] == [
        "train-red"]  # one file, read back by a new process


def test_memory_shows_the_retrieved_episode_as_worked_examples_and_it_opens_the_lock(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "memory.sqlite")
    task = LockEnv().task("test-red")
    model = ButtonModel()
    remembering = MemoryPolicy(llm(model), Memory(store, "lock", {}, k=1))
    episode = run_episodes(LockEnv, [(task, 0)], remembering, rubric())[0]
    assert episode.score is not None and episode.score.total == 1.0
    first = model.calls[0][0]
    assert first[1]["role"] == "user" and first[1]["content"].startswith(EXAMPLE)
    assert "red lock in the shed" in first[1]["content"]
    assert [m["content"] for m in first if m["role"] == "assistant"] == [CALL.format(b) for b in code_of("red")]
    assert first[-1]["content"].startswith("The red lock in the vault")
    plain = run_episodes(LockEnv, [(task, 0)], llm(), rubric())[0]
    assert plain.score is not None and plain.score.total == 0.0


def test_a_reflection_is_shown_at_the_next_attempt_and_never_holds_the_ground_truth() -> None:
    model = ButtonModel()
    policy = MemoryPolicy(llm(model))
    task = next(t for t in LockEnv().tasks("test") if t.code != (1, 1, 1))
    report = play_attempts(LockEnv, {"player": policy}, [(task, 0)], rubric(), success_rule(), attempts=5,
                           reflect=True)
    assert [a for a, _ in report.played] == [1, 2, 3, 4, 5] and report.success_by_attempt == [0.0] * 5
    requests = [c[0] for c in model.calls if c[0][0]["content"] == REFLECT_INSTRUCTIONS]
    assert len(requests) == 4  # after each failure but the last
    code = "-".join(map(str, task.code))
    failed = report.played[0][1]
    assert failed.events_named("lock_checked")[0].data["expected"] == code  # the world's log holds the code...
    for request in requests:
        text = json.dumps(request)
        assert code not in text and "expected" not in text and str(task.code) not in text  # ...the reflection not
        assert "opened = 0" in text and "[player did]" in text
    action_prompts = [c[0] for c in model.calls if c[0][0]["content"] != REFLECT_INSTRUCTIONS]
    assert "Reflection" not in action_prompts[0][0]["content"]  # attempt 1: nothing to reflect on yet
    fourth_attempt = action_prompts[9][0]["content"]  # three prompts per attempt
    assert "Reflection 1:" in fourth_attempt and "Reflection 3:" in fourth_attempt
    last = action_prompts[12][0]["content"]
    assert "Reflection 1:" not in last and all(f"Reflection {n}:" in last for n in (2, 3, 4))
    assert len(policy.reflections[(task.id, 0)]) == REFLECTION_WINDOW
    assert report.reflections[f"{task.id}:0"][0].startswith("Reflection 1")


def test_reflexion_stops_retrying_a_solved_task() -> None:
    tasks = LockEnv().tasks("test")[:3]
    report = play_attempts(LockEnv, {"player": Oracle()}, [(t, 0) for t in tasks], rubric(), success_rule(), 3,
                           reflect=False)
    assert report.success_by_attempt == [1.0, 1.0, 1.0] and len(report.played) == 3


def test_lats_finds_the_one_rewarding_sequence() -> None:
    task: LockTask = next(t for t in LockEnv().tasks("test") if t.code[0] != 1 and t.code != (1, 1, 1))
    plain = run_episodes(LockEnv, [(task, 0)], llm(), rubric())[0]
    assert plain.score is not None and plain.score.total == 0.0
    model = ButtonModel()
    search = LATSPolicy(llm(model), PressOne(), LockEnv, rubric(), SearchSettings(budget=39, k=3))
    episode = run_episodes(LockEnv, [(task, 0)], search, rubric())[0]
    assert episode.score is not None and episode.score.total == 1.0
    assert [t.action.arguments["button"] for t in episode.turns] == list(task.code)
    assert episode.policies["player"].name == "lats:llm"
    cost = search.costs[(task.id, 0)]
    assert 3 <= cost.nodes <= 39 and cost.model_calls == sum(len(c) for c in model.calls) and cost.tokens == \
        3 * cost.model_calls
    assert len(search.plans) == 1  # searched once, then played the plan for real


def test_lats_stops_at_the_first_success_and_respects_the_budget() -> None:
    task = next(t for t in LockEnv().tasks("test") if t.code[0] != 1)
    early = LATSPolicy(llm(), PressOne(), LockEnv, rubric(), SearchSettings(budget=39, k=3), solved=success_rule())
    run_episodes(LockEnv, [(task, 0)], early, rubric())
    small = LATSPolicy(llm(), PressOne(), LockEnv, rubric(), SearchSettings(budget=3, k=3))
    run_episodes(LockEnv, [(task, 0)], small, rubric())
    odd = LATSPolicy(llm(), PressOne(), LockEnv, rubric(), SearchSettings(budget=4, k=3))
    run_episodes(LockEnv, [(task, 0)], odd, rubric())
    assert early.costs[(task.id, 0)].nodes < 39 and small.costs[(task.id, 0)].nodes == 3
    assert odd.costs[(task.id, 0)].nodes == 4  # the second expansion is cut to the budget


# -- through `drill eval` ----------------------------------------------------------------------------------------


def stub_reply(request: dict) -> str:
    """The OpenAI stub's model: expansions (temperature > 0) press by seed; greedy calls follow their examples."""
    messages = request["messages"]
    if messages[0]["content"] == REFLECT_INSTRUCTIONS:
        return "Pressing 1 three times did not open it; try another first button."
    if request.get("temperature", 0) > 0:
        return CALL.format(request.get("seed", 0) % 3 + 1)
    return follow_examples(messages)


@pytest.fixture(scope="module")
def server() -> StubOpenAIServer:
    with StubOpenAIServer(text_reply(stub_reply)) as running:
        yield running  # type: ignore[misc]


def drill_eval(*args: str) -> dict:
    app = typer.Typer()
    app.command("lock")(eval_command(SPEC))
    app.command("other")(lambda: None)
    result = CliRunner().invoke(app, ["lock", *args])
    assert result.exit_code == 0, result.output
    out = Path(args[args.index("--out") + 1])
    return json.loads((out / "results.json").read_text())


def test_eval_flags_store_then_memory_reflexion_and_lats(tmp_path: Path, server: StubOpenAIServer) -> None:
    store = str(tmp_path / "memory.sqlite")
    model = ["--base-url", server.base_url, "--api-key-env", "PATH"]
    drill_eval("--split", "train", "--policy", "oracle", "--store", store, "--out", str(tmp_path / "a"))
    assert len(TrajectoryStore(store).episodes(split="train", success=True)) == 6

    plain = drill_eval("--policy", "openai:stub", *model, "--out", str(tmp_path / "b"))
    remembered = drill_eval("--policy", "openai:stub", *model, "--memory", store, "--memory-k", "1",
                            "--store", store, "--out", str(tmp_path / "c"))
    assert plain["summary"][0]["opened"] < 1.0 and remembered["summary"][0]["opened"] == 1.0
    methods = remembered["meta"]["methods"][0]
    assert methods["method"] == "openai:stub+memory" and methods["success"] == 1.0 and methods["model_calls"] == 3.0
    assert {r.method for r in TrajectoryStore(store).episodes(split="test")} == {"openai:stub+memory"}

    reflected = drill_eval("--policy", "heuristic", "--policy", "openai:stub", *model, "--attempts", "2", "--reflect",
                           "--out", str(tmp_path / "d"))
    assert [r["method"] for r in reflected["meta"]["methods"]] == ["heuristic", "openai:stub+reflect"]
    row = reflected["meta"]["methods"][1]
    assert "success@1" in row and "success@2" in row and row["success@1"] <= row["success@2"]
    assert all("try another" in notes[0] for notes in row["reflections"].values())

    searched = drill_eval("--policy", "lats:openai:stub", *model, "--lats-rollout", "heuristic", "--lats-budget",
                          "39", "--out", str(tmp_path / "e"))
    assert searched["summary"][0]["opened"] == 1.0 and searched["meta"]["methods"][0]["nodes"] > 0
    assert searched["summary"][0]["policy"] == "lats:openai:stub"
    server.requests.clear()
    drill_eval("--policy", "lats:openai:stub", *model, "--memory", store, "--lats-budget", "3",
               "--lats-rollout", "heuristic", "--out", str(tmp_path / "f"))
    expansions = [r for r in server.requests if r.get("temperature", 0) > 0]
    assert expansions and all(EXAMPLE in json.dumps(r["messages"]) for r in expansions)  # memory in the search too


def test_eval_flags_are_checked(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("lock")(eval_command(SPEC))
    app.command("other")(lambda: None)
    for args, message in ((["--reflect"], "--reflect needs --attempts 2"),
                          (["--memory", str(tmp_path / "none.sqlite")], "no trajectory store there"),
                          (["--policy", "lats:heuristic", "--lats-rollout", "nope"], "unknown --lats-rollout")):
        result = CliRunner().invoke(app, ["lock", *args, "--out", str(tmp_path)])
        assert result.exit_code == 2 and message in result.output, result.output
