"""Running model-written code: one fresh, jailed process per test run, and the tests judged outside it.

The agent's `solution.py` is sent to a child process (`sandbox_child.py`, run as `python -I -S -B`: no
site-packages, no user paths, an environment of only LANG and PYTHONHASHSEED) that writes it into its workspace and
imports it. By default (`sandbox="jail"`) the child runs in the operating-system jail of `jail.py`: bubblewrap
namespaces (user, mount, PID, IPC, UTS, network), an unprivileged uid that is not root on the host, a read-only root
holding only the interpreter, its libraries and the standard library, a size-limited tmpfs workspace, and a seccomp
filter the child installs on itself before the solution loads. Inside, the child also sets resource limits and a
blocking audit hook (a second layer, not the wall). Where the jail cannot be built, `run_tests` raises
`JailUnavailable`; `sandbox="audit-hook"` is the weaker mode the user must ask for by name (the child then runs
directly, in a temporary directory, with the limits and the hook alone), and every process that uses it warns.

The tests themselves never enter that process. They run here, in the environment's process, with `candidate`
bound to a proxy that sends the arguments of each call to the child and receives the return value as plain data
(None, bool, int, float, str, bytes, list, tuple, set, dict: an object that claims to equal everything cannot
cross). The expected outputs stay here, so the solution cannot read, patch or forge them. A call that does not
return within the per-call limit (its arguments written to a non-blocking pipe within the same limit), a child
that dies or exits, or a whole run over its wall-clock limit stops the run (the whole process group is killed):
the tests not yet judged count as failed, with a message that says why.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drill.envs.coderepair import jail
from drill.envs.coderepair.jail import JailUnavailable

CHILD_SOURCE = (Path(__file__).parent / "sandbox_child.py").read_text(encoding="utf-8")
_MAX_REPLY = 300_000
_MAX_COLLISIONS = 64
STARTUP_SECONDS = 30.0
"""Wall-clock seconds for the jail and the interpreter to come up, before any agent code runs."""
SANDBOXES = ("jail", "audit-hook")
AUDIT_HOOK_WARNING = ("coderepair runs agent code with the Python audit hook alone (-E sandbox=audit-hook): no "
                      "operating-system jail; code that gets past the hook can read and write what Drill can")
_HEX = re.compile(r"0x[0-9a-fA-F]{4,}")


@dataclass(frozen=True)
class Limits:
    """What one test run may use."""

    call_seconds: float = 2.0
    """Wall-clock seconds for loading the solution and for each call of the function."""
    run_seconds: float = 20.0
    """Wall-clock seconds for the whole run."""
    memory_bytes: int = 1 << 30
    cpu_seconds: int = 20
    file_bytes: int = 1 << 20
    processes: int = 8
    """RLIMIT_NPROC: threads and processes of the child's uid (in the jail, its own user namespace's count)."""


class CandidateError(Exception):
    """The solution's function raised, or returned something that is not plain data."""

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.trace = trace


class RunStopped(Exception):
    """The child process was stopped or ended: a timeout, an exit, a crash. Nothing more can run in it."""


@dataclass(frozen=True)
class TestCase:
    """One test: its source as the agent would see it, and its code (a function of `candidate`)."""

    name: str
    source: str
    code: str


@dataclass(frozen=True)
class TestOutcome:
    name: str
    source: str
    passed: bool
    detail: str = ""


@dataclass
class RunReport:
    outcomes: list[TestOutcome] = field(default_factory=list)
    stopped: str | None = None
    """Why the run ended early: "timeout", "exited", "load_error"; None when every test was judged."""
    message: str = ""

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def errors(self) -> int:
        """Tests whose call raised (inside the solution) or returned something that is not plain data."""
        return sum(") raised " in o.detail.split("\n", 1)[0] for o in self.outcomes)


def _encode(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind in (list, tuple, set, frozenset):
        tag = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}[kind]
        return {tag: [_encode(v) for v in value]}
    if kind is dict:
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if kind is bytes:
        return {"bytes": value.hex()}
    raise TypeError(f"a test passes a {kind.__name__} to the candidate; only plain data can cross")


def _decode(value: Any, depth: int = 0) -> Any:
    """Rebuild plain data from the child's reply; anything else is an error (a forged or broken reply)."""
    if depth > 60:
        raise ValueError("the value is nested too deeply")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is dict and len(value) == 1:
        (tag, items), = value.items()
        if tag == "bytes" and type(items) is str:
            return bytes.fromhex(items)
        if type(items) is list:
            if tag == "dict":
                pairs = [(_decode(k, depth + 1), _decode(v, depth + 1)) for k, v in items]
                _few_collisions([k for k, _ in pairs])
                return dict(pairs)
            builder = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}.get(tag)
            if builder is not None:
                values = [_decode(v, depth + 1) for v in items]
                if builder in (set, frozenset):
                    _few_collisions(values)
                return builder(values)
    raise ValueError("the reply is not plain data")


def _few_collisions(keys: list[Any]) -> None:
    """Refuse set items or dict keys that share a hash by the dozen. Integers hash to themselves modulo 2**61 - 1,
    so a solution can return 14,000 multiples of it: building that set here would take this process ~6 s of
    quadratic probing per call. Counting the hashes first is linear (a hash value is an int that hashes to itself)."""
    if len(keys) > _MAX_COLLISIONS and max(Counter(hash(k) for k in keys).values()) > _MAX_COLLISIONS:
        raise ValueError(f"more than {_MAX_COLLISIONS} items of a set or dict share one hash")


def stable_repr(value: Any) -> str:
    """repr(), except that sets list their items sorted: a set's own order depends on the process's hash seed,
    and reports must be the same in every process."""
    kind = type(value)
    if kind in (set, frozenset):
        items = ", ".join(sorted(stable_repr(v) for v in value))
        if kind is frozenset:
            return f"frozenset({{{items}}})" if value else "frozenset()"
        return f"{{{items}}}" if value else "set()"
    if kind is list:
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if kind is tuple:
        return "(" + ", ".join(stable_repr(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if kind is dict:
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _short(value: Any, limit: int = 200) -> str:
    text = stable_repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clean(text: str) -> str:
    """Addresses vary between processes; nothing else in a report may. A lone surrogate (JSON carries one from the
    solution's exception messages) is written as its escape: an observation must encode as UTF-8, or a tokenizer
    refuses it and one solution stops a training run."""
    return _HEX.sub("0x…", text.encode("utf-8", "backslashreplace").decode("utf-8"))


class _Child:
    """One sandboxed process serving calls of the entry point."""

    def __init__(self, source: str, entry_point: str, limits: Limits, sandbox: str) -> None:
        self.limits = limits
        self.workdir: str | None = None
        # the parent's pid in the command line (sys.argv[1], unused by the child) tells whose sandbox a process is
        child = ["-I", "-S", "-B", "-c", CHILD_SOURCE, f"--drill-parent={os.getpid()}"]
        env = {"LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        if sandbox == "jail":
            built = jail.jail()
            staged = os.memfd_create("solution.py")  # bubblewrap copies it into the workspace, then seals that
            try:
                os.write(staged, source.encode("utf-8", "surrogatepass"))  # a lone surrogate: a load error
                os.lseek(staged, 0, os.SEEK_SET)
                self.proc = subprocess.Popen(built.command(child, staged), stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/", env=env,
                                             start_new_session=True, pass_fds=(staged,),
                                             **built.popen_options())  # type: ignore[arg-type]
            finally:
                os.close(staged)
            program: str | None = built.seccomp.hex()
            source_sent: str | None = None  # already in the workspace, read-only
        else:
            self.workdir = tempfile.mkdtemp(prefix="drill-coderepair-")
            self.proc = subprocess.Popen([sys.executable, *child], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=self.workdir, env=env, start_new_session=True)
            program = None
            source_sent = source  # the child writes it into its temporary directory
        self.buffer = b""
        self.next_id = 0
        self.calls: list[str] = []
        assert self.proc.stdin is not None
        os.set_blocking(self.proc.stdin.fileno(), False)  # every write has a deadline: see `_send`
        self.config = {"entry_point": entry_point, "source": source_sent, "seccomp": program,
                       "limits": {"memory_bytes": limits.memory_bytes, "cpu_seconds": limits.cpu_seconds,
                                  "file_bytes": limits.file_bytes, "processes": limits.processes}}

    def startup_failure(self) -> str | None:
        """What bubblewrap or the interpreter wrote before the child silenced its stderr, once the process has
        ended: the reason a jail did not start. Nothing the solution runs can write there (it runs after the
        child has replaced that descriptor, as the only process of its PID namespace)."""
        assert self.proc.stderr is not None
        if self.proc.poll() is None:
            return None
        text = self.proc.stderr.read(2000).decode(errors="replace")
        return " ".join(text.split())[:300] or None

    def _send(self, payload: dict[str, Any], deadline: float, what: str) -> None:
        """Write one request line by `deadline`. The pipe is non-blocking: a child that stops reading (its function
        sleeps while a thread forges the replies, its pipe shrunk to one page with F_SETPIPE_SZ) fills it, and a
        blocking write would wait for ever, past every time limit, with the run and its episode."""
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        data = memoryview(json.dumps(payload).encode() + b"\n")
        while data:
            remaining = deadline - _now()
            if remaining <= 0:
                raise RunStopped(f"timeout: {what} did not finish within {self.limits.call_seconds:g} s (the "
                                 "process stopped reading its input); the process was stopped")
            try:
                if select.select([], [fd], [], remaining)[1]:
                    data = data[os.write(fd, data):]
            except BlockingIOError:
                continue
            except OSError:
                raise RunStopped(self._ended()) from None

    def _ended(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "the solution's process stopped answering"
        if code < 0:
            return f"the solution's process was killed by signal {-code} ({_signal_name(-code)})"
        return f"the solution's process exited with status {code} while tests were running"

    def receive(self, deadline: float, what: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - _now()
            if remaining <= 0:
                raise RunStopped(f"timeout: {what} did not finish within {self.limits.call_seconds:g} s; "
                                 "the process was stopped")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RunStopped(self._ended())
            self.buffer += chunk
            if len(self.buffer) > _MAX_REPLY:
                raise RunStopped("the solution's process sent a reply over the size limit")
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            raise RunStopped("the solution's process sent a reply that is not JSON (it wrote to the test channel)")
        if type(reply) is not dict:
            raise RunStopped("the solution's process sent a reply that is not a JSON object")
        return reply

    def call(self, args: tuple[Any, ...], run_deadline: float) -> Any:
        self.next_id += 1
        shown = f"candidate({', '.join(_short(a, 80) for a in args)})"
        deadline = min(run_deadline, _now() + self.limits.call_seconds)
        self._send({"id": self.next_id, "args": _encode(list(args))}, deadline, shown)
        reply = self.receive(deadline, shown)
        if reply.get("id") != self.next_id:
            raise RunStopped("the solution's process answered out of turn (it wrote to the test channel)")
        if "value" in reply:
            try:
                value = _decode(reply["value"])
            except (ValueError, TypeError, RecursionError, KeyError):
                raise CandidateError(f"{shown} sent back something that is not plain data", "") from None
            self.calls.append(f"{shown} returned {_short(value)}")
            return value
        message = _clean(str(reply.get("raised") or reply.get("error") or "an unknown error"))
        self.calls.append(f"{shown} raised {message}")
        raise CandidateError(f"{shown} raised {message}", _clean(str(reply.get("trace", ""))))

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.proc.wait()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def _now() -> float:
    import time

    return time.monotonic()


def run_tests(source: str, entry_point: str, tests: Sequence[TestCase], namespace: dict[str, Any],
              limits: Limits = Limits(), seed_prefix: str = "", sandbox: str = "jail") -> RunReport:
    """Run `tests` against `source` in one sandboxed process; a report with one outcome per test.

    `namespace` holds what the tests may use besides `candidate` (the problem's own helpers, from the canonical
    code, run here: trusted). `random` is seeded per test so tests that draw random inputs are deterministic.
    `sandbox` is "jail" (JailUnavailable where it cannot be built or does not start) or "audit-hook" (warns).
    """
    if sandbox not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {sandbox!r}")
    if sandbox == "audit-hook":
        warnings.warn(AUDIT_HOOK_WARNING, stacklevel=2)
    report = RunReport()
    child = _Child(source, entry_point, limits, sandbox)
    run_deadline = _now() + limits.run_seconds
    try:
        _started(child, sandbox)
        try:
            ready = child.receive(min(run_deadline, _now() + limits.call_seconds), "loading solution.py")
        except RunStopped as stop:
            return _stopped(report, tests, 0, "timeout" if str(stop).startswith("timeout") else "exited",
                            f"loading solution.py failed: {stop}")
        if "load_error" in ready:
            trace = _clean(str(ready.get("trace", "")))
            message = f"loading solution.py failed: {_clean(str(ready['load_error']))}" + (f"\n{trace}" if trace else "")
            return _stopped(report, tests, 0, "load_error", message)
        if not ready.get("ready"):
            return _stopped(report, tests, 0, "exited", "loading solution.py failed: an unexpected reply")
        for index, test in enumerate(tests):
            child.calls = []
            try:
                outcome = _judge(test, namespace, lambda *args: child.call(args, run_deadline),
                                 f"{seed_prefix}:{test.name}", child.calls)
            except RunStopped as stop:
                last = f"\n  {child.calls[-1]}" if child.calls else ""
                report.outcomes.append(TestOutcome(test.name, test.source, False, f"{stop}{last}"))
                kind = "timeout" if str(stop).startswith("timeout") else "exited"
                return _stopped(report, tests, index + 1, kind, str(stop))
            report.outcomes.append(outcome)
        return report
    finally:
        child.close()


def _started(child: _Child, sandbox: str) -> None:
    """Wait for the child's first line, which it writes before the solution is loaded (so no agent code can forge
    it): the jail is up, or why not. A child that never gets there is the machine's failure, not the solution's:
    it raises instead of scoring."""
    what = "the jail" if sandbox == "jail" else "the sandbox process"
    try:
        deadline = _now() + STARTUP_SECONDS
        child._send(child.config, deadline, "starting the sandbox")  # read before any agent code runs
        first = child.receive(deadline, "starting the sandbox")
    except RunStopped as stop:
        waited = f"no answer within {STARTUP_SECONDS:g} s" if str(stop).startswith("timeout") else str(stop)
        raise JailUnavailable(f"{what} did not start: {child.startup_failure() or waited}") from None
    if "jail_error" in first:
        raise JailUnavailable(f"{what} could not set its resource limits or install its seccomp filter: "
                              f"{first['jail_error']}")
    if not first.get("started"):
        raise JailUnavailable(f"{what} sent an unexpected first line")


def _stopped(report: RunReport, tests: Sequence[TestCase], start: int, kind: str, message: str) -> RunReport:
    for test in tests[start:]:
        report.outcomes.append(TestOutcome(test.name, test.source, False, f"not run: {message.splitlines()[0]}"))
    report.stopped = kind
    report.message = message
    return report


def _judge(test: TestCase, namespace: dict[str, Any], candidate: Callable[..., Any], seed: str,
           calls: list[str]) -> TestOutcome:
    scope = dict(namespace)
    exec(compile(test.code, f"<test {test.name}>", "exec"), scope)
    state = random.getstate()
    random.seed(seed)
    try:
        scope["_drill_test"](candidate)
    except CandidateError as exc:
        return TestOutcome(test.name, test.source, False, f"{exc}" + (f"\n{exc.trace}" if exc.trace else ""))
    except AssertionError as exc:
        last = f"\n  {calls[-1]}" if calls else ""
        return TestOutcome(test.name, test.source, False, _assertion_detail(exc) + last)
    except RunStopped:
        raise
    except Exception as exc:  # the test's own code failed on what the solution returned (a TypeError, say)
        return TestOutcome(test.name, test.source, False, _clean(f"{type(exc).__name__}: {exc}")[:300])
    finally:
        random.setstate(state)
    return TestOutcome(test.name, test.source, True)


def _assertion_detail(exc: AssertionError) -> str:
    message = str(exc)
    return "assertion failed" + (f" ({_clean(message)[:120]})" if message else "")
