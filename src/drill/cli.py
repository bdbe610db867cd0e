"""The `drill` command, built from the environment registry: `drill eval ENV`, `drill watch ENV` and
`drill train ENV` for every registered environment, plus each environment's own commands (`drill inbox ...`)."""

from __future__ import annotations

import typer

from drill import registry
from drill.audit.commands import register_audit
from drill.evaluate.commands import register

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Drill: train reliable LLM agents with reinforcement learning.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate policies on an environment; writes a report.")
watch_app = typer.Typer(no_args_is_help=True, help="Watch one episode turn by turn.")
app.add_typer(eval_app, name="eval")
app.add_typer(watch_app, name="watch")
try:
    register(eval_app, watch_app, app, list(registry.specs().values()))
    register_audit(app, list(registry.specs().values()))
except registry.RegistryError as _exc:  # a broken third-party registration: one line naming it, exit 2
    import sys

    from drill.console import err_console

    err_console.print(f"[bold red]error:[/] {_exc}", highlight=False, soft_wrap=True)
    sys.exit(2)

from drill.serve.command import serve_app  # noqa: E402

app.add_typer(serve_app(list(registry.specs().values())), name="serve")
from drill.train import cli as train_cli  # noqa: E402

app.command("train")(train_cli.train)


def main() -> None:
    """Entry point. A model backend failing mid-run (server down, request rejected), a reward component
    failing (an answer judge that cannot be reached), or a Ray cluster that cannot be reached ends the command
    with one line and exit 1."""
    import sys

    from drill.console import err_console
    from drill.core.rubric import RubricError
    from drill.evaluate.distributed import RayUnavailable
    from drill.models.base import ModelCallError

    try:
        app()
    except ModelCallError as exc:
        err_console.print(f"[bold red]error:[/] model call failed: {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except (RubricError, RayUnavailable) as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
