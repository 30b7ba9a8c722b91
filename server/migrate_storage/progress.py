"""How far a migration is: a redrawn bar on a terminal, plain log lines anywhere else.

A terminal gets one line redrawn in place (objects done/total, rate, ETA, the resource); a log file or
a pipe gets a line at most every LOG_INTERVAL seconds, each carrying the continue point, so even a run
killed without warning (SIGKILL, a node gone) can be resumed from the last line it logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from registry.generic.storage_migration import PageDone

logger = logging.getLogger("pizza-apiserver.migrate-storage")

LOG_INTERVAL = 1.0
BAR_WIDTH = 30


@dataclass
class Progress:
    """Objects examined against the total counted at the start (which writes going on may change)."""

    total: int
    stream: TextIO
    interactive: bool
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    # Every key up to this one is done (None: nothing yet in this run).
    continue_point: str | None = None
    _started: float = field(init=False)
    _logged: float = field(init=False, default=float("-inf"))

    def __post_init__(self) -> None:
        self._started = self.clock()

    def page(self, page: PageDone) -> None:
        self.done += page.objects
        self.continue_point = page.last_key
        now = self.clock()
        if self.interactive:
            self.stream.write("\r" + self.line(page.target.name, now) + "\x1b[K")
            self.stream.flush()
        elif now - self._logged >= LOG_INTERVAL or self.done >= self.total:
            self._logged = now
            logger.info("%s; continue point %s", self.line(page.target.name, now), self.continue_point)

    def finish(self) -> None:
        """End the redrawn line, so what follows starts on a line of its own."""
        if self.interactive and self.done:
            self.stream.write("\n")
            self.stream.flush()

    def line(self, resource: str, now: float) -> str:
        total = max(self.total, self.done)  # objects created meanwhile may push past the first count
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        left = (total - self.done) / rate if rate > 0 else 0.0
        text = f"{self.done}/{total} objects, {rate:.0f}/s, ETA {_clock(left)}, {resource}"
        if not self.interactive:
            return text
        filled = BAR_WIDTH * self.done // total if total else BAR_WIDTH
        return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {text}"


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
