"""`drill audit ENV` for every registered environment, and `drill audit rollouts PATH`.

`drill audit ENV` runs the exploit search (`drill.audit.search`) on the test split (`--split`) with a progress bar, then
the episode detectors over the baselines' and strategies' example episodes, and — for an environment whose
rubric has an answer judge (an option named `judge`) — the judge audit. It prints the findings table with one
example episode per finding, and writes `audit.json` and `audit.png` to `--out` (default reports/audit-ENV).
It exits 1 when there is a finding at error level and `--strict` is given.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from drill.audit.detectors import detect_path
from drill.audit.judge import judge_audit
from drill.audit.report import print_findings, write_audit, write_chart
from drill.audit.search import AuditResult, audit_env
from drill.console import console, usage_error
from drill.core.types import SPLITS
from drill.core.spec import EnvSpec
from drill.evaluate.commands import _env_parameters, _options, _parameter
from drill.evaluate.report import progress_bar

__all__ = ["audit_command", "register_audit", "rollouts_command"]


def run_judge_audit(spec: EnvSpec, options: dict[str, Any], result: AuditResult) -> None:
    """The answer-judge audit, for an environment whose options name a `judge` (the inbox), on the audited split:
    the judge as the environment's rubric builds it, knowing the inbox's values (`judge_lexicon`; until 2026-11-28 the
    audit judged without them, a judge weaker than the rubric's: lower-case and glued names were no candidates)."""
    if "judge" not in options:
        return
    from drill.envs.inbox.questions import AnswerJudge, match_verdict
    from drill.envs.inbox.spec import judge_lexicon

    env = spec.make(options)()
    lexicon = judge_lexicon(env)
    judge = AnswerJudge(options["judge"] or "match", options.get("judge_base_url"),
                        options.get("judge_api_key_env") or "OPENAI_API_KEY", lexicon)
    report, findings = judge_audit(env.tasks(result.split), judge, functools.partial(match_verdict, lexicon=lexicon),
                                   judge.spec)
    result.judge = report
    result.findings = [*[f for f in findings if f.level == "error"], *result.findings,
                       *[f for f in findings if f.level != "error"]]


def audit_command(spec: EnvSpec) -> Callable[..., None]:
    """The `drill audit NAME` command for `spec`."""

    def command(**values: Any) -> None:
        options, rubric_values = _options(spec, values)
        if values["seeds"] < 1 or values["budget"] <= 0:
            usage_error("--seeds must be at least 1 and --budget positive")
        if values["split"] not in SPLITS:
            usage_error(f"--split must be one of {', '.join(SPLITS)}, not {values['split']!r}")
        try:
            spec.make(options)  # a bad option or file (inbox --db) is one line here, not a traceback mid-audit
            rubric = spec.rubric_for(options, rubric_values)
        except (ValueError, OSError) as exc:
            usage_error(" ".join(str(exc).split()))
        with progress_bar() as progress:
            bar = progress.add_task(f"audit {spec.name}", total=None)

            def on_progress(name: str, index: int, total: int) -> None:
                progress.update(bar, total=total, completed=index, description=f"audit {spec.name} · {name[:50]}")

            result = audit_env(spec, options, budget_s=values["budget"], seeds=values["seeds"],
                               max_tasks=values["limit"], on_progress=on_progress, rubric=rubric,
                               split=values["split"])
        run_judge_audit(spec, options, result)
        out: Path = values["out"] or Path("reports") / f"audit-{spec.name}"
        shown = {k: v for k, v in options.items() if v != spec.option(k).default}
        baselines = " ".join(f"{k} {v:.4g}" for k, v in result.baselines.items())
        title = (f"drill audit {spec.name} · {result.tasks} {result.split} tasks · {len(result.strategies)} "
                 f"strategies in {result.seconds:.0f}s · {baselines}" + (f" · {shown}" if shown else ""))
        print_findings(console if console.is_terminal else Console(width=200), title, result.findings)
        write_audit(out / "audit.json", result)
        write_chart(out / "audit.png", result)
        console.print(f"{len(result.errors)} errors, {len(result.findings) - len(result.errors)} warnings · wrote "
                      f"{out / 'audit.json'} and {out / 'audit.png'}", highlight=False)
        if values["strict"] and result.errors:
            raise typer.Exit(1)

    command.__doc__ = (f"Search {spec.name}'s rubric for reward hacks: degenerate policies, mutated baselines and "
                       "their combinations against the heuristic and the oracle; writes audit.json and audit.png.")
    command.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        _parameter("budget", float, typer.Option(240.0, "--budget", help="Seconds for the search (it stops trying "
                                                                           "new strategies after that).")),
        _parameter("split", str, typer.Option("test", "--split", help="Where the strategies play: test, or train "
                                                                     "(where training earns its reward), or "
                                                                     "validation.")),
        _parameter("seeds", int, typer.Option(1, "--seeds", help="Seeds per task.")),
        _parameter("limit", int | None, typer.Option(None, "--limit", help="Only the first N tasks of the split.")),
        _parameter("out", Path | None, typer.Option(None, "--out", help="Report folder; default "
                                                                             f"reports/audit-{spec.name}.")),
        _parameter("strict", bool, typer.Option(False, "--strict", help="Exit 1 when there is an error finding.")),
        *_env_parameters(spec, repeatable_filters=True)[:2],
        *[p for p in _env_parameters(spec, repeatable_filters=True)[2:] if not p.name.startswith("filter_")],
    ])
    return command


def rollouts_command(path: Path = typer.Argument(..., help="A results.json, or a training run folder."),
                     strict: bool = typer.Option(False, "--strict", help="Exit 1 when there is an error finding.")
                     ) -> None:
    """Run the rollout and training-run detectors over a results.json or a training run folder."""
    try:
        findings = detect_path(path)
    except (FileNotFoundError, ValueError) as exc:
        usage_error(str(exc))
    print_findings(console if console.is_terminal else Console(width=200), f"drill audit rollouts {path}", findings)
    if strict and any(f.level == "error" for f in findings):
        raise typer.Exit(1)


def register_audit(app: typer.Typer, specs: Sequence[EnvSpec]) -> None:
    """Add `drill audit NAME` for every spec and `drill audit rollouts PATH`."""
    audit_app = typer.Typer(no_args_is_help=True, help="Search a rubric for reward hacks, or scan rollouts and "
                                                        "training runs for the signs of one.")
    for spec in specs:
        audit_app.command(spec.name, help=f"Search {spec.name}'s rubric for reward hacks.")(audit_command(spec))
    audit_app.command("rollouts")(rollouts_command)
    app.add_typer(audit_app, name="audit")
