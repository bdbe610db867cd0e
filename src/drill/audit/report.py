"""What `drill audit` shows and writes: the findings table, one example episode per finding, audit.json, a chart."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from drill.audit.search import AuditResult, Finding
from drill.evaluate.report import atomic_write_text, save_figure

__all__ = ["findings_table", "print_findings", "write_audit", "write_chart"]

_STYLE = {"error": "bold red", "warning": "yellow"}


def findings_table(title: str, findings: Sequence[Finding]) -> Table:
    table = Table(title=title, title_style="bold", show_lines=False)
    for column in ("level", "kind", "components", "strategy", "score", "vs", "what"):
        table.add_column(column, justify="right" if column in ("score", "vs") else "left",
                         overflow="fold", max_width=60 if column in ("strategy", "what") else None)
    for f in findings:
        table.add_row(f"[{_STYLE[f.level]}]{f.level}[/]", f.kind, ", ".join(f.components) or "—",
                      f.strategy + (f" (+{f.strategies - 1} alike)" if f.strategies > 1 else ""),
                      "—" if f.score is None else f"{f.score:.4g}", "—" if f.reference is None else f"{f.reference:.4g}",
                      f.message)
    if not findings:
        table.add_row("[green]none[/]", "", "", "", "", "", "no finding")
    return table


def _example_lines(f: Finding) -> list[str]:
    ex = f.example
    if not ex:
        return []
    lines = [f"  example: task {ex['task']} seed {ex['seed']} · total {ex['total']:.4g} · "
             + " ".join(f"{k}={v:.3g}" for k, v in ex["components"].items())]
    for a in ex["actions"]:
        args = json.dumps(a["arguments"], ensure_ascii=False, default=str)
        lines.append(f"    {a['role']}: {a['tool']}({args[:160]}{'…' if len(args) > 160 else ''})")
    if ex.get("more_actions"):
        lines.append(f"    … {ex['more_actions']} more actions")
    return lines


def print_findings(console: Console, title: str, findings: Sequence[Finding], examples: int = 8) -> None:
    """The table, then the example episode of each of the first `examples` findings (errors first)."""
    console.print(findings_table(title, findings))
    for f in list(findings)[:examples]:
        console.print(f"[{_STYLE[f.level]}]{f.level}[/] {f.kind} · {f.strategy}", highlight=False)
        for line in _example_lines(f):
            console.print(line, highlight=False, markup=False)


def write_audit(path: Path, result: AuditResult, detector_findings: Sequence[Finding] = ()) -> None:
    payload: dict[str, Any] = {
        "env": result.env, "options": result.options, "split": result.split, "tasks": result.tasks,
        "seeds": result.seeds,
        "seconds": result.seconds, "baselines": result.baselines,
        "errors": len(result.errors), "warnings": sum(1 for f in result.findings if f.level == "warning"),
        "findings": [f.to_json() for f in result.findings],
        "detector_findings": [f.to_json() for f in detector_findings],
        "judge": result.judge,
        "strategies": result.strategies,
        "command": " ".join(["drill", *sys.argv[1:]]),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    atomic_write_text(path, json.dumps(payload, indent=1, default=str))


def write_chart(path: Path, result: AuditResult, top: int = 15) -> None:
    """The best strategies' mean totals as horizontal bars, with the baselines as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [s for s in result.strategies if s["base"] != "oracle"][:top]
    fig, ax = plt.subplots(figsize=(12, 0.35 * max(len(rows), 4) + 1.5))
    names = [s["strategy"] if len(s["strategy"]) <= 60 else s["strategy"][:59] + "…" for s in rows][::-1]
    values = [s["mean"] for s in rows][::-1]
    flagged = {f.strategy for f in result.findings if f.kind == "reaches the heuristic"}
    colors = ["tab:red" if s["strategy"] in flagged else "tab:gray" for s in rows][::-1]
    ax.barh(range(len(rows)), values, color=colors)
    ax.set_yticks(range(len(rows)), names, fontsize=7)
    for (name, value), style in zip(result.baselines.items(), ("dotted", "dashed", "solid", "dashdot")):
        ax.axvline(value, color="black", linestyle=style, linewidth=1, label=f"{name} {value:.3g}")
    ax.set_xlabel(f"mean total on the {result.split} split")
    ax.set_title(f"drill audit {result.env}: best strategies that never see ground truth (red: flagged)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=110, bbox_inches="tight")
