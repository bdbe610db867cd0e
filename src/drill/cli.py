"""The `drill` command. Each environment registers its own `eval` and `watch` commands here."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Drill: train reliable LLM agents with reinforcement learning.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate policies on an environment; writes a report.")
watch_app = typer.Typer(no_args_is_help=True, help="Watch one episode turn by turn.")
app.add_typer(eval_app, name="eval")
app.add_typer(watch_app, name="watch")

# -- environment commands (one block per environment) --------------------------------------------

from drill.envs.chaosops import cli as chaosops_cli  # noqa: E402

eval_app.command("chaosops")(chaosops_cli.evaluate)
watch_app.command("chaosops")(chaosops_cli.watch)

from drill.envs.triage import cli as triage_cli  # noqa: E402

eval_app.command("triage")(triage_cli.evaluate)
watch_app.command("triage")(triage_cli.watch)

from drill.envs.inbox import cli as inbox_cli  # noqa: E402

eval_app.command("inbox")(inbox_cli.evaluate)
watch_app.command("inbox")(inbox_cli.watch)
app.add_typer(inbox_cli.inbox_app, name="inbox")

# -- training ------------------------------------------------------------------------------------

from drill.train import cli as train_cli  # noqa: E402

app.command("train")(train_cli.train)


def main() -> None:
    """Entry point. A model backend failing mid-run (server down, request rejected) ends with one line."""
    import sys

    from drill.console import err_console
    from drill.models.base import ModelCallError

    try:
        app()
    except ModelCallError as exc:
        err_console.print(f"[bold red]error:[/] model call failed: {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
