"""A rate-limited work queue with client-go's workqueue semantics, for worker threads.

Why not a plain `queue.Queue`: a controller reconciles *keys*, not events. client-go's queue
(k8s.io/client-go/util/workqueue) guarantees what reconcilers rely on, and this keeps the same rules:

- a key waiting in the queue is there once, however many events named it (the `dirty` set);
- a key is never handed to two workers at once: a key added while a worker holds it (the
  `processing` set) is only marked dirty and goes back into the queue when that worker calls `done`;
- `add_rate_limited` retries a key after a per-key exponential backoff (base * 2^failures, capped),
  and `forget` resets the key's failure count once it reconciled.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)
class ExponentialBackoff(Generic[K]):
    """client-go's ItemExponentialFailureRateLimiter: base * 2^(failures so far), capped at `cap`."""

    base: float = 0.005
    cap: float = 1000.0
    failures: dict[K, int] = field(default_factory=dict)

    def when(self, key: K) -> float:
        count = self.failures.get(key, 0)
        self.failures[key] = count + 1
        return min(self.base * (2**count), self.cap)

    def forget(self, key: K) -> None:
        self.failures.pop(key, None)

    def retries(self, key: K) -> int:
        return self.failures.get(key, 0)


class ShutDown(Exception):
    """`get` on a queue that was shut down and has nothing left: the worker should return."""


class WorkQueue(Generic[K]):
    """Keys to reconcile, deduplicated, one worker per key at a time, retried with backoff.

    Thread-safe: informer threads add, worker threads get/done; delayed keys move into the queue when
    a getter wakes for them (no timer thread).
    """

    def __init__(self, backoff: ExponentialBackoff[K] | None = None) -> None:
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: list[tuple[float, int, K]] = []  # (ready at, tie-breaker, key), a heap
        self._sequence = itertools.count()
        self._backoff: ExponentialBackoff[K] = backoff or ExponentialBackoff()
        self._clock = time.monotonic
        self._cond = threading.Condition()
        self._shutting_down = False

    # --- adding -----------------------------------------------------------------------------

    def add(self, key: K) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return  # `done` queues it again: never two workers on one key
        self._queue.append(key)
        self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        """Queue the key once `delay` seconds have passed (at once when delay <= 0)."""
        with self._cond:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(key)
                return
            heapq.heappush(self._waiting, (self._clock() + delay, next(self._sequence), key))
            self._cond.notify_all()  # a getter may have to wake earlier than it planned

    def add_rate_limited(self, key: K) -> float:
        """Retry the key after its backoff; returns the delay chosen."""
        delay = self._backoff.when(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """The key reconciled: its next failure starts the backoff from the base again."""
        self._backoff.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._backoff.retries(key)

    # --- working ----------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> K:
        """The next key, now marked processing; blocks until there is one.

        Raises ShutDown once the queue is shut down and empty, TimeoutError after `timeout`.
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                self._promote_ready_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shutting_down:
                    raise ShutDown
                now = self._clock()
                if deadline is not None and now >= deadline:
                    raise TimeoutError
                limits = (self._next_ready_in(now), None if deadline is None else deadline - now)
                bounded = [limit for limit in limits if limit is not None]
                self._cond.wait(min(bounded) if bounded else None)

    def done(self, key: K) -> None:
        """The worker finished with the key; if it was added meanwhile, it is queued again now."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def _next_ready_in(self, now: float) -> float | None:
        return max(self._waiting[0][0] - now, 0.0) if self._waiting else None

    def _promote_ready_locked(self) -> None:
        now = self._clock()
        while self._waiting and self._waiting[0][0] <= now:
            _, _, key = heapq.heappop(self._waiting)
            self._add_locked(key)

    # --- lifecycle --------------------------------------------------------------------------

    def shut_down(self) -> None:
        """No more adds; workers drain what is queued, then `get` raises ShutDown."""
        with self._cond:
            self._shutting_down = True
            self._waiting.clear()
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down
