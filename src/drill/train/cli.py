"""`drill train ENV`: train a LoRA adapter with any method of `drill.train.methods.METHODS` from the command line.

The options are derived from the fields of `RunConfig` and of every method's `Options` (`settings_parameters`):
each field is one option named after it, with its help text, its default and its group from the field's metadata,
so a new setting or a new method needs no edit here. `FLAG_NAMES` gives the few options whose name is not
the field's (short forms, and repeatable options named in the singular). A `--config FILE.toml|.json` supplies
any fields; an option given on the command line overrides it.

    drill train triage --steps 30                               # GRPO, the default method
    drill train triage -E k=1 --method sft --source oracle --epochs 2
    drill train triage --stage sft:source=oracle --stage grpo:steps=60
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from drill.cli_options import typed, unescape
from drill.console import fatal, usage_error
from drill.core.spec import EnvSpec
from drill.train.config import RunConfig, checked, parse_scalar, read_settings

FLAG_NAMES: dict[str, tuple[str, ...]] = {
    "env_options": ("--env-option", "-E"), "roles": ("--role",), "role_rewards": ("--role-reward",),
    "group_size": ("--group-size", "-G"), "learning_rate": ("--learning-rate", "--lr"),
    "lora_target_modules": ("--lora-targets",), "weight_schedules": ("--weight",),
    "eval_baselines": ("--eval-baseline",), "stages": ("--stage",), "output_dir": ("--output-dir", "-o"),
}
"""Option names that differ from `--field-name`."""

PANELS = {"environment": "Environment", "model": "Model", "prompt": "Prompt", "sampling": "Sampling",
          "optimization": "Optimization", "schedule": "Schedule", "outputs": "Outputs", "hardware": "Hardware"}
"""Help panels of the run-config groups, in order; each method's options get a panel of their own."""

NOTES = {"env_options": "KEY=VALUE, repeatable; values are read as bool, int or float where they parse.",
         "role_rewards": "ROLE=REWARD, repeatable.", "lora_target_modules": "Comma-separated.",
         "kl_abort": "0 means never."}
"""What the command line adds to a field's help: how its value is written there."""


def _methods() -> Mapping[str, Any]:
    from drill.train.methods import METHODS

    return METHODS


def _field_default(f: Field[Any]) -> Any:
    return f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "none"
    return "none" if value in (None, "") else str(value).lower() if isinstance(value, bool) else str(value)


def _annotation(hint: Any) -> Any:
    """The command-line type of a field: repeatable strings for lists and mappings, the plain type otherwise."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) else hint
    origin = typing.get_origin(base)
    if origin in (list, dict):
        return Optional[list[str]]
    if origin is typing.Literal:
        return Optional[str]
    return Optional[base]


def _parameter(name: str, hint: Any, help_text: str, panel: str, shown: str) -> inspect.Parameter:
    flags = FLAG_NAMES.get(name, (f"--{name.replace('_', '-')}",))
    annotation = _annotation(hint)
    if annotation is Optional[bool]:
        flags = (f"{flags[0]}/--no-{flags[0].removeprefix('--')}",)
    if name == "lora_target_modules":
        annotation = Optional[str]
    text = " ".join(part for part in (help_text, NOTES.get(name, ""), f"[default: {shown}]") if part)
    option = typer.Option(None, *flags, help=escape(text), rich_help_panel=panel, show_default=False)  # `[ray]` stays
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


def settings_parameters(env_defaults: Mapping[str, Any] | None = None, env: str = "") -> list[inspect.Parameter]:
    """One option per field of `RunConfig` (but `env`, the argument) and per field of every method's `Options`; a
    field that several methods share is one option, its help naming each method's default. `env_defaults` (the
    environment's `train_defaults` on its default options) are shown beside the defaults they replace."""
    hints = typing.get_type_hints(RunConfig)
    order = list(PANELS)
    run_fields = sorted((f for f in fields(RunConfig) if f.name != "env"),
                        key=lambda f: order.index(f.metadata["group"]))

    def shown(f: Field[Any]) -> str:
        default = _shown(_field_default(f))
        if env_defaults is None or f.name not in env_defaults:
            return default
        value = env_defaults[f.name]
        written = _shown(value) if isinstance(value, dict) else _flag_value(value)
        return f"{default}; {env}'s training default: {written}"

    parameters = [_parameter(f.name, hints[f.name], f.metadata["help"], PANELS[f.metadata["group"]], shown(f))
                  for f in run_fields]
    shared: dict[str, list[tuple[str, Field[Any]]]] = {}
    for name, module in _methods().items():
        for f in fields(module.Options):
            shared.setdefault(f.name, []).append((name, f))
    for field_name, owners in shared.items():
        first_method, first = owners[0]
        hint = typing.get_type_hints(_methods()[first_method].Options)[field_name]
        if len(owners) == 1:
            parameters.append(_parameter(field_name, hint, first.metadata["help"], first.metadata["group"],
                                         _shown(_field_default(first))))
        else:
            shown = "; ".join(f"{m}: {_shown(_field_default(f))}" for m, f in owners)
            text = " ".join(f"{m}: {f.metadata['help']}" for m, f in owners)
            panel = " / ".join(f.metadata["group"] for _, f in owners)
            parameters.append(_parameter(field_name, hint, text, panel, shown))
    return parameters


def _key_values(items: list[str], option: str, convert: bool) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            usage_error(f"{option} {item!r}: expected KEY=VALUE")
        scalar = parse_scalar(value.strip()) if convert else None
        value = value.strip() if scalar is None else scalar  # an env option is never None
        if parsed.get(key.strip(), value) != value:
            usage_error(f"{option} {key.strip()} is given twice, as {parsed[key.strip()]!r} and {value!r}")
        parsed[key.strip()] = value
    return parsed


CONVERT: dict[str, Callable[[Any], Any]] = {
    "env_options": lambda items: _key_values(items, "--env-option", convert=True),
    "role_rewards": lambda items: _key_values(items, "--role-reward", convert=False),
    "lora_target_modules": lambda text: [t.strip() for t in text.split(",") if t.strip()],
    "prefill": unescape,
    "kl_abort": lambda value: None if value == 0 else value,
    "output_dir": Path,
}
"""How an option's command-line value becomes the field's value, where they differ."""


def given_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The options given on the command line (None: not given), as field values."""
    return {name: CONVERT.get(name, lambda v: v)(value) for name, value in values.items()
            if value is not None and value != []}


def train(env: str, method: str | None, config_file: Path | None, **values: Any) -> None:
    """Train a LoRA adapter on ENV with --method (GRPO by default) or chained --stage's; writes metrics.jsonl,
    learning_curve.png, checkpoints, the adapter and a held-out evaluation table under --output-dir."""
    from drill.models.base import ModelLoadError
    from drill.train import methods
    from drill.train.run import TrainingStopped, plan_run

    try:
        given = (read_settings(config_file) if config_file is not None else {}) | given_settings(values)
        settings, taken = with_env_defaults(env, with_turn_limit(env, given))
        settings["env"] = env
        staged = bool(settings.get("stages"))
        if staged and method is not None:
            raise ValueError("--method and --stage: each stage names its own method (METHOD:KEY=VALUE,...)")
        method = method or "grpo"
        module = methods.method(method)
        run_settings, option_settings = methods.split_settings(settings, method, staged)
        config = checked(RunConfig, run_settings, str(config_file or "command line"))
        if staged:  # chained stages (drill.train.stages): checked here, run, then done
            from drill.train.stages import plan_stages, run_stages

            plan_stages(config, defaults=option_settings)
        else:
            options = checked(module.Options, option_settings, str(config_file or "command line"))
            plan = plan_run(config)
    except ValueError as exc:
        usage_error(" ".join(str(exc).split()))
    except OSError as exc:  # --env-url: nothing answers there
        fatal(str(exc))
    from drill.console import console

    if taken:
        console.print(f"{env}'s training defaults (a flag or config value overrides each): {' '.join(taken)}",
                      highlight=False, soft_wrap=True)
    try:
        if staged:
            run_stages(config, defaults=option_settings)
            return
        result = methods.train(config, method, options, target=plan.target)
    except ModelLoadError as exc:  # a --model or lora: path that does not load: one line, not a traceback
        usage_error(" ".join(str(exc).split()))
    except (TrainingStopped, FloatingPointError) as exc:
        fatal(f"{exc} (metrics so far: {config.output_dir / 'metrics.jsonl'}; resume from the last checkpoint "
              "with --resume after changing the settings)")
    console.print(f"adapter: {result.adapter_dir}  (evaluate with: {eval_command(config, result.adapter_dir)})",
                  highlight=False, soft_wrap=True)
    if config.demos and config.demo_selection != "first":
        console.print("note: drill eval --demos shows the first N training tasks' demonstrations, not the "
                      f"{config.demo_selection} ones this run used; heldout.json was prompted as in training",
                      highlight=False)
    console.print(f"metrics: {result.output_dir / 'metrics.jsonl'}  curve: {result.output_dir / 'learning_curve.png'}",
                  highlight=False)


def with_turn_limit(env: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """`--max-turns N` bounds every episode of the run; where the environment has a `max_turns` option of its own
    (inbox, copilot, coderepair), it sets that too, as `drill eval ENV --max-turns N` does, so the rubric scores
    efficiency against the same budget. An `-E max_turns=M` given as well must agree."""
    from drill import registry

    settings = dict(given)
    if "max_turns" not in given or all(o.name != "max_turns" for o in registry.get(env).options):
        return settings
    options = dict(given.get("env_options", {}))
    if options.setdefault("max_turns", given["max_turns"]) != given["max_turns"]:
        raise ValueError(f"--max-turns {given['max_turns']} and -E max_turns={options['max_turns']} disagree")
    settings["env_options"] = options
    return settings


HERMES_FORM = ("prefill", "demos")
"""Settings written in the Hermes reply form: an environment's defaults for them do not apply to a --react run."""


def with_env_defaults(env: str, given: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`given` (the config file's and the command line's settings) with the environment's training defaults
    (`EnvSpec.train_defaults`) filled in wherever the user set nothing, and those defaults as flags, to print.
    An `env_options` default adds options; an option the user gave keeps its value. Raises ValueError on an
    unknown environment or option."""
    from drill import registry

    spec = registry.get(env)
    user_options = dict(given.get("env_options", {}))
    if spec.train_defaults is None:
        return dict(given), []
    settings, taken = dict(given), []
    for name, value in spec.train_defaults(spec.parse_options(user_options)).items():
        if name == "env_options":
            added = {k: v for k, v in value.items() if k not in user_options}
            settings["env_options"] = {**added, **user_options}
            taken += [f"-E {k}={_flag_value(v)}" for k, v in added.items()]
        elif name not in given and not (given.get("react") and name in HERMES_FORM):
            settings[name] = value
            flag = FLAG_NAMES.get(name, ("--" + name.replace("_", "-"),))[0]
            taken.append(f"{flag} {_flag_value(value)}")
    return settings, taken


def _flag_value(value: Any) -> str:
    """A setting's value as typed on a command line: lists joined by commas, text escaped and quoted."""
    import shlex

    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    return shlex.quote(typed(value)) if isinstance(value, str) else str(value)


def env_flag_parameters(spec: EnvSpec, settings: Sequence[inspect.Parameter],
                        trained: Mapping[str, Any] | None = None) -> list[inspect.Parameter]:
    """The environment's own option flags (`--mode`, `--k`, `--db`, ...), as `drill eval ENV` takes them; each is
    `-E NAME=VALUE`. A flag the run config already has keeps the run's meaning: `--max-turns` bounds every
    episode and, in an environment with a `max_turns` option, sets that option too (`with_turn_limit`).
    `trained` holds the options `drill train` sets by default (`train_defaults`), shown beside the option's own."""
    taken = {flag for p in settings for flag in p.default.param_decls for flag in flag.split("/")}
    parameters = []
    for option in spec.options:
        if not option.flag or option.flag in taken:
            continue
        kind = {bool: Optional[bool], int: Optional[int], float: Optional[float]}.get(option.type, Optional[str])
        choices = f" One of: {', '.join(option.choices)}." if option.choices else ""
        default = "" if option.default is None else f" [default: {option.default}"
        if trained and option.name in trained:
            default += f"; {spec.name}'s training default: {_flag_text(trained[option.name])}"
        default += "]" if default else ""
        parameters.append(inspect.Parameter(
            f"env_{option.name}", inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=typer.Option(
                None, option.flag, help=escape(f"{option.help}{choices}{default} (= -E {option.name}=...)"),
                rich_help_panel=PANELS["environment"], show_default=False)))
    return parameters


def _flag_text(value: Any) -> str:
    """An environment option's value as `-E NAME=VALUE` reads it back (booleans as true/false)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def command(spec: EnvSpec | None = None) -> Callable[..., None]:
    """`train` with the derived options as its signature, for typer; with `spec` (`drill train ENV ...`), also that
    environment's own option flags."""
    head = [
        inspect.Parameter("env", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str,
                          default=typer.Argument(..., help="Environment to train on: triage, chaosops, ...")),
        inspect.Parameter("method", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str], default=typer.Option(
            None, "--method", help=escape("Training method: " + ", ".join(_methods()) + " [default: grpo]. With "
                                          "--stage, each stage names its own."), rich_help_panel=PANELS["environment"],
            show_default=False)),
        inspect.Parameter("config_file", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[Path],
                          default=typer.Option(None, "--config", help="A .toml or .json file of settings (run-config "
                                               "and method fields); command-line options override it.",
                                               rich_help_panel=PANELS["environment"])),
    ]

    env_defaults = dict(spec.train_defaults(spec.parse_options({}))) if spec and spec.train_defaults else None
    settings = settings_parameters(env_defaults, spec.name if spec else "")
    env_flags = env_flag_parameters(spec, settings, (env_defaults or {}).get("env_options")) if spec else []

    def train_command(**kwargs: Any) -> None:
        env, method, config_file = kwargs.pop("env"), kwargs.pop("method"), kwargs.pop("config_file")
        given = {p.name.removeprefix("env_"): kwargs.pop(p.name) for p in env_flags}
        flagged = [f"{name}={_flag_text(value)}" for name, value in given.items() if value is not None]
        if flagged:
            kwargs["env_options"] = [*(kwargs["env_options"] or []), *flagged]
        train(env, method, config_file, **kwargs)

    train_command.__signature__ = inspect.Signature([*head, *env_flags, *settings])  # type: ignore[attr-defined]
    train_command.__doc__ = train.__doc__
    return train_command


def eval_command(config: RunConfig, adapter_dir: Path) -> str:
    """The `drill eval` command that evaluates the trained adapter on the same environment options and split as the
    closing evaluation (`eval_split`), and prompts it as training did."""
    import shlex

    parts = ["drill", "eval", config.env, "--policy", f"lora:{adapter_dir}"]
    for key, value in config.env_options.items():
        parts += ["-E", f"{key}={_flag_text(value)}"]
    parts += ["--split", config.eval_split]
    if config.env_url:
        parts += ["--env-url", config.env_url]
    if config.model:
        parts += ["--model", config.model]
    parts += ["--max-new-tokens", str(config.max_new_tokens)]
    if config.tool_listing != "schema":
        parts += ["--tool-listing", config.tool_listing]
    if config.prefill:
        parts += ["--prefill", typed(config.prefill)]
    if config.react:
        parts.append("--react")
    if config.max_history_turns != RunConfig.max_history_turns:
        parts += ["--max-history-turns", str(config.max_history_turns)]
    if config.demos:
        parts += ["--demos", str(config.demos)]
    return shlex.join(parts)
