"""The sandboxed side of a test run. Not imported by Drill: its source is passed to `python -I -S -c` in a fresh
process (see `sandbox.py`), inside the jail (`jail.py`) unless the user chose the audit hook alone. From the first
request line (the configuration) it writes solution.py into its working directory (in the jail, bubblewrap has put
it in the read-only workspace already), sets resource limits, installs the seccomp filter it was given (while only
this trusted code has run), installs a blocking audit hook, loads solution.py, and then answers one call of the
entry point per request line: the arguments come in, the return value (plain data only) or the exception goes out.
Expected outputs never enter this process."""

import json
import os
import resource
import sys
import traceback

_MAX_REPLY = 262_144
_BLOCKED_EVENTS = {
    "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "signal.pthread_kill", "resource.setrlimit", "resource.prlimit", "os.symlink", "os.link", "os.chroot",
    "subprocess.Popen", "pty.spawn", "os.startfile", "sys.remote_exec", "os.setuid",
}
_BLOCKED_PREFIXES = ("socket.", "ctypes.", "_winapi.", "winreg.", "urllib.", "http.", "ftplib.", "smtplib.",
                     "webbrowser.", "os.chown", "os.chflags")
_BLOCKED_MODULES = {"ctypes", "_ctypes", "_posixsubprocess", "multiprocessing", "_multiprocessing", "_socket",
                    "socket", "ssl", "_ssl", "mmap", "_xxsubinterpreters", "_testcapi", "_testinternalcapi"}
_CHANGE_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.truncate", "os.utime",
                  "os.chdir", "shutil.rmtree", "shutil.copyfile", "shutil.copytree", "shutil.move",
                  "shutil.copymode", "shutil.copystat", "shutil.chown", "shutil.make_archive", "shutil.unpack_archive"}
_LIST_EVENTS = {"os.listdir", "os.scandir", "os.walk", "os.fwalk", "glob.glob", "glob.glob/2"}


class SandboxViolation(PermissionError):
    pass


def _install_hook(workspace, readable):
    def inside(path, roots):
        return any(path == r or path.startswith(r + os.sep) for r in roots)

    def resolve(path):
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return os.path.normpath(os.path.join(workspace, str(path)))

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if path is None or isinstance(path, int):
                raise SandboxViolation("sandbox: opening a file descriptor is not allowed")
            full = resolve(path)
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
                (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
            if inside(full, (workspace,)) or (not writing and inside(full, readable)):
                return
            raise SandboxViolation(f"sandbox: opening {str(path)[:120]!r} is not allowed; only files in the "
                                   "workspace can be opened")
        if event in _BLOCKED_EVENTS or event.startswith(_BLOCKED_PREFIXES):
            raise SandboxViolation(f"sandbox: {event} is not allowed")
        if event == "import" and str(args[0]).split(".")[0] in _BLOCKED_MODULES:
            raise SandboxViolation(f"sandbox: importing {args[0]} is not allowed")
        if event in _CHANGE_EVENTS or event in _LIST_EVENTS:
            roots = (workspace,) if event in _CHANGE_EVENTS else (workspace, *readable)
            for arg in args[:2]:
                if isinstance(arg, (str, bytes, os.PathLike)) and not inside(resolve(arg), roots):
                    raise SandboxViolation(f"sandbox: {event} outside the workspace is not allowed")
                if isinstance(arg, int):
                    raise SandboxViolation(f"sandbox: {event} on a file descriptor is not allowed")

    sys.addaudithook(hook)


def _install_filter(program):
    """Install the seccomp filter (BPF from the parent, built with libseccomp) on this process; no_new_privs first,
    as the kernel requires. Python has no prctl, so this calls libc's through _ctypes, the C half of ctypes (the
    whole ctypes package costs ~20 ms at every start), then drops _ctypes from sys.modules (the audit hook refuses
    to import it again). Nothing that runs later in this process can remove or loosen the filter."""
    import _ctypes
    import struct

    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class Pointer(_ctypes._SimpleCData):
        _type_ = "P"

    class Byte(_ctypes._SimpleCData):
        _type_ = "c"

    class Prctl(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = Int
        _argtypes_ = (Int, Pointer, Pointer, Pointer, Pointer)

    def buffer(data):
        class Bytes(_ctypes.Array):
            _type_ = Byte
            _length_ = len(data)
        return Bytes.from_buffer_copy(data)

    code = buffer(bytes.fromhex(program))
    fprog = buffer(struct.pack("@H6xP", len(code) // 8, _ctypes.addressof(code)))
    prctl = Prctl(("prctl", _Library()))
    if prctl(38, 1, 0, 0, 0) != 0 or prctl(22, 2, _ctypes.addressof(fprog), 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        raise OSError(_ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    del sys.modules["_ctypes"]


class _Library:
    """What CFuncPtr((name, library)) looks a symbol up in: the process's own (libc's prctl)."""

    _handle = 0


def _encode(value, depth=0):
    """Plain data only, tagged so the other side rebuilds the exact types (a tuple stays a tuple). An instance of a
    subclass of a plain type (a Counter, a defaultdict, a namedtuple, an IntEnum) crosses as the value it holds, read
    through the base type's own methods: HumanEval's harness accepts `Counter(...) == {...}`, and until 2026-11-28 such
    an honest answer failed every test here (red team); an overridden `__eq__` or `__iter__` is never called, so a
    subclass that claims to equal everything is judged by what it holds."""
    if depth > 50:
        raise ValueError("the value is nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    for base, tag in ((list, "list"), (tuple, "tuple"), (set, "set"), (frozenset, "frozenset")):
        if issubclass(kind, base):
            return {tag: [_encode(v, depth + 1) for v in list(base.__iter__(value))]}
    if issubclass(kind, dict):
        return {"dict": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in list(dict.items(value))]}
    if issubclass(kind, bytes):
        return {"bytes": bytes.hex(value)}
    for base, read in ((int, int.__int__), (float, float.__float__), (str, str.__str__)):
        if issubclass(kind, base):
            return read(value)
    raise TypeError(f"returned an object of type {kind.__name__}, not plain data (None, bool, int, float, str, "
                    "bytes, list, tuple, set, dict)")


def _decode(value):
    if isinstance(value, dict):
        (tag, items), = value.items()
        if tag == "bytes":
            return bytes.fromhex(items)
        if tag == "dict":
            return {_decode(k): _decode(v) for k, v in items}
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](_decode(v) for v in items)
    return value


def _trace(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "solution.py"]
    lines = [f'  File "solution.py", line {f.lineno}, in {f.name}\n    {(f.line or "").strip()}' for f in frames]
    return "\n".join(lines[-4:])


def _describe(exc):
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _limit(limits):
    """Set every resource limit, soft and hard; a hard limit already below the asked value is kept (it is
    stricter). A limit that cannot be set raises: the jail is never built without it."""
    for name, value in (("RLIMIT_AS", limits["memory_bytes"]), ("RLIMIT_CPU", limits["cpu_seconds"]),
                        ("RLIMIT_FSIZE", limits["file_bytes"]), ("RLIMIT_NPROC", limits["processes"]),
                        ("RLIMIT_CORE", 0), ("RLIMIT_NOFILE", 64)):
        which = getattr(resource, name)
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError) as exc:
            raise OSError(f"cannot set {name} to {value}: {exc}") from None


def main():
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    config = json.loads(requests.readline())
    if config["source"] is not None:  # in the jail, bubblewrap has put it in the read-only workspace already
        with open("solution.py", "w", encoding="utf-8") as handle:
            handle.write(config["source"])
    try:
        _limit(config["limits"])
        if config["seccomp"] is not None:
            _install_filter(config["seccomp"])
    except BaseException as exc:  # the parent refuses to run without the limits and the filter it asked for
        replies.write(json.dumps({"id": 0, "jail_error": _describe(exc)[:300]}).encode() + b"\n")
        replies.flush()
        return
    replies.write(b'{"id": 0, "started": true}\n')
    replies.flush()
    workspace = os.path.realpath(os.getcwd())
    readable = tuple(os.path.realpath(p) for p in sys.path if p and not p.endswith(".zip"))
    sys.stdout = open(os.devnull, "w")
    sys.stderr = sys.stdout
    sys.stdin = open(os.devnull)
    sys.setrecursionlimit(3000)
    _install_hook(workspace, readable)

    def reply(payload):
        data = json.dumps(payload, allow_nan=True).encode()
        if len(data) > _MAX_REPLY:
            data = json.dumps({"id": payload.get("id"), "error": f"the reply is over {_MAX_REPLY} bytes"}).encode()
        replies.write(data + b"\n")
        replies.flush()

    namespace = {"__name__": "solution", "__file__": "solution.py", "__builtins__": __builtins__}
    try:
        with open("solution.py", encoding="utf-8") as handle:
            source = handle.read()
        exec(compile(source, "solution.py", "exec"), namespace)
        function = namespace[config["entry_point"]]
        if not callable(function):
            raise TypeError(f"{config['entry_point']} is not a function")
    except KeyError:
        reply({"id": 0, "load_error": f"solution.py defines no {config['entry_point']}", "trace": ""})
        return
    except BaseException as exc:  # SystemExit and KeyboardInterrupt included: the solution must not end the run
        reply({"id": 0, "load_error": _describe(exc)[:300], "trace": _trace(exc)})
        return
    reply({"id": 0, "ready": True})
    while True:
        line = requests.readline()
        if not line:
            return
        request = json.loads(line)
        try:
            args = _decode(request["args"])
            result = function(*args)
            payload = {"id": request["id"], "value": _encode(result)}
        except BaseException as exc:  # noqa: BLE001 - everything the solution raises is reported, never fatal
            payload = {"id": request["id"], "raised": _describe(exc)[:300], "trace": _trace(exc)}
        try:
            reply(payload)
        except BaseException as exc:
            reply({"id": request["id"], "raised": "the return value could not be sent: " + _describe(exc)[:200],
                   "trace": ""})


if __name__ == "__main__":  # run as `python -c SOURCE`; imported only by tests of its helpers
    main()
