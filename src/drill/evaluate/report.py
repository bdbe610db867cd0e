"""Report writing shared by every environment's evaluation: atomic JSON, rich tables, bar charts."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from drill.core.rollout import fewer_collections
from drill.core.types import Episode


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a report is for everyone who can read the folder
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_REPORT_EXCLUDE = {"turns": {"__all__": {"observation": {"tools", "instructions", "view"}}}}
"""A report keeps each turn's observation text but not its tool list and role brief, which repeat every turn, nor
an env's structured view (ChaosOps'), which holds the facts of the text."""


def save_figure(fig: Any, path: Path, **savefig: Any) -> None:
    """Write a matplotlib figure as `path` atomically (a reader never sees half a PNG) and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        fig.savefig(tmp, **({"dpi": 120} | savefig))
        os.replace(tmp, path)
    finally:
        plt.close(fig)

def write_results(path: Path, meta: Mapping[str, Any], summary: Sequence[Mapping[str, Any]],
                  episodes: Iterable[Episode]) -> None:
    """results.json: run metadata, the summary rows of the table, and every episode with its score (compact JSON:
    no indentation; observations without their repeated tool lists).

    The episodes are encoded by pydantic's serializer in one call (5x faster than dumping dicts with `json`).
    It refuses text it cannot write as UTF-8 (a lone surrogate in a model's generation); such a report is then
    written the slower way, with `json`, which escapes it (`\\ud800`): no text is lost either way."""
    records = list(episodes)
    head = json.dumps({"meta": dict(meta), "summary": [dict(row) for row in summary]}, separators=(",", ":"))
    with fewer_collections():  # many small records, all alive until written: no point tracing them again and again
        try:
            body = _EPISODES.dump_json(records, exclude={"__all__": _REPORT_EXCLUDE}).decode("utf-8")
        except PydanticSerializationError as exc:
            if "surrogates not allowed" not in str(exc):
                raise
            body = json.dumps([e.model_dump(mode="json", exclude=_REPORT_EXCLUDE) for e in records],
                              separators=(",", ":"))
    atomic_write_text(path, f'{head[:-1]},"episodes":{body}}}')


_EPISODES = TypeAdapter(list[Episode])


def progress_bar(disable: bool = False) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), transient=False, disable=disable)


def summary_table(title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str],
                  formats: Mapping[str, Callable[[Any], str]] | None = None) -> Table:
    formats = formats or {}
    table = Table(title=title, title_style="bold")
    for index, column in enumerate(columns):
        # the first column names the row (the policy): a short name is kept whole ("heuristic", not "heurist…") when
        # the table is too wide; a long one (an adapter's path) wraps as any cell does
        whole = max((len(str(row.get(column))) for row in rows), default=0) if index == 0 else 0
        short = 0 < whole <= 16
        table.add_column(column, justify="left" if isinstance(rows[0].get(column) if rows else "", str) else "right",
                         no_wrap=short, min_width=whole if short else None)
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            fmt = formats.get(column)
            if fmt is not None and value is not None:
                cells.append(fmt(value))
            elif isinstance(value, float):
                cells.append(f"{value:.2f}")
            else:
                cells.append("—" if value is None else str(value))
        table.add_row(*cells)
    return table


@contextmanager
def chart_process(enabled: bool = True) -> Iterator[ProcessPoolExecutor | None]:
    """A one-process pool, forked on entry, whose process imports matplotlib (0.3-0.4 s) while the block goes on
    (playing a scripted matrix); submit `grouped_bar_chart` to it. Linux only (fork there is cheap, and the child
    only imports and draws); None elsewhere, when not `enabled`, or where a process pool cannot be made: then the
    caller draws the same chart in its own process."""
    if not enabled or sys.platform != "linux":
        yield None
        return
    pool: ProcessPoolExecutor | None = None
    try:
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=_import_matplotlib)
        pool.submit(int)  # a pool starts its process on the first job: start it now
    except OSError:  # no process-shared semaphores or no fork here (some sandboxes): drawn in this process instead
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        pool = None
    try:
        yield pool
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _import_matplotlib() -> None:
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401  (imported for its side effect: the import is the work)


def grouped_bar_chart(path: Path, rows: Sequence[Mapping[str, Any]], group: str, series: str, value: str,
                      title: str, ylabel: str) -> None:
    """One group of bars per `group` value (e.g. tier), one bar per `series` value (e.g. policy). Drawn on a bare
    `Figure` (Agg canvas), without pyplot, whose import costs more than the drawing."""
    from matplotlib.figure import Figure

    groups = list(dict.fromkeys(r[group] for r in rows))
    names = list(dict.fromkeys(r[series] for r in rows))
    width = 0.8 / max(len(names), 1)
    fig = Figure(figsize=(max(6, 1.6 * len(groups) * max(1, len(names) / 2)), 4.2))
    ax = fig.add_subplot()
    for k, name in enumerate(names):
        heights = [next((r[value] for r in rows if r[group] == g and r[series] == name), 0.0) for g in groups]
        xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(groups))]
        bars = ax.bar(xs, heights, width, label=str(name))
        ax.bar_label(bars, fmt="%.0f" if max(abs(h) for h in heights or [0]) >= 10 else "%.2f", fontsize=7)
    ax.set_xticks(range(len(groups)), [str(g) for g in groups])
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
