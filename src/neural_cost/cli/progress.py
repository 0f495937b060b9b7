"""One progress line on a terminal, redrawn in place; nothing at all when stderr is piped.

``neural-cost: timing [########········] 9/20 · 3.1 s`` — the stage (loading, compiling,
warmup, timing, calibrating, tracing), a bar when the stage counts runs, and the time since
the start. Each redraw returns to the start of the line with ``\\r`` and pads over the
previous text; ``close`` ends the line with a newline so what follows starts clean. Plain
text, no dependency: a bar is one line of ``\\r`` and padding, which any terminal draws.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import TextIO

PREFIX = "neural-cost: "
BAR_WIDTH = 20
#: Between redraws of the same stage: a fast workload's 1,000 runs must not flood the terminal.
MIN_REDRAW_SECONDS = 0.1


class Progress:
    """Draws on ``stream`` only when it is a terminal (``isatty()``); otherwise every call is a no-op."""

    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic) -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(callable(isatty) and isatty())
        self._stream = stream
        self._clock = clock
        self._start = clock()
        self._last_draw = -float("inf")
        self._stage = ""
        self._text = ""  # what the line shows now ("" before the first draw)

    def stage(self, name: str) -> None:
        """A stage without a count (loading, compiling, tracing): shown at once."""
        self._stage = name
        self._draw(name, force=True)

    def runs(self, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` runs of ``stage``; the signature of ``measure.reporting_progress``."""
        changed = stage != self._stage
        self._stage = stage
        filled = BAR_WIDTH * done // total if total > 0 else BAR_WIDTH
        bar = "#" * filled + "·" * (BAR_WIDTH - filled)
        self._draw(f"{stage} [{bar}] {done}/{total}", force=changed or done == total)

    def close(self, final: str | None = None) -> None:
        """End the line (with ``final`` in place of the last stage when given); nothing if nothing was drawn."""
        if not self.enabled or not self._text:
            return
        if final is not None:
            self._draw(final, force=True)
        self._stream.write("\n")
        self._stream.flush()
        self._text = ""

    def _draw(self, status: str, *, force: bool) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if not force and now - self._last_draw < MIN_REDRAW_SECONDS:
            return
        self._last_draw = now
        text = f"{PREFIX}{status} · {now - self._start:.1f} s"
        # One column short of the width: a line that fills the terminal wraps, and \r then
        # returns only to the start of the wrapped part.
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        if len(text) > columns:
            text = text[: max(columns - 1, 0)] + "…"
        padding = " " * max(len(self._text) - len(text), 0)  # covers a longer previous line
        self._stream.write(f"\r{text}{padding}")
        self._stream.flush()
        self._text = text
