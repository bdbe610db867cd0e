"""`Heartbeat`: a line every half minute while a long phase of a training step runs.

On the CPU one step of the embedded model takes minutes (a batched generate call for the whole step's episodes,
then the forward and backward passes), and a step's metrics line comes only at its end. The heartbeat prints what
the run is doing, how many episodes are done and for how long, from a daemon thread, so a run is never silent for
longer than `every` seconds while a phase is set:

    step 1: playing 16 episodes, 0 done, 30 s
    step 1: updating the adapter, 60 s
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Heartbeat:
    """The current phase (`phase(text, total)`), episodes done in it (`done()`), and a thread that prints them
    every `every` seconds until `stop()`. A phase of None is quiet."""

    def __init__(self, write: Callable[[str], None], every: float = 30.0) -> None:
        self.write = write
        self.every = every
        self._lock = threading.Lock()
        self._text: str | None = None
        self._total = 0
        self._done = 0
        self._started = self._printed = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def phase(self, text: str | None, total: int = 0) -> None:
        """Start a phase (`total`: the episodes it plays, 0 when it plays none); None: nothing to report."""
        with self._lock:
            self._text, self._total, self._done = text, total, 0
            self._started = self._printed = time.monotonic()
        if text is not None and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="drill-heartbeat", daemon=True)
            self._thread.start()

    def done(self, episodes: int = 1) -> None:
        with self._lock:
            self._done += episodes

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def line(self) -> str | None:
        """What the next beat prints, or None when no phase is set."""
        with self._lock:
            if self._text is None:
                return None
            counted = f", {self._done} of {self._total} done" if self._total else ""
            return f"{self._text}{counted}, {time.monotonic() - self._started:.0f} s"

    def _beat(self) -> None:
        while not self._stop.wait(min(1.0, self.every)):
            with self._lock:
                due = self._text is not None and time.monotonic() - self._printed >= self.every
                if due:
                    self._printed = time.monotonic()
            text = self.line() if due else None
            if text is not None:
                self.write(text)
