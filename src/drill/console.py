"""Terminal output shared by the CLI commands: one rich console, and the one-line usage error."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
err_console = Console(stderr=True)


def usage_error(message: str) -> NoReturn:
    """Print one clear line and exit with code 2 (bad command-line input). The message is text, not markup: a
    path or option value with brackets in it (`drill[ray]`, `runs/[a]`) is printed as written."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def fatal(message: str, code: int = 1) -> NoReturn:
    """Print the reason a command cannot go on and exit non-zero (the message as text, as in `usage_error`)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
