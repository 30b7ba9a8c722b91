"""The window of recent events a watch can resume from (kube's watchCache ring buffer).

kube keeps at least `eventFreshDuration` (75 s) of events, growing the buffer (doubling, up to 102,400)
only when it is full of fresh events and otherwise dropping the oldest; a watch from a revision older
than the window gets 410 Expired, and the client re-lists. The same window answers "what was the state
at revision R" for paginated lists: undoing the events after R from the current state.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from registry.generic.cache.stored import StoredObject
from registry.generic.options import WatchEvent
from storage.interface import EventType

FRESH_FOR = 75.0
MIN_CAPACITY = 100
MAX_CAPACITY = 102_400


@dataclass(slots=True, eq=False)
class CacheEvent:
    """One change as the cache saw it: `object` is the new state (for DELETED, the last state at the
    delete's revision) and `prev` the state before (None for ADDED)."""

    type: EventType
    revision: int
    key: str
    object: StoredObject
    prev: StoredObject | None
    # The previous state reported at this event's revision: what a watcher whose selector the object
    # leaves receives as DELETED. Built on first use, shared by every such watcher.
    _prev_here: StoredObject | None = field(default=None, repr=False)
    # The event as every watcher without a selector receives it, with its shared encodings.
    _unfiltered: WatchEvent | None = field(default=None, repr=False)

    def unfiltered(self) -> WatchEvent:
        if self._unfiltered is None:
            self._unfiltered = WatchEvent(self.type.value, self.object, self.revision, encodings={})
        return self._unfiltered

    def prev_at_revision(self) -> StoredObject:
        assert self.prev is not None
        if self._prev_here is None:
            self._prev_here = self.prev.at_revision(self.revision)
        return self._prev_here


class EventWindow:
    """Events in revision order with their arrival times; a list with a moving head, so resuming
    bisects by revision instead of scanning."""

    def __init__(
        self,
        revision: int = 0,
        *,
        fresh_for: float = FRESH_FOR,
        min_capacity: int = MIN_CAPACITY,
        max_capacity: int = MAX_CAPACITY,
    ) -> None:
        self.fresh_for = fresh_for
        self.min_capacity = min_capacity
        self.max_capacity = max_capacity
        self.reset(revision)

    def reset(self, revision: int) -> None:
        """Forget every event: a watch can resume from `revision` on (the state was read there)."""
        self._events: list[CacheEvent] = []
        self._revisions: list[int] = []
        self._times: list[float] = []
        self._head = 0
        self.capacity = self.min_capacity
        # A watch from this revision or newer can be served: every event after it is held.
        self.oldest_resumable = revision
        # False until an event is dropped: before that, an older revision is not "expired", this
        # cache just started later (a restart, a relist) and storage may still have its history.
        self.evicted = False

    def __len__(self) -> int:
        return len(self._events) - self._head

    def append(self, event: CacheEvent, now: float) -> None:
        """kube's resizeCacheLocked, then updateCache: grow when full of fresh events, shrink when full
        and even the newest quarter is stale, and otherwise drop the oldest to make room."""
        size = len(self)
        if size >= self.capacity:
            if now - self._times[self._head] < self.fresh_for:
                self.capacity = min(self.capacity * 2, self.max_capacity)
            elif now - self._times[len(self._events) - self.capacity // 4] > self.fresh_for:
                self.capacity = max(self.capacity // 2, self.min_capacity)
            while len(self) >= self.capacity:
                self._evict_oldest()
        self._events.append(event)
        self._revisions.append(event.revision)
        self._times.append(now)

    def _evict_oldest(self) -> None:
        self.evicted = True
        self.oldest_resumable = self._revisions[self._head]
        self._head += 1
        if self._head >= 1024 and self._head * 2 >= len(self._events):
            del self._events[: self._head], self._revisions[: self._head], self._times[: self._head]
            self._head = 0

    def covers(self, revision: int) -> bool:
        """Whether every event after `revision` is held (a watch or snapshot from it can be served)."""
        return revision >= self.oldest_resumable

    def since(self, revision: int) -> list[CacheEvent]:
        """The held events after `revision`, oldest first (callers check `covers` first)."""
        start = bisect.bisect_right(self._revisions, revision, lo=self._head)
        return self._events[start:]
