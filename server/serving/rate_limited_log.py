"""One log line per cause per interval, with how many were left out: for what clients can trigger at will.

Why: a malformed request, an oversized header or a slowloris client costs an attacker nothing, and a
log line (worse, a traceback) for each one lets anyone flood the server's log. Operators still need to
know it happens, so each cause is logged once per ``interval`` with the number of repeats since.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

INTERVAL = 60.0


class RateLimitedLog:
    """``log(cause, message, *args)`` logs at ``level`` at most once per ``interval`` per cause."""

    __slots__ = ("_clock", "_interval", "_last", "_level", "_logger", "_suppressed")

    def __init__(
        self,
        logger: logging.Logger,
        level: int = logging.INFO,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger, self._level, self._interval, self._clock = logger, level, interval, clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def log(self, cause: str, message: str, *args: object) -> bool:
        """Log unless ``cause`` was logged less than ``interval`` ago; return whether it was logged."""
        now = self._clock()
        last = self._last.get(cause)
        if last is not None and now - last < self._interval:
            self._suppressed[cause] = self._suppressed.get(cause, 0) + 1
            return False
        self._last[cause] = now
        repeats = self._suppressed.pop(cause, 0)
        if repeats:
            message += " (%d more since the last report)"
            args = (*args, repeats)
        self._logger.log(self._level, message, *args)
        return True
