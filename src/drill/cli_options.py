"""The language-model flags every `drill eval ENV` and `drill watch ENV` takes, and `llm_options`, which turns
them into `LLMOptions`. The prompt flags are derived from `drill.models.prompt.PROMPT_FLAGS`, so a prompt
setting and its default are declared once."""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from drill.console import console, usage_error
from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.spec import EnvSpec
from drill.models.base import SamplingParams
from drill.models.prompt import PROMPT_FLAGS, LLMOptions, PolicyOptions, PromptFlag


def unescape(text: str) -> str:
    r"""`\n` and `\t` typed on a command line as the characters they name (`\\` is a backslash)."""
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def typed(text: str) -> str:
    r"""`text` as typed on a command line, which `unescape` reads back (a newline as `\n`, a tab as `\t`)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def _shown(flag: PromptFlag) -> str:
    if isinstance(flag.default, bool):
        return str(flag.default).lower()
    return repr(flag.default) if isinstance(flag.default, str) else str(flag.default)


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
    *(_flag(f.name, Optional[type(f.default)], typer.Option(
        None, f"{f.flag}/--no-{f.flag[2:]}" if isinstance(f.default, bool) else f.flag,
        help=escape(f"{f.help} [default: {_shown(f)}]"), show_default=False)) for f in PROMPT_FLAGS),
)
"""The model flags as command parameters, for commands built from a signature. A prompt flag not given is None (its
default is filled in by `llm_options`), so a `lora:` adapter's recorded settings can stand in for it."""


def llm_options(values: Mapping[str, Any], make_env: Callable[[], Env], oracle: Callable[[], Policy] | None,
                seed: int = 0) -> LLMOptions:
    """The LLM options from the flags in `values`; demonstrations are played by `oracle` on training tasks.
    Bad values end the command with a usage error."""
    from drill.models.policy import demonstrations

    values = {**values, **{f.name: f.default for f in PROMPT_FLAGS if values.get(f.name) is None}}
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", values["device"]):
        usage_error(f"--device {values['device']!r}: use auto, cpu, cuda or cuda:N")
    demos = values["demos"]
    if demos < 0:
        usage_error(f"--demos must be 0 or more, got {demos}")
    if values["max_history_turns"] < 0:
        usage_error(f"--max-history-turns must be 0 or more, got {values['max_history_turns']}")
    if demos and oracle is None:
        usage_error("--demos needs an oracle baseline, and this environment has none")
    try:
        shown = demonstrations(make_env, make_env().tasks("train"), oracle(), demos) if demos and oracle else ()
        prompt = PolicyOptions(
            sampling=SamplingParams(max_new_tokens=values["max_new_tokens"], temperature=values["temperature"],
                                    seed=seed),
            react=values["react"], tool_listing=values["tool_listing"], prefill=unescape(values["prefill"]),
            max_history_turns=values["max_history_turns"], demonstrations=shown)
    except ValueError as exc:
        usage_error(f"{exc}")
    return LLMOptions(model=values["model"], base_url=values["base_url"], api_key_env=values["api_key_env"],
                      prompt=prompt, device=values["device"])


def lora_paths(policy_texts: Sequence[str]) -> list[str]:
    """The adapter folders of the `lora:` specs in `--policy` texts (`lora:A`, `oracle,oversight=lora:B`,
    `lats:lora:C`), each once."""
    paths: list[str] = []
    for text in policy_texts:
        for part in text.split(","):
            spec = part if part.startswith(("lora:", "lats:")) else part.partition("=")[2] or part
            while spec.startswith("lats:"):
                spec = spec.removeprefix("lats:")
            if spec.startswith("lora:") and spec.removeprefix("lora:") not in paths:
                paths.append(spec.removeprefix("lora:"))
    return paths


def with_adapter_settings(values: Mapping[str, Any], spec: EnvSpec) -> dict[str, Any]:
    """`values` (a command's flags) with the prompt flags and `-E` options that the `lora:` adapters among its
    `--policy` texts were trained with (`drill.models.adapters.AdapterSettings`) wherever the user gave none, so
    `--policy lora:DIR` alone prompts the adapter as its training did (every LLM policy of the command gets them,
    the untrained model beside it too). Prints a line per adapter saying what it brought and which of the user's
    flags override it. Usage errors: a `--model` other than an adapter's base model; adapters trained differently."""
    from drill.models.adapters import SETTINGS_FILE, read_adapter_settings
    from drill.models.base import AdapterLoadError
    from drill.models.local import canonical_model_id

    texts = [values["policy"]] if isinstance(values["policy"], str) else list(values["policy"])
    merged = dict(values)
    recorded: dict[str, Any] = {}
    for path in lora_paths(texts):
        if not Path(path).expanduser().is_dir():
            continue  # loading it says what is wrong
        try:
            settings = read_adapter_settings(path)
        except AdapterLoadError as exc:
            usage_error(str(exc))
        if settings is None:
            console.print(f"note: lora:{path} records no training settings (no {SETTINGS_FILE} beside it); it is "
                          "prompted by the flags given", highlight=False, soft_wrap=True)
            continue
        if values["model"] and canonical_model_id(values["model"]) != canonical_model_id(settings.base_model):
            usage_error(f"lora:{path} was trained on {settings.base_model}, but --model is {values['model']}; leave "
                        "--model out to use the adapter's base model")
        env_options = settings.env_options if settings.env == spec.name else {}
        wanted = {"prompt": settings.prompt, "env_options": env_options}
        if recorded and wanted != recorded["wanted"]:
            usage_error(f"lora:{recorded['path']} and lora:{path} were trained with different prompt settings or "
                        "-E options; evaluate them in separate commands, or give every prompt flag and -E option")
        recorded = {"path": path, "wanted": wanted}
        merged, brought, overridden = _fill(values, settings.prompt, env_options, spec)
        if settings.prompt.get("demos") and settings.demo_selection != "first":
            overridden.append(f"it was trained with {settings.demo_selection} demonstrations; these are the first "
                              f"{settings.prompt['demos']} training tasks'")
        line = f"lora:{path}: prompted as trained ({' '.join(brought) or 'the defaults'})"
        console.print(line + "".join(f"; {note}" for note in overridden), highlight=False, soft_wrap=True)
    return merged


def _fill(values: Mapping[str, Any], prompt: Mapping[str, Any], env_options: Mapping[str, Any],
          spec: EnvSpec) -> tuple[dict[str, Any], list[str], list[str]]:
    """`values` with the recorded prompt flags and env options the user did not give; what was filled in (as flags)
    and what the user's flags override."""
    flags = {f.name: f.flag for f in PROMPT_FLAGS}
    brought: list[str] = []
    overridden: list[str] = []
    filled = dict(values)
    for name, value in prompt.items():
        if name not in flags:
            continue
        shown = shlex.quote(typed(value)) if isinstance(value, str) else str(value).lower()
        flag_value = unescape(values[name]) if isinstance(values.get(name), str) else values.get(name)
        if flag_value is None:
            filled[name] = typed(value) if isinstance(value, str) else value
            if value != next(f.default for f in PROMPT_FLAGS if f.name == name):
                brought.append(flags[name] if value is True else f"{flags[name]} {shown}")
        elif flag_value != value:
            overridden.append(f"{flags[name]} {values[name]} overrides its {shown}")
    options = {key.strip(): text.strip() for key, _, text in (item.partition("=") for item in values["env_option"])}
    options |= {o.name: values[f"env_{o.name}"] for o in spec.options
                if o.flag and values.get(f"env_{o.name}") is not None}
    added = []
    for name, value in env_options.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if name not in options:
            added.append(f"{name}={text}")
            brought.append(f"-E {name}={text}")
        elif str(options[name]).lower() != text.lower():
            overridden.append(f"-E {name}={options[name]} overrides its {name}={text}")
    filled["env_option"] = [*added, *values["env_option"]]
    return filled, brought, overridden

