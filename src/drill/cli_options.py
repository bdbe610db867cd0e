"""Command-line options shared by every environment's `eval` and `watch`: the language-model settings,
and `llm_options`, which turns them into `LLMOptions`."""

from __future__ import annotations

import re
from collections.abc import Callable

import typer

from drill.console import usage_error
from drill.core.env import Env
from drill.core.policy import Policy
from drill.policies import LLMOptions

ModelOpt = typer.Option(None, "--model", help="Local HF folder or hub id for `llm`; base model for `lora:`.")
BaseUrlOpt = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for openai:MODEL.")
KeyEnvOpt = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key.")
TokensOpt = typer.Option(192, "--max-new-tokens", help="Tokens an LLM policy may generate per turn.")
TempOpt = typer.Option(0.0, "--temperature", help="LLM sampling temperature (0 = greedy).")
ReactOpt = typer.Option(False, "--react", help="Thought/Action prompting instead of plain tool calls.")
ListingOpt = typer.Option("schema", "--tool-listing",
                          help="How tools are listed in the prompt: schema (JSON Schema) or compact (one signature "
                               "line per tool; far fewer tokens for small models).")
PrefillOpt = typer.Option("", "--prefill",
                          help="Text every LLM reply starts with (the model continues it), e.g. "
                               "'<tool_call>\\n{\"name\": \"submit_resolution\", \"arguments\": {'; \\n and \\t "
                               "are read as newline and tab. Not for openai:.")
DemosOpt = typer.Option(0, "--demos", help="Show the LLM this many worked examples: the oracle's first turn on "
                                           "the first N training tasks.")


def unescape(text: str) -> str:
    r"""`\n` and `\t` typed on a command line as the characters they name (`\\` is a backslash)."""
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def llm_options(*, model: str | None, base_url: str | None, api_key_env: str, max_new_tokens: int,
                temperature: float, react: bool, tool_listing: str, prefill: str, demos: int,
                make_env: Callable[[], Env], oracle: Callable[[], Policy], seed: int = 0) -> LLMOptions:
    """The LLM options from the shared flags; demonstrations are played by `oracle` on training tasks.
    Bad values end the command with a usage error."""
    from drill.models.policy import demonstrations

    if demos < 0:
        usage_error(f"--demos must be 0 or more, got {demos}")
    try:
        shown = demonstrations(make_env, make_env().tasks("train"), oracle(), demos) if demos else ()
        return LLMOptions(model=model, base_url=base_url, api_key_env=api_key_env, max_new_tokens=max_new_tokens,
                          temperature=temperature, react=react, seed=seed, tool_listing=tool_listing,  # type: ignore[arg-type]
                          prefill=unescape(prefill), demonstrations=shown)
    except ValueError as exc:
        usage_error(f"{exc}")
