"""The `drill` command, built from the environment registry: `drill eval ENV`, `drill watch ENV` and
`drill train ENV` for every registered environment, plus each environment's own commands (`drill inbox ...`)."""

from __future__ import annotations

import sys

import typer

from drill import registry
from drill.core.spec import EnvSpec
from drill.evaluate.commands import register

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Drill: train reliable LLM agents with reinforcement learning.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate policies on an environment; writes a report.")
watch_app = typer.Typer(no_args_is_help=True, help="Watch one episode turn by turn.")
app.add_typer(eval_app, name="eval")
app.add_typer(watch_app, name="watch")


def _one_environment(argv: list[str]) -> EnvSpec | None:
    """The bundled environment of `drill eval ENV ...` or `drill watch ENV ...`: then only its commands are built
    (importing every environment was a third of the start-up). Anything else (help, train, serve, audit, a plugin,
    an environment's own commands) builds them all."""
    if len(argv) > 2 and argv[1] in ("eval", "watch"):
        return registry.bundled(argv[2])
    return None


try:
    _ONLY = _one_environment(sys.argv)
    if _ONLY is not None:
        register(eval_app, watch_app, app, [_ONLY])
    else:
        from drill.audit.commands import register_audit

        register(eval_app, watch_app, app, list(registry.specs().values()))
        register_audit(app, list(registry.specs().values()))
except registry.RegistryError as _exc:  # a broken third-party registration: one line naming it, exit 2
    from drill.console import err_console

    err_console.print(f"[bold red]error:[/] {_exc}", highlight=False, soft_wrap=True)
    sys.exit(2)

if _ONLY is None:
    from drill.serve.command import serve_app
    from drill.train import cli as train_cli

    app.add_typer(serve_app(list(registry.specs().values())), name="serve")
    app.command("train")(train_cli.command(registry.specs().get(sys.argv[2]) if len(sys.argv) > 2 and
                                           sys.argv[1] == "train" else None))


def main() -> None:
    """Entry point. A model backend failing mid-run (server down, request rejected), a reward component
    failing (an answer judge that cannot be reached), or a Ray cluster that cannot be reached ends the command
    with one line and exit 1."""
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
