"""Give freed connection memory back to the OS (glibc ``malloc_trim``) after a burst of connections.

Why: a connection's memory is many small allocations (Python objects, OpenSSL's per-connection
state) interleaved in glibc's heap with long-lived ones. When thousands of connections close, that
memory is free but glibc only returns the top of a heap by itself, so RSS stayed where the peak left
it: measured +62 MB after 2,000 idle TLS connections came and went. ``malloc_trim(0)`` also
releases free pages inside the heap; measured, it brings RSS back to within a few MB of idle.

Opening connections leaves the same kind of free memory: a TLS handshake holds tens of KB of
buffers that are freed when it completes, between the small objects the connection keeps. Measured
with 1,000 watches opened concurrently: +71 MB of RSS, +47 MB after a trim (+44 MB when opened one
by one). So handshakes count as well as closes, as Go's background scavenger returns free pages
whatever freed them.

It costs a walk over the heap's free chunks, so it runs only after ``after_events`` handshakes or
closes, once they pause for ``delay`` seconds (or every ``max_wait`` seconds while they go on), and in
a worker thread (ctypes releases the GIL for the call): the event loop never waits for it. Without
glibc (e.g. musl) this does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

AFTER_EVENTS = 256
DELAY = 2.0
MAX_WAIT = 10.0


def _find_malloc_trim() -> Callable[[int], int] | None:
    with contextlib.suppress(OSError, AttributeError):
        trim = ctypes.CDLL(None).malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return trim
    return None


_MALLOC_TRIM = _find_malloc_trim()


class HeapTrimmer:
    """Counts handshakes and closes; after enough of them, trims the heap once they pause.

    A trim runs ``delay`` seconds after the last of a burst's events (so it sees the whole burst),
    or at the latest ``max_wait`` seconds after the burst began if connections keep coming.
    """

    __slots__ = (
        "_after_events",
        "_began",
        "_delay",
        "_events",
        "_latest",
        "_max_wait",
        "_scheduled",
        "_trim",
    )

    def __init__(
        self,
        *,
        after_events: int = AFTER_EVENTS,
        delay: float = DELAY,
        max_wait: float = MAX_WAIT,
        trim: Callable[[int], int] | None = _MALLOC_TRIM,
    ) -> None:
        self._after_events, self._delay, self._max_wait = after_events, delay, max_wait
        self._trim = trim
        self._events = 0
        self._began = self._latest = 0.0
        self._scheduled = False

    @property
    def available(self) -> bool:
        return self._trim is not None

    def connection_changed(self, loop: asyncio.AbstractEventLoop) -> None:
        """Call on the event loop whenever a TLS handshake completes or a connection is gone."""
        self._events += 1
        self._latest = now = loop.time()
        if self._trim is None or self._scheduled or self._events < self._after_events:
            return
        self._scheduled = True
        self._began = now
        loop.call_at(now + self._delay, self._due, loop)

    def _due(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        quiet_at = self._latest + self._delay
        latest_at = self._began + self._max_wait
        if quiet_at > now and latest_at > now:
            loop.call_at(min(quiet_at, latest_at), self._due, loop)  # the burst goes on
            return
        self._scheduled = False
        self._events = 0
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
