"""Give the memory of closed connections back to the OS (glibc ``malloc_trim``) after a burst of closes.

Why: a connection's memory is many small allocations (Python objects, OpenSSL's per-connection
state) interleaved in glibc's heap with long-lived ones. When thousands of connections close, that
memory is free but glibc only returns the top of a heap by itself, so RSS stayed where the peak left
it: measured +62 MB after 2,000 idle TLS connections came and went. ``malloc_trim(0)`` also
releases free pages inside the heap; measured, it brings RSS back to within a few MB of idle.

It costs a walk over the heap's free chunks, so it runs only after ``after_closes`` connections
closed, a moment later (so it sees the whole burst), at most every ``min_interval`` seconds, and in
a worker thread: the event loop never waits for it. Without glibc (e.g. musl) this does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

AFTER_CLOSES = 256
DELAY = 2.0
MIN_INTERVAL = 30.0


def _find_malloc_trim() -> Callable[[int], int] | None:
    with contextlib.suppress(OSError, AttributeError):
        trim = ctypes.CDLL(None).malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return trim
    return None


_MALLOC_TRIM = _find_malloc_trim()


class HeapTrimmer:
    """Counts closed connections and trims the heap in a thread after enough of them closed."""

    __slots__ = ("_after_closes", "_closed", "_delay", "_last", "_min_interval", "_scheduled", "_trim")

    def __init__(
        self,
        *,
        after_closes: int = AFTER_CLOSES,
        delay: float = DELAY,
        min_interval: float = MIN_INTERVAL,
        trim: Callable[[int], int] | None = _MALLOC_TRIM,
    ) -> None:
        self._after_closes, self._delay, self._min_interval = after_closes, delay, min_interval
        self._trim = trim
        self._closed = 0
        self._last = float("-inf")
        self._scheduled = False

    @property
    def available(self) -> bool:
        return self._trim is not None

    def connection_closed(self, loop: asyncio.AbstractEventLoop) -> None:
        """Call on the event loop whenever a connection is gone."""
        self._closed += 1
        if self._trim is None or self._scheduled or self._closed < self._after_closes:
            return
        self._scheduled = True
        wait = max(self._delay, self._last + self._min_interval - time.monotonic())
        loop.call_later(wait, self._start, loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._scheduled = False
        self._closed = 0
        self._last = time.monotonic()
        try:
            future = loop.run_in_executor(None, self._run)
        except RuntimeError:  # the loop or its executor is shutting down: nothing left to trim for
            return
        future.add_done_callback(_log_failure)

    def _run(self) -> None:
        assert self._trim is not None
        began = time.perf_counter()
        released = self._trim(0)
        took = (time.perf_counter() - began) * 1000
        logger.debug("malloc_trim released memory: %s, in %.1f ms", bool(released), took)


def _log_failure(future: asyncio.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.warning("malloc_trim failed: %s", future.exception())
