"""The progress line on stderr: rewritten in place on a terminal; elsewhere (logs), one line when the
workload changes or at most every PLAIN_EVERY_S seconds (``each``: one line per step). Warnings always get their
own line."""
from __future__ import annotations

import sys
import time

PLAIN_EVERY_S = 10.0


class Progress:
    def __init__(self, stream=None, enabled: bool = True, each: bool = False):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.each = each
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total = 0
        self.done = 0
        self._start = self._last_print = time.perf_counter()
        self._last_head = None
        self._width = 0

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._start = time.perf_counter()

    def step(self, label: str) -> None:
        """Announces the next piece of work."""
        self.done += 1
        if not self.enabled:
            return
        now = time.perf_counter()
        count = f"{min(self.done, self.total):>{len(str(self.total))}}/{self.total}"
        line = f"[{count}] {now - self._start:6.1f} s  {label}"
        head = label.split(" ")[0]
        if self.tty:
            self._write("\r" + line.ljust(self._width))
            self._width = len(line)
        elif self.each or head != self._last_head or now - self._last_print >= PLAIN_EVERY_S:
            self._write(line + "\n")
            self._last_print = now
        self._last_head = head

    def warn(self, message: str) -> None:
        """A line that stays (mismatches, errors), even when progress is off."""
        if self.tty and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0
        self._write(f"!! {message}\n")

    def finish(self) -> None:
        if self.tty and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0
        if self.enabled:
            self._write(f"done in {time.perf_counter() - self._start:.1f} s\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
