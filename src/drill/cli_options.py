"""The language-model flags every `drill eval ENV` and `drill watch ENV` takes, and `llm_options`, which turns
them into `LLMOptions`. The prompt flags are derived from `drill.models.prompt.PROMPT_FLAGS`, so a prompt
setting and its default are declared once."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional

import typer

from drill.console import usage_error
from drill.core.env import Env
from drill.core.policy import Policy
from drill.models.base import SamplingParams
from drill.models.prompt import PROMPT_FLAGS, LLMOptions, PolicyOptions


def unescape(text: str) -> str:
    r"""`\n` and `\t` typed on a command line as the characters they name (`\\` is a backslash)."""
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def _flag(name: str, annotation: Any, option: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


LLM_PARAMETERS: tuple[inspect.Parameter, ...] = (
    _flag("model", Optional[str], typer.Option(None, "--model",
                                               help="Local HF folder or hub id for `llm`; base model for `lora:`.")),
    _flag("base_url", Optional[str], typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for "
                                                                           "openai:MODEL.")),
    _flag("api_key_env", str, typer.Option("OPENAI_API_KEY", "--api-key-env",
                                           help="Environment variable holding the API key.")),
    _flag("device", str, typer.Option("auto", "--device", help="Where local models (llm, lora:) run: auto "
                                      "(CUDA when present, else CPU), cpu, cuda or cuda:N; bfloat16 on CUDA.")),
    *(_flag(f.name, type(f.default), typer.Option(f.default, f.flag, help=f.help)) for f in PROMPT_FLAGS),
)
"""The model flags as command parameters, for commands built from a signature."""


def llm_options(values: Mapping[str, Any], make_env: Callable[[], Env], oracle: Callable[[], Policy] | None,
                seed: int = 0) -> LLMOptions:
    """The LLM options from the flags in `values`; demonstrations are played by `oracle` on training tasks.
    Bad values end the command with a usage error."""
    from drill.models.policy import demonstrations

    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", values["device"]):
        usage_error(f"--device {values['device']!r}: use auto, cpu, cuda or cuda:N")
    demos = values["demos"]
    if demos < 0:
        usage_error(f"--demos must be 0 or more, got {demos}")
    if demos and oracle is None:
        usage_error("--demos needs an oracle baseline, and this environment has none")
    try:
        shown = demonstrations(make_env, make_env().tasks("train"), oracle(), demos) if demos and oracle else ()
        prompt = PolicyOptions(
            sampling=SamplingParams(max_new_tokens=values["max_new_tokens"], temperature=values["temperature"],
                                    seed=seed),
            react=values["react"], tool_listing=values["tool_listing"], prefill=unescape(values["prefill"]),
            demonstrations=shown)
    except ValueError as exc:
        usage_error(f"{exc}")
    return LLMOptions(model=values["model"], base_url=values["base_url"], api_key_env=values["api_key_env"],
                      prompt=prompt, device=values["device"])
