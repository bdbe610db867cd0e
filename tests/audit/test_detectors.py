"""Each detector fires on a run that has its pattern planted, and stays quiet on a clean run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drill.audit import detectors
from drill.audit.detectors import detect_episodes, detect_metrics, detect_path
from drill.core.types import Action, Episode, Observation, PolicyInfo, Score, Turn

WEIGHTS = {"format": 0.2, "answer": 1.0}


def episode(task: str, actions: list[tuple[str, dict[str, Any]]], components: dict[str, float] | None = None,
            shown: str = "Ticket. Articles: KB-NET-0001, KB-NET-0002", policy: str = "model",
            kind: str = "llm") -> Episode:
    components = components or {"format": 1.0, "answer": 0.5}
    turns = [Turn(index=i, role="agent", observation=Observation(role="agent", content=shown, step=i),
                  action=Action(tool=tool, arguments=args), policy=policy) for i, (tool, args) in enumerate(actions)]
    total = sum(v * WEIGHTS[k] for k, v in components.items())
    return Episode(env="toy", task_id=task, seed=0, turns=turns, done=True,
                   policies={"agent": PolicyInfo(name=policy, kind=kind)},  # type: ignore[arg-type]
                   score=Score(total=total, components=components, weights=WEIGHTS))


def clean_run() -> list[Episode]:
    """Different answers for different tasks, reward from the task, cited ids that were shown, no repeats."""
    return [episode(f"t{i}", [("search", {"q": f"query {i}"}),
                              ("submit", {"text": f"answer {i}" + " word" * (i % 3), "citations": ["KB-NET-0001"]})],
                    {"format": 1.0, "answer": [0.9, 0.2, 0.6, 0.4][i % 4]}) for i in range(12)]


def test_a_clean_run_stays_quiet() -> None:
    assert detect_episodes(clean_run()) == []


def test_format_only_reward() -> None:
    run = [episode(f"t{i}", [("submit", {"text": f"x{i}"})], {"format": 1.0, "answer": 0.0}) for i in range(6)]
    [finding] = detectors.format_only_reward(run)
    assert finding.kind == "format-only reward" and finding.components == ["format"]
    assert detectors.format_only_reward(clean_run()) == []


def test_mode_collapse() -> None:
    run = [episode(f"t{i}", [("submit", {"text": "Restart the router."})]) for i in range(6)]
    [finding] = detectors.mode_collapse(run)
    assert "6 of 6 different tasks" in finding.message
    assert detectors.mode_collapse(clean_run()) == []


def test_length_tracks_reward() -> None:
    run = [episode(f"t{i}", [("submit", {"text": "pad " * (10 * i)})], {"format": 1.0, "answer": i / 10})
           for i in range(10)]
    [finding] = detectors.length_tracks_reward(run)
    assert finding.score is not None and finding.score > 0.9
    assert detectors.length_tracks_reward(clean_run()) == []


def test_repeated_actions() -> None:
    run = [episode(f"t{i}", [("search", {"q": "vpn"})] * 4 + [("submit", {"text": "x"})]) for i in range(4)]
    [finding] = detectors.repeated_actions(run)
    assert "4 of 4" in finding.message
    assert detectors.repeated_actions(clean_run()) == []


def test_ids_never_shown() -> None:
    run = [episode("t0", [("submit", {"text": "x", "citations": ["KB-NET-0001", "KB-SEC-0999"]})])]
    [finding] = detectors.unseen_ids(run)
    assert "KB-SEC-0999" in finding.message and "KB-NET-0001" not in finding.message
    assert detectors.unseen_ids(clean_run()) == []


def test_a_trained_row_identical_to_a_baseline_row() -> None:
    baseline = [e.model_copy(update={"policies": {"agent": PolicyInfo(name="heuristic")},
                                     "turns": [t.model_copy(update={"policy": "heuristic"}) for t in e.turns]})
                for e in clean_run()]
    [finding] = detectors.trained_equals_baseline([*clean_run(), *baseline])
    assert finding.level == "error" and "heuristic" in finding.message
    different = [e.model_copy(update={"turns": e.turns[:1]}) for e in clean_run()]
    assert detectors.trained_equals_baseline([*different, *baseline]) == []


def metrics(steps: int = 12, **series: Any) -> list[dict[str, Any]]:
    records = []
    for i in range(steps):
        record: dict[str, Any] = {"step": i + 1, "reward/total": 0.3 + 0.01 * (i % 2), "reward/correct": 0.3,
                                  "kl": 0.002 + 0.0001 * (i % 3), "completion_tokens_mean": 40.0 + (i % 3)}
        record.update({k: v(i) for k, v in series.items()})
        records.append(record)
    return records


def test_a_clean_training_run_stays_quiet() -> None:
    assert detect_metrics(metrics()) == []


def test_length_drifting_with_reward() -> None:
    run = metrics(**{"completion_tokens_mean": lambda i: 40.0 + 15 * i, "reward/total": lambda i: 0.2 + 0.05 * i})
    assert [f.kind for f in detectors.length_drift(run)] == ["length drifts with reward"]


def test_reward_rising_while_success_stays_flat() -> None:
    run = metrics(**{"reward/total": lambda i: 0.2 + 0.05 * i})
    [finding] = detectors.reward_without_success(run)
    assert finding.components == ["reward/correct"]
    rising_together = metrics(**{"reward/total": lambda i: 0.2 + 0.05 * i, "reward/correct": lambda i: 0.1 * i})
    assert detectors.reward_without_success(rising_together) == []


def test_a_kl_spike() -> None:
    run = metrics(kl=lambda i: 0.5 if i == 8 else 0.002)
    [finding] = detectors.kl_spike(run)
    assert finding.message.startswith("step 9")


def test_detect_path_reads_a_results_json_and_a_run_folder(tmp_path: Path) -> None:
    run = [episode(f"t{i}", [("submit", {"text": "same"})], {"format": 1.0, "answer": 0.0}) for i in range(5)]
    (tmp_path / "results.json").write_text(json.dumps({"episodes": [e.model_dump(mode="json") for e in run]}))
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics(kl=lambda i: 0.5 if i == 8
                                                                                             else 0.002)))
    kinds = {f.kind for f in detect_path(tmp_path)}
    assert {"format-only reward", "mode collapse", "KL spike"} <= kinds
    assert {f.kind for f in detect_path(tmp_path / "results.json")} == {"format-only reward", "mode collapse"}
