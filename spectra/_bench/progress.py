"""Progress on stderr: case i/N, elapsed, ETA.

On a terminal (and without ``CI`` set): one ``\\r`` line refreshed every 0.5 s by a ticker.
Otherwise (stderr piped to a file or a log, CI): one plain line per case as it starts, so a
long run still shows where it is. The text (case, ETA from the finished cases) is our own,
so a progress-bar package adds nothing (and tqdm printed nothing at all on a
pseudo-terminal that reports 0 columns).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO


def enabled(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("CI")


def fmt_s(s: float) -> str:
    s = max(0, int(s))
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    """``with Progress(total) as p: p.step("n=8 ...")`` before each case."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        on: bool | None = None,
        lines: bool | None = None,
    ):
        self.total = total
        self.stream = stream or sys.stderr
        self.on = enabled(self.stream) if on is None else on
        #: plain lines, one per case, when the refreshed line is off (``lines=False``: silent)
        self.lines = (not self.on) if lines is None else lines
        self.done = -1
        self.label = ""
        self.t0 = time.perf_counter()
        self.t_case = self.t0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def text(self, now: float | None = None) -> str:
        now = time.perf_counter() if now is None else now
        elapsed = now - self.t0
        done = max(self.done, 0)
        if done > 0:
            # finished cases set the pace; the running one counts as at least half done
            per = (self.t_case - self.t0) / done
            left = per * (self.total - done) - min(now - self.t_case, per / 2)
            eta = fmt_s(max(left, 0))
        else:
            eta = "?"
        return f"case {done + 1}/{self.total} {self.label}  [{fmt_s(elapsed)}, ETA {eta}]"

    def step(self, label: str) -> None:
        with self._lock:
            self.done += 1
            self.t_case = time.perf_counter()
            self.label = label
        if self.on:
            self._draw()
        elif self.lines:
            self.stream.write(self.text() + "\n")
            self.stream.flush()

    def _draw(self) -> None:
        if not self.on:
            return
        with self._lock:
            line = self.text()
            self.stream.write("\r" + line.ljust(78)[:120])
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def __enter__(self) -> Progress:
        if self.on:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.on:
            self.stream.write("\r" + " " * 80 + "\r")
            self.stream.flush()
