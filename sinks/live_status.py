"""A live status line under the log of a long-running command (`ingest`, `demo`).

    with LiveStatus(enabled=not args.no_progress) as live:
        run_ingest(spark, cfg, log=live.log, status=live.update)

On a terminal, the last `update` text stays on the bottom line and is rewritten in place
(carriage return + ANSI clear-line), cut to the terminal's width so it never wraps, and
redrawn at most every `interval` seconds; `log` lines scroll above it. Anywhere else (a
pipe, a file, CI) `update` does nothing and `log` is `print`, flushed at once: the output is byte for byte
what it is without the status, so scripts and logs never see control codes. Closing (also
on an error or Ctrl-C, through the `with`) clears the line, so the shell prompt starts clean.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from typing import TextIO

CLEAR_LINE = "\r\x1b[2K"


class LiveStatus:
    """The status line of one command run; `log` and `update` may be called from any thread
    (Spark runs foreachBatch callbacks on its own threads)."""

    def __init__(self, stream: TextIO | None = None, enabled: bool = True, interval: float = 0.25):
        self.stream = stream or sys.stdout
        self.active = enabled and self.stream.isatty()
        self.interval = interval
        self._text = ""
        self._shown = False
        self._updated_at = float("-inf")
        # re-entrant: Ctrl-C can interrupt a write while the lock is held, then close() runs
        self._lock = threading.RLock()

    def log(self, line: str) -> None:
        """Print a line above the status (the status is cleared, the line printed, the status redrawn)."""
        if not self.active:  # flushed: a pipe or a file (docker compose logs) sees each line as it is logged
            print(line, file=self.stream, flush=True)
            return
        with self._lock:
            self._clear()
            self.stream.write(line + "\n")
            self._draw()

    def update(self, text: str) -> None:
        """Show `text` as the status; drawn now unless the last drawn update is under `interval`
        old (then the text is kept for the next redraw). Redraws after `log` lines do not count."""
        if not self.active:
            return
        with self._lock:
            self._text = text
            now = time.monotonic()
            if now - self._updated_at >= self.interval:
                self._updated_at = now
                self._draw()

    def close(self) -> None:
        """Clear the status line; later calls print plain lines."""
        with self._lock:
            if self.active:
                self._clear()
                self.stream.flush()
            self.active = False

    def __enter__(self) -> LiveStatus:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _clear(self) -> None:
        if self._shown:
            self.stream.write(CLEAR_LINE)
            self._shown = False

    def _draw(self) -> None:
        """(Re)write the status from the line's start, whatever the cursor's column."""
        if self._text:
            # one column spare: a line filling the last column makes some terminals wrap
            width = shutil.get_terminal_size().columns - 1
            self.stream.write(CLEAR_LINE + self._text[:width])
            self._shown = True
        self.stream.flush()


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true",
                        help="no live status line on a terminal (it is never shown when output is not a terminal)")
