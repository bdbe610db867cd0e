"""A `drill serve` process on loopback per env and flags, shared by the test session (`serve(env, *flags)`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Environments that build data on first use (the synthetic inbox) build it in a private folder, which the
    served processes share."""
    old = os.environ.get("DRILL_CACHE")
    os.environ["DRILL_CACHE"] = str(tmp_path_factory.mktemp("drill-cache"))
    yield
    if old is None:
        os.environ.pop("DRILL_CACHE")
    else:
        os.environ["DRILL_CACHE"] = old


class Served:
    def __init__(self, env: str, flags: tuple[str, ...]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "drill.cli", "serve", env, "--port", str(self.port), *flags],
            stdout=self.log, stderr=subprocess.STDOUT, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        deadline = time.monotonic() + 90
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"drill serve {env} exited: {self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"drill serve {env} did not answer /health in 90 s")
            time.sleep(0.2)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(scope="session")
def serve() -> Iterator[Callable[..., Served]]:
    """`serve("triage", "--mode", "agent")`: a running server, one per env and flags for the whole session (each
    start imports Drill in a fresh process: seconds; tests that need a server of their own pass their own flags)."""
    running: dict[tuple[str, ...], Served] = {}

    def start(env: str, *flags: str) -> Served:
        key = (env, *flags)
        if key not in running:
            running[key] = Served(env, flags)
        return running[key]

    yield start
    for served in running.values():
        served.stop()
