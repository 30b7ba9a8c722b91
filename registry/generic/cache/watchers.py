"""One watch served from the cache: its filter, and the queue between the dispatcher and the stream.

The dispatcher never waits for a watcher (kube's cacher dispatches with a non-blocking send): it first
offers the event to `write_now`, which the HTTP layer provides to write straight into the connection
when nothing is queued and the connection takes data; otherwise the event is queued for the stream's
own task. A watcher whose queue is full cannot keep up: it is ended (the client re-watches from its
last resourceVersion), so it can neither hold memory without bound nor slow the others down.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from apis.meta.errors import StatusError
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.window import CacheEvent
from registry.generic.options import Predicate, WatchEvent
from storage.interface import EventType

# kube sizes a watcher's channel from the window capacity, within [10, 1000] for an indexed watch;
# this queue holds references to shared encoded objects, so a fixed generous bound is cheap.
QUEUE_CAPACITY = 1000

# Why a watch ended without the client asking: kube closes such watches and the client re-watches.
TOO_SLOW = "the watcher could not keep up with the event rate"
REINITIALIZED = "the watch cache was re-initialized"
STOPPED = "the watch cache was stopped"

WriteNow = Callable[[WatchEvent], bool]


class Wakeup:
    """asyncio.Event's set/clear/wait for one waiter, without its per-instance deque and dict.

    Every open watch holds one for its whole life; asyncio.Event costs ~1 KB there (its waiter
    deque's first block alone is ~0.6 KB), this ~100 bytes. Only the watch's own stream waits on it.
    """

    __slots__ = ("_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> None:
        if self._set:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None


class CacheWatcher:
    __slots__ = (
        "_queue",
        "after",
        "capacity",
        "ended",
        "error",
        "filtered",
        "namespace_prefix",
        "predicate",
        "wakeup",
        "write_now",
    )

    def __init__(self, predicate: Predicate, namespace_prefix: str, after: int) -> None:
        self.predicate = predicate
        # Asked once per event for every watcher: a fan-out to a thousand watchers asks it a thousand times.
        self.filtered = not predicate.empty
        # Key prefix of the watched namespace, "" for every namespace.
        self.namespace_prefix = namespace_prefix
        # Events at or below this revision were in the initial state or came before the requested
        # resourceVersion: never sent (kube's cacheWatcher drops rv <= its resourceVersion).
        self.after = after
        # Made when the first event has to wait, dropped when drained: a deque's first block is ~0.6 KB,
        # and most watches of a quiet resource never queue (events go straight into the connection).
        self._queue: deque[WatchEvent] | None = None
        self.capacity = QUEUE_CAPACITY
        self.wakeup = Wakeup()
        self.write_now: WriteNow | None = None
        self.ended: str | None = None
        # Set when the watch ends on an error the client must see (an ERROR event), e.g. 410.
        self.error: StatusError | None = None

    @property
    def pending(self) -> deque[WatchEvent] | tuple[()]:
        """What waits for the stream's own task, oldest first (read-only; see `take`)."""
        return self._queue if self._queue is not None else ()

    def queue(self, events: Iterable[WatchEvent]) -> None:
        """Queue events regardless of capacity (the initial state a watch starts with)."""
        if self._queue is None:
            self._queue = deque(events)
        else:
            self._queue.extend(events)
        if self._queue:
            self.wakeup.set()
        else:
            self._queue = None

    def take(self) -> WatchEvent | None:
        """The oldest queued event, None when nothing is queued."""
        queue = self._queue
        if not queue:
            return None
        event = queue.popleft()
        if not queue:
            self._queue = None
        return event

    def matches(self, obj: StoredObject) -> bool:
        return self.predicate.matches(obj.labels, obj.fields)

    def translate(self, event: CacheEvent) -> WatchEvent | None:
        """kube's selector rule: leaving the selector is DELETED (the old state at this revision),
        entering it is ADDED."""
        if not self.filtered:
            return event.unfiltered()
        now = self.matches(event.object)
        if event.type is EventType.DELETED:
            return WatchEvent("DELETED", event.object, event.revision) if now else None
        if event.prev is None:
            return WatchEvent("ADDED", event.object, event.revision) if now else None
        before = self.matches(event.prev)
        if now:
            return WatchEvent("MODIFIED" if before else "ADDED", event.object, event.revision)
        if before:
            return WatchEvent("DELETED", event.prev_at_revision(), event.revision)
        return None

    def dispatch(self, event: CacheEvent) -> None:
        if self.ended is not None or event.revision <= self.after:
            return
        if self.namespace_prefix and not event.key.startswith(self.namespace_prefix):
            return
        translated = self.translate(event)
        if translated is not None:
            self.offer(translated)

    def offer(self, event: WatchEvent) -> None:
        if self.ended is not None:
            return
        queue = self._queue
        if queue is None:
            if self.write_now is not None and self.write_now(event):
                return
            queue = self._queue = deque()
        elif len(queue) >= self.capacity:
            self.end(TOO_SLOW)
            return
        queue.append(event)
        self.wakeup.set()

    def fail(self, error: StatusError) -> None:
        """End after what is queued, with an ERROR event."""
        if self.ended is None:
            self.ended = error.message
            self.error = error
            self.wakeup.set()

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
            self._queue = None
            self.wakeup.set()


@dataclass(frozen=True, slots=True)
class OpenWatch:
    """A started watch, from the cache or read through: the watcher whose queue the stream drains,
    the revision a bookmark for it may report now, and how to stop it (each given the watcher, so
    that a cache's own methods serve every watch without a closure per watch)."""

    watcher: CacheWatcher
    progress: Callable[[CacheWatcher], int]
    stop: Callable[[CacheWatcher], object]
