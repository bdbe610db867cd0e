"""`EnvSpec`: everything the generic commands need to know about one environment.

An environment package exposes one `SPEC = EnvSpec(...)`. `drill eval`, `drill watch`, `drill train`
(and serving and the audit) read only the spec, so adding an environment touches only its own folder:

    SPEC = EnvSpec(
        name="triage",
        summary="IT tickets answered from a knowledge base",
        load=TriageEnv,                                   # load(**options) -> Env[TriageTask]
        rubric=lambda options, params: rubric(),          # the rubric for these env options
        baselines=lambda options: {"random": ..., "heuristic": ..., "oracle": ...},
        summarize=summarize,                              # episodes of one policy -> report columns
        columns=(Column("total"), Column("escalation_acc", percent)),
        describe=lambda task: f"{task.id}: gold escalate={task.should_escalate}",
        options=(EnvOption("mode", str, "reader", "reader or agent", flag="--mode", choices=("reader", "agent")),),
    )

Options are JSON scalars (`str`, `int`, `float`, `bool`) so an env can be rebuilt from them in another
process; every option can be given as `-E key=value`, and those with a `flag` also as that flag.
Rubric parameters (`rubric_params`, e.g. ChaosOps' `rogue_multiplier`) are rubric keywords, not env
options: weight schedules and `--weight NAME=VALUE` set them, as they set component weights.

The registry (`drill.registry`) finds the bundled specs in `drill.envs.*` and third-party ones through
the `drill.envs` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from drill.core.env import Env
from drill.core.policy import Policy
from drill.core.rubric import Rubric
from drill.core.types import Episode, Task

TaskT = TypeVar("TaskT", bound=Task)
OptionValue = str | int | float | bool | None
_TYPES: dict[type, str] = {str: "text", int: "integer", float: "number", bool: "true/false"}


class EnvOptionError(ValueError):
    """An environment option is unknown or has the wrong type. The message names the known options."""


@dataclass(frozen=True)
class EnvOption:
    """One keyword of the environment's `load()`."""

    name: str
    type: type
    """str, int, float or bool; `default=None` makes it optional."""
    default: OptionValue
    help: str
    flag: str | None = None
    """A convenience flag for eval/watch, e.g. `--mode`; every option also works as `-E name=value`."""
    choices: tuple[str, ...] = ()

    def parse(self, value: Any) -> OptionValue:
        """`value` (text from a command line, or a JSON value) as this option's type; EnvOptionError if it is not."""
        if value is None and self.default is None:
            return None
        if isinstance(value, str) and self.type is not str:
            text = value.strip()
            if self.type is bool and text.lower() in ("true", "false", "1", "0", "yes", "no"):
                value = text.lower() in ("true", "1", "yes")
            else:
                try:
                    value = self.type(text)
                except ValueError:
                    raise EnvOptionError(f"option {self.name} must be {_TYPES[self.type]}, got {value!r}") from None
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.type) or (isinstance(value, bool) and self.type is not bool):
            raise EnvOptionError(f"option {self.name} must be {_TYPES[self.type]}, got {value!r}")
        if self.choices and value not in self.choices:
            raise EnvOptionError(f"option {self.name} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


@dataclass(frozen=True)
class TaskFilter:
    """A task attribute that `drill eval` filters on (repeatable flag) and `drill watch` picks a task by."""

    field: str
    flag: str
    choices: tuple[str, ...]
    help: str
    watch_default: str | None = None
    """The value `drill watch` uses when neither this flag nor `--task` is given."""


@dataclass(frozen=True)
class Column:
    """A report column: a key of the summarize() row and how to format it (None: two decimals for floats)."""

    name: str
    format: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class Chart:
    """A PNG the evaluation writes: mean `value` per task group and policy, or each rubric component per policy."""

    filename: str
    kind: Literal["by_group", "components", "pass_k"]
    title: str
    ylabel: str


def percent(value: float) -> str:
    return f"{value:.0%}"


@dataclass(frozen=True)
class EnvSpec(Generic[TaskT]):
    """The registry entry of one environment. Set the fields above `options` in every spec."""

    name: str
    summary: str
    load: Callable[..., Env[TaskT]]
    """`load(**options)`: a fresh environment; raises ValueError (with a message for a person) on bad options."""
    rubric: Callable[[Mapping[str, Any], Mapping[str, float]], Rubric[TaskT]]
    """`rubric(options, params)`: the rubric for episodes of an env built with `options`, with rubric parameters."""
    baselines: Callable[[Mapping[str, Any]], Mapping[str, Callable[[], Policy]]]
    """`baselines(options)`: the scripted policies by name (random, heuristic, oracle) for these options."""
    summarize: Callable[[Sequence[Episode], Mapping[str, TaskT]], dict[str, Any]]
    """The report columns of one policy's episodes (all scored), given the tasks by id."""
    columns: tuple[Column, ...]
    """The columns of the summary table, after policy, group and model; the first is the headline reward."""
    describe: Callable[[TaskT], str]
    """One line about a task, ground truth included (for `drill watch`, which a developer reads)."""
    options: tuple[EnvOption, ...] = ()
    rubric_params: tuple[EnvOption, ...] = ()
    """Number parameters of `rubric` (type float), e.g. ChaosOps' rogue_multiplier with its `--rogue-multiplier`."""
    group: Callable[[TaskT], str] | None = None
    """A task's group in reports (ChaosOps' tier, an inbox question's kind)."""
    group_name: str = "group"
    rows_by_group: bool = False
    """One table row per policy and group (ChaosOps' tiers), instead of one per policy."""
    filters: tuple[TaskFilter, ...] = ()
    charts: tuple[Chart, ...] = ()
    seeds: int = 1
    """Default seeds per task in `drill eval`."""
    batch: int = 32
    """Episodes played in lockstep per `run_episodes` call."""
    watch_policy: str = "heuristic"
    report_dir: Callable[[Mapping[str, Any]], str] | None = None
    """The default report folder under reports/ for these options; None: the env's name."""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Extra lines for results.json's meta (e.g. how the splits relate)."""
    commands: Callable[[], Any] | None = None
    """A factory for extra `drill NAME ...` commands (a typer app), e.g. `drill inbox ingest`."""
    text_option: str | None = None
    """A bool option that, set False, skips rendering observation text (scripted policies read a structured view).
    `drill eval` turns it off when every policy is scripted and `--keep-text` is not given."""
    success: Callable[[Episode, TaskT], bool] | None = None
    """Whether one episode succeeded, as this environment defines success (a resolved incident, a correct
    answer, ...): `drill eval --seeds k` reports pass^1..pass^k from it (every one of j trials of a task
    succeeds), beside the mean reward. None: no pass^k columns."""
    audit_strategies: Callable[[Mapping[str, Any]], Sequence[Any]] | None = None
    """Extra exploit strategies (`drill.audit.strategies.Strategy`) for `drill audit NAME`, given the options; the
    generic ones, built from the tool schemas and the baselines, always run."""
    train_defaults: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    """`train_defaults(options)`: the `drill train` settings that let the embedded model start learning here, for
    these parsed options: run-config field names (`tool_listing`, `prefill`, `demos`, `max_new_tokens`, `roles`, ...)
    and `env_options` (options to add). `drill train` uses each one the user did not set, and says so; a 0.1B model
    prompted with the generic defaults writes no valid tool call, so every group would score the same. None: none."""

    @property
    def reward_column(self) -> str:
        return self.columns[0].name

    def parse_options(self, given: Mapping[str, Any]) -> dict[str, OptionValue]:
        """All options, defaults filled in, `given` parsed by type; EnvOptionError naming the known ones."""
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            names = ", ".join(known) or "none"
            raise EnvOptionError(f"{self.name} has no option {', '.join(unknown)}; its options: {names}")
        return {name: option.parse(given[name]) if name in given else option.default for name, option in known.items()}

    def option(self, name: str) -> EnvOption:
        return next(o for o in self.options if o.name == name)

    @property
    def param_defaults(self) -> dict[str, float]:
        return {p.name: float(p.default) for p in self.rubric_params}  # type: ignore[arg-type]

    def make(self, options: Mapping[str, Any]) -> Callable[[], Env[TaskT]]:
        """A factory of environments with these (parsed) options; builds one now so a bad option fails here."""
        parsed = self.parse_options(options)
        self.load(**parsed)
        return lambda: self.load(**parsed)

    def rubric_for(self, options: Mapping[str, Any], values: Mapping[str, float] | None = None) -> Rubric[TaskT]:
        """The rubric with rubric parameters and component weights from `values` (names of either kind)."""
        values = dict(values or {})
        defaults = self.param_defaults
        params = {k: float(v) for k, v in values.items() if k in defaults}
        rubric = self.rubric(self.parse_options(options), {**defaults, **params})
        weights = {k: v for k, v in values.items() if k not in defaults}
        return rubric.reweighted(weights) if weights else rubric
