"""`drill eval ENV` and `drill watch ENV`, built from each environment's `EnvSpec`.

One function per command serves every environment. Its flags are derived, not listed: the shared ones
(`--policy`, `--seeds`, `-E key=value`, `--weight NAME=VALUE`, the model and prompt flags from
`drill.models.prompt.PROMPT_FLAGS`), then the spec's own convenience flags (its options' flags, its task
filters such as `--tier`, its rubric parameters such as `--rogue-multiplier`). A convenience flag is
the same as its `-E` form; when both are given, the flag wins.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import random
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import typer

from drill.cli_options import LLM_PARAMETERS, llm_options, with_adapter_settings
from drill.console import usage_error
from drill.core.policy import Policy
from drill.core.rubric import Rubric
from drill.core.spec import EnvOptionError, EnvSpec
from drill.core.types import SPLITS, Task
from drill.evaluate.matrix import evaluate
from drill.evaluate.viewer import watch_episode
from drill.memory.cli import METHOD_PARAMETERS, methods_for
from drill.policies import describe_choices, resolve_policies

_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def _parameter(name: str, annotation: Any, option: Any) -> inspect.Parameter:
    return inspect.Parameter(name, _KEYWORD, default=option, annotation=annotation)


SPLIT_PARAMETER = _parameter("split", str, typer.Option(
    "test", "--split", help="Task split: test (the final table; play it once), validation (carved out of the train "
                            "pool; compare runs and choose checkpoints here) or train."))


def key_values(items: Sequence[str], option: str) -> dict[str, str]:
    """`KEY=VALUE` items as a dict; a usage error for an item without `=`."""
    parsed: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            usage_error(f"{option} {item!r}: expected KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed


def _env_parameters(spec: EnvSpec, repeatable_filters: bool) -> list[inspect.Parameter]:
    params = [
        _parameter("env_option", list[str], typer.Option(
            [], "--env-option", "-E", help=f"KEY=VALUE for the environment (repeatable). Options of {spec.name}: "
                                           + (", ".join(o.name for o in spec.options) or "none") + ".")),
        _parameter("weight", list[str], typer.Option(
            [], "--weight", help="NAME=VALUE: a rubric component's weight or a rubric parameter (repeatable).")),
    ]
    for option in spec.options:
        if option.flag:
            kind = {bool: Optional[bool], int: Optional[int], float: Optional[float]}.get(option.type, Optional[str])
            choices = f" One of: {', '.join(option.choices)}." if option.choices else ""
            default = "" if option.default is None else f" [default: {option.default}]"
            params.append(_parameter(f"env_{option.name}", kind, typer.Option(
                None, option.flag, help=f"{option.help}{choices}{default} (= -E {option.name}=...)")))
    for param in spec.rubric_params:
        params.append(_parameter(f"param_{param.name}", Optional[float], typer.Option(
            None, param.flag, help=f"{param.help} [default: {param.default}]")))
    for task_filter in spec.filters:
        if repeatable_filters:
            params.append(_parameter(f"filter_{task_filter.field}", list[str], typer.Option(
                [], task_filter.flag, help=f"{task_filter.help} (repeatable; default all): "
                                           f"{', '.join(task_filter.choices)}.")))
        else:
            params.append(_parameter(f"filter_{task_filter.field}", Optional[str], typer.Option(
                None, task_filter.flag, help=f"{task_filter.help}: {', '.join(task_filter.choices)} "
                                             f"[default: {task_filter.watch_default}].")))
    return params


def _options(spec: EnvSpec, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """The env options and the rubric values (weights and parameters) from -E, --weight and the spec's flags."""
    given: dict[str, Any] = key_values(values["env_option"], "-E")
    given |= {o.name: values[f"env_{o.name}"] for o in spec.options if o.flag and values[f"env_{o.name}"] is not None}
    try:
        options = spec.parse_options(given)
    except EnvOptionError as exc:
        usage_error(str(exc))
    rubric_values: dict[str, float] = {}
    for name, text in key_values(values["weight"], "--weight").items():
        try:
            rubric_values[name] = float(text)
        except ValueError:
            usage_error(f"--weight {name}={text!r}: the value must be a number")
    rubric_values |= {p.name: values[f"param_{p.name}"] for p in spec.rubric_params
                      if values[f"param_{p.name}"] is not None}
    return options, rubric_values


def _setup(spec: EnvSpec, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, float], Rubric,
                                                                Callable[[], Any], Mapping[str, Callable[[], Policy]]]:
    options, rubric_values = _options(spec, values)
    try:
        make_env = spec.make(options)
        rubric = spec.rubric_for(options, rubric_values)
    except (ValueError, OSError) as exc:  # the env's own message for a bad option, a missing file, a bad weight
        usage_error(" ".join(str(exc).split()))
    return options, rubric_values, rubric, make_env, spec.baselines(options)


def _policies(spec_text: str, roles: Sequence[str], baselines: Mapping[str, Callable[[], Policy]],
              values: Mapping[str, Any], make_env: Callable[[], Any], seed: int = 0,
              search: Callable[[Policy], Policy] | None = None) -> dict[str, Policy]:
    llm = llm_options(values, make_env, baselines.get("oracle"), seed)
    try:
        return resolve_policies(spec_text, roles, baselines, llm, search)
    except ValueError as exc:
        usage_error(str(exc))


def _choose(values: Sequence[str], known: Sequence[str], flag: str) -> list[str]:
    for value in values:
        if value not in known:
            usage_error(f"unknown {flag} {value!r}; choose from {', '.join(known)}")
    return list(dict.fromkeys(values))


def _ray_player(values: Mapping[str, Any], methods: bool, roles: Sequence[str],
                baselines: Mapping[str, Callable[[], Policy]], make_env: Callable[[], Any]) -> Callable[..., Any]:
    """`--ray-workers N` / `--ray-address ADDR`: the matrix played by Ray actors (drill.evaluate.distributed)."""
    from drill.evaluate.distributed import RayUnavailable, ray_player, require_ray

    if values["ray_workers"] < 1:
        usage_error("--ray-address needs --ray-workers N (how many rollout workers to start on the cluster)"
                    if values["ray_workers"] == 0 else f"--ray-workers must be 0 or more, got {values['ray_workers']}")
    if methods:
        usage_error("--ray-workers plays plain policies; memory, Reflexion, LATS and --store run in-process")
    try:
        require_ray()
    except RayUnavailable as exc:
        usage_error(str(exc))
    llm = llm_options(values, make_env, baselines.get("oracle"))
    build = functools.partial(resolve_policies, roles=tuple(roles), baselines=dict(baselines), llm=llm)
    return ray_player(build, values["ray_workers"], values["ray_address"])


def pick_tasks(tasks: Sequence[Task], limit: int | None, shuffle_seed: int | None) -> list[Task]:
    """`drill eval`'s task choice: the first `limit` tasks (all for None), after a shuffle with `shuffle_seed` when
    one is given, so a limit takes a seeded random subset (task files are often grouped by kind)."""
    picked = list(tasks)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(picked)
    return picked[:limit]


def report_folder(spec: EnvSpec, options: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """The default report folder under reports/: the env's own name for these options (`spec.report_dir`), then
    every other setting that differs from the defaults (`-E`, `--weight`, filters, split, limit, seeds), so a
    run with other settings never overwrites the plain run's report: `triage-reader.k=1.parsimony=0.3`."""
    if spec.report_dir is None:
        base, named = spec.name, dict(settings)
    else:  # an option the env's own name already shows (triage-agent: mode) is not repeated
        base = spec.report_dir(options)
        named = {k: v for k, v in settings.items()
                 if k not in options or spec.report_dir({**options, k: spec.option(k).default}) == base}
    parts = [f"{k}={'+'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in named.items()]
    suffix = re.sub(r"[^A-Za-z0-9=+,._-]+", "-", ".".join(parts))
    if len(suffix) > 100:  # a long list of filters: keep the folder name readable and still distinct
        suffix = suffix[:80] + "." + hashlib.sha256(suffix.encode()).hexdigest()[:12]
    return f"{base}.{suffix}" if suffix else base


def _check_split(split: str) -> None:
    if split not in SPLITS:
        usage_error(f"unknown --split {split!r}; choose {', '.join(SPLITS[:-1])} or {SPLITS[-1]}")


def eval_command(spec: EnvSpec) -> Callable[..., None]:
    """The `drill eval NAME` command for `spec`."""
    choices = describe_choices(spec.baselines(spec.parse_options({})))

    def command(**values: Any) -> None:
        spec_ = spec
        values = with_adapter_settings(values, spec)  # lora:DIR brings its training's prompt flags and -E options
        if values["env_url"]:  # --env-url: episodes played on a served env (drill serve), tasks and rubric local
            from drill.serve.client import remote_spec

            spec_ = remote_spec(spec, values["env_url"])
        options, rubric_values, rubric, make_env, baselines = _setup(spec_, values)
        _check_split(values["split"])
        if values["seeds"] < 1:
            usage_error(f"--seeds must be at least 1, got {values['seeds']}")
        if values["limit"] is not None and values["limit"] < 1:
            usage_error(f"--limit must be at least 1, got {values['limit']}")
        env = make_env()
        tasks: list[Task] = env.tasks(values["split"])
        chosen: dict[str, list[str]] = {}
        for task_filter in spec.filters:
            picked = _choose(values[f"filter_{task_filter.field}"], task_filter.choices, task_filter.flag)
            if picked:
                chosen[task_filter.field] = picked
                tasks = [t for t in tasks if getattr(t, task_filter.field) in picked]
        tasks = pick_tasks(tasks, values["limit"], values["shuffle_seed"])
        if not tasks:
            usage_error(f"no {values['split']} tasks match the filters")
        try:  # memory, Reflexion, LATS and the trajectory store (drill.memory), when their flags are given
            methods = methods_for(values, spec.name, options, make_env, rubric, baselines, values["policy"])
        except ValueError as exc:
            usage_error(str(exc))
        policies = {text: _policies(text, env.roles, baselines, values, make_env,
                                    search=methods.search if methods else None)
                    for text in dict.fromkeys(values["policy"])}
        policies = {text: methods.wrap(by_role) for text, by_role in policies.items()} if methods else policies
        player = methods.player(tasks) if methods else None
        if values["ray_workers"] or values["ray_address"]:
            player = _ray_player(values, methods is not None, env.roles, baselines, make_env)
        shown = {k: v for k, v in options.items() if v != spec.option(k).default}
        params = {k: v for k, v in rubric_values.items() if k not in spec.param_defaults or v != spec.param_defaults[k]}
        shuffled = {"shuffle_seed": values["shuffle_seed"]} if values["shuffle_seed"] is not None else {}
        settings = " · ".join(f"{k}={v}" for k, v in {**shown, **params, **chosen, **shuffled}.items())
        seeds = values["seeds"]
        title = (f"{spec.name} · {values['split']} split · {len(tasks)} tasks x {seeds} seed{'s' if seeds > 1 else ''}"
                 + (f" · {settings}" if settings else ""))
        report_dir = report_folder(spec, options, {**shown, **params, **chosen, **shuffled,
                                                   **({"split": values["split"]} if values["split"] != "test" else {}),
                                                   **({"limit": values["limit"]} if values["limit"] else {}),
                                                   **({"seeds": seeds} if seeds != spec.seeds else {})})
        meta = {"split": values["split"], "filters": chosen, "shuffle_seed": values["shuffle_seed"],
                "rubric_values": rubric_values, **({"methods": methods.rows} if methods else {})}
        evaluate(spec_, options, policies, tasks, seeds, rubric, values["out"] or Path("reports") / report_dir, title,
                 meta=meta, keep_text=values["keep_text"] or values["store"] is not None,  # the store keeps task text
                 **({"player": player} if player else {}))
        if methods:
            methods.print_table(title)

    command.__doc__ = f"Evaluate policies on {spec.name} ({spec.summary}): a table, results.json and charts."
    command.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        _parameter("policy", list[str], typer.Option(["random", "heuristic", "oracle"], "--policy",
                                                     help=f"Policy (repeatable): {choices}; per role with commas "
                                                          "in multi-role envs, e.g. heuristic,oversight=llm.")),
        SPLIT_PARAMETER,
        _parameter("limit", Optional[int], typer.Option(None, "--limit", help="Only the first N tasks.")),
        _parameter("shuffle_seed", Optional[int], typer.Option(None, "--shuffle-seed", help="Shuffle the tasks with "
                                                               "this seed first, so --limit N takes a seeded random N "
                                                               "(task files are often grouped by kind).")),
        _parameter("seeds", int, typer.Option(spec.seeds, "--seeds", help="Seeds per task (0..N-1).")),
        _parameter("out", Optional[Path], typer.Option(None, "--out", help="Report folder; default reports/"
                                                                             f"{spec.name}[-...].")),
        _parameter("keep_text", bool, typer.Option(False, "--keep-text", help="Render and keep every observation's "
                                                   "text even when only scripted policies play.")),
        *_env_parameters(spec, repeatable_filters=True),
        _parameter("env_url", Optional[str], typer.Option(None, "--env-url", help="Play the episodes on a served "
                                                          f"environment (`drill serve {spec.name}`), e.g. "
                                                          "http://127.0.0.1:8000; same options on both sides.")),
        _parameter("ray_workers", int, typer.Option(0, "--ray-workers", help="Play the episodes on this many Ray "
                                                    "rollout workers (pip install 'drill\\[ray]'); 0: in this process.")),
        _parameter("ray_address", Optional[str], typer.Option(None, "--ray-address", help="A Ray cluster to run the "
                                                              "workers on (e.g. ray://head:10001); default a local "
                                                              "Ray started for this run.")),
        *LLM_PARAMETERS,
        *METHOD_PARAMETERS,
    ])
    return command


def watch_command(spec: EnvSpec) -> Callable[..., None]:
    """The `drill watch NAME` command for `spec`."""
    choices = describe_choices(spec.baselines(spec.parse_options({})))

    def command(**values: Any) -> None:
        values = with_adapter_settings(values, spec)
        _, _, rubric, make_env, baselines = _setup(spec, values)
        env = make_env()
        if values["task"]:
            try:
                task = env.task(values["task"])
            except KeyError:
                usage_error(f"unknown --task {values['task']!r} for {spec.name}")
        else:
            _check_split(values["split"])
            candidates = env.tasks(values["split"])
            for task_filter in spec.filters:
                wanted = values[f"filter_{task_filter.field}"] or task_filter.watch_default
                if wanted is not None:
                    _choose([wanted], task_filter.choices, task_filter.flag)
                    candidates = [t for t in candidates if getattr(t, task_filter.field) == wanted]
            if not candidates:
                usage_error(f"no {values['split']} task matches those flags")
            task = candidates[0]
        policies = _policies(values["policy"], env.roles, baselines, values, make_env, values["seed"])
        watch_episode(spec, env, task, values["seed"], policies, rubric,
                      f"{spec.name} · {task.id} ({task.split}) · seed {values['seed']} · {values['policy']}")

    command.__doc__ = f"Watch one {spec.name} episode turn by turn: each view, action, event and the running reward."
    command.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        _parameter("task", Optional[str], typer.Option(None, "--task", help="Task id; default the first task of "
                                                                             "--split (matching the flags below).")),
        SPLIT_PARAMETER,
        _parameter("policy", str, typer.Option(spec.watch_policy, "--policy",
                                               help=f"One policy spec: {choices}.")),
        _parameter("seed", int, typer.Option(0, "--seed", help="Episode seed.")),
        *_env_parameters(spec, repeatable_filters=False),
        *LLM_PARAMETERS,
    ])
    return command


def register(eval_app: typer.Typer, watch_app: typer.Typer, app: typer.Typer, specs: Sequence[EnvSpec]) -> None:
    """Add `drill eval NAME`, `drill watch NAME` and the env's own `drill NAME ...` commands for every spec."""
    for spec in specs:
        eval_app.command(spec.name, help=f"Evaluate policies on {spec.name}: {spec.summary}.")(eval_command(spec))
        watch_app.command(spec.name, help=f"Watch one {spec.name} episode turn by turn.")(watch_command(spec))
        if spec.commands is not None:
            app.add_typer(spec.commands(), name=spec.name)
