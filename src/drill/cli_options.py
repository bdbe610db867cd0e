"""Command-line options shared by every environment's `eval` and `watch`: the language-model settings."""

from __future__ import annotations

import typer

ModelOpt = typer.Option(None, "--model", help="Local HF folder or hub id for `llm`; base model for `lora:`.")
BaseUrlOpt = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for openai:MODEL.")
KeyEnvOpt = typer.Option("OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key.")
TokensOpt = typer.Option(192, "--max-new-tokens", help="Tokens an LLM policy may generate per turn.")
TempOpt = typer.Option(0.0, "--temperature", help="LLM sampling temperature (0 = greedy).")
ReactOpt = typer.Option(False, "--react", help="Thought/Action prompting instead of plain tool calls.")
