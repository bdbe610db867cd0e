"""`drill serve ENV`: one registered environment over OpenEnv's HTTP/WebSocket protocol, and its web page.

Its flags are derived: the environment's own (`-E key=value`, its convenience flags, `--weight`), the limits
from `ServeConfig`'s fields, and the model flags for `--policy` (a model policy offered beside the baselines,
loaded once at start; a policy that cannot be loaded stops the command with the reason).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import typer

from drill.cli_options import LLM_PARAMETERS, llm_options, with_adapter_settings
from drill.console import console, usage_error
from drill.core.spec import EnvSpec
from drill.evaluate.commands import _env_parameters, _options, _parameter
from drill.policies import build_policy

__all__ = ["serve_app", "serve_command"]


def _config_parameters() -> list[inspect.Parameter]:
    from drill.serve.config import ServeConfig

    types: dict[str, Any] = {"int": int, "float": float, "tuple[str, ...]": list[str]}
    return [_parameter(f.name, types[f.type] if isinstance(f.type, str) else f.type,
                       typer.Option(list(f.default) if isinstance(f.default, tuple) else f.default,
                                    "--" + f.name.replace("_", "-"), help=f.metadata["help"]))
            for f in dataclasses.fields(ServeConfig)]


def serve_command(spec: EnvSpec) -> Callable[..., None]:
    """The `drill serve NAME` command for `spec`."""

    def command(**values: Any) -> None:
        import uvicorn

        from drill.serve.app import build_app
        from drill.serve.config import ServeConfig
        from drill.serve.session import ServedEnv

        try:
            config = ServeConfig(**{f.name: tuple(values[f.name]) if isinstance(f.default, tuple) else values[f.name]
                                    for f in dataclasses.fields(ServeConfig)})
        except ValueError as exc:
            usage_error(f"--allow-origin: {exc}")
        if config.max_sessions < 1 or config.idle_timeout <= 0 or config.max_body < 1024:
            usage_error("--max-sessions must be >= 1, --idle-timeout > 0 and --max-body >= 1024")
        values = with_adapter_settings(values, spec)  # lora:DIR brings its training's prompt flags and -E options
        options, rubric_values = _options(spec, values)
        try:
            make_env = spec.make(options)
            rubric = spec.rubric_for(options, rubric_values)
        except (ValueError, OSError) as exc:
            usage_error(" ".join(str(exc).split()))
        baselines = dict(spec.baselines(options))
        offered: dict[str, Callable[[], Any]] = dict(baselines)
        for text in dict.fromkeys(values["policy"]):
            llm = llm_options(values, make_env, baselines.get("oracle"))
            try:
                policy = build_policy(text, baselines, llm)
            except ValueError as exc:
                usage_error(str(exc))
            console.print(f"policy {text}: {policy.info.model_dump(exclude_none=True)}", highlight=False)
            offered[text] = lambda policy=policy: policy
        try:
            app = build_app(ServedEnv(spec, options, make_env, rubric, offered), config)
        except ValueError as exc:
            usage_error(f"--withhold-policy: {exc}")
        base = f"http://{values['host']}:{values['port']}"
        console.print(f"serving {spec.name} on {base} (OpenEnv: /ws /reset /step /state /schema /mcp) · "
                      f"page: {base}/web · eval against it: drill eval {spec.name} --env-url {base}",
                      highlight=False, soft_wrap=True)
        if values["host"] not in ("127.0.0.1", "localhost", "::1"):
            console.print(f"warning: listening on {values['host']}, and drill serve has no authentication: anyone "
                          "who reaches this port can play (docs/serving.md: put a proxy with TLS and auth in front)",
                          highlight=False, soft_wrap=True)
        uvicorn.run(app, host=values["host"], port=values["port"], ws_max_size=config.max_body,
                    log_level=values["log_level"])

    command.__doc__ = (f"Serve {spec.name} ({spec.summary}) over OpenEnv's HTTP/WebSocket protocol, with a web page "
                       "at /web.")
    env_params = [p for p in _env_parameters(spec, repeatable_filters=True) if not p.name.startswith("filter_")]
    command.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        _parameter("host", str, typer.Option("127.0.0.1", "--host", help="Address to listen on.")),
        _parameter("port", int, typer.Option(8000, "--port", help="Port to listen on.")),
        *_config_parameters(),
        _parameter("policy", list[str], typer.Option([], "--policy", help="A model policy to offer beside the "
                                                     "baselines (repeatable): llm, lora:PATH, openai:MODEL, ...")),
        _parameter("log_level", str, typer.Option("warning", "--log-level", help="uvicorn's log level.")),
        *env_params,
        *LLM_PARAMETERS,
    ])
    return command


def _examples(name: str, flags: str = "", options: str = "") -> str:
    return (f"Serve: drill serve {name}{flags} --port 8000 · page: http://127.0.0.1:8000/web · evaluate against it: "
            f"drill eval {name}{flags} --env-url http://127.0.0.1:8000 · check it: openenv validate --url "
            f"http://127.0.0.1:8000 · train against it: drill train {name}{options} --env-url http://127.0.0.1:8000 · play "
            "from Python: OpenEnv's GenericEnvClient, or drill.serve.RemoteEnv with drill.core.run_episodes "
            "(docs/serving.md).")


def serve_app(specs: Sequence[EnvSpec]) -> typer.Typer:
    """`drill serve`, with one `drill serve NAME` per registered environment."""
    app = typer.Typer(no_args_is_help=True, help="Serve an environment over OpenEnv's HTTP/WebSocket protocol, with a "
                                                 "web page at /web.", epilog=_examples("triage", " --mode agent",
                                                                                         " -E mode=agent"))
    for spec in specs:
        app.command(spec.name, help=f"Serve {spec.name} over OpenEnv HTTP/WebSocket: {spec.summary}.",
                    epilog=_examples(spec.name))(serve_command(spec))
    return app
