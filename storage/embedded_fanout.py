"""In-process watch fan-out for the embedded backend.

Writers never wait for watchers: publishing appends to each matching subscriber's bounded buffer and
returns. A subscriber whose buffer is full has fallen too far behind; rather than block every writer
(or buffer without limit), it is cut off — it first drains what it already has, then its iterator
raises WatcherTooSlow. That error is an Unavailable, so the API layer ends the watch with a retriable
error and the client re-watches from its last seen resourceVersion (kube's cacher likewise closes
watchers that cannot keep up).

All methods run on the event loop; the storage executor reaches `publish` via call_soon_threadsafe,
which preserves commit order.

Progress: a watcher may ask for a PROGRESS marker at revision R (the store's revision when it asked,
which another worker process may have reached before this one delivered it). The marker is queued in
the watcher's buffer only once everything up to R has been published here, so it always comes after
every event at or below R.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from storage.interface import Event, EventType, Unavailable


class WatcherTooSlow(Unavailable):
    """The watcher stopped reading and its buffer filled up; it must re-watch from its last revision."""


@dataclass(slots=True, eq=False)
class Subscriber:
    """One watcher's mailbox: buffered events plus whether it was cut off or the store closed."""

    prefix: str
    capacity: int
    pending: deque[Event] = field(default_factory=deque)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    failure: WatcherTooSlow | None = None
    closed: bool = False

    def offer(self, event: Event) -> bool:
        """Buffer the event; False (and the subscriber is failed) when the buffer is already full."""
        if len(self.pending) >= self.capacity:
            self.failure = WatcherTooSlow(
                event.key,
                f"watcher fell more than {self.capacity} events behind (at revision {event.revision})",
            )
        else:
            self.pending.append(event)
        self.wakeup.set()
        return self.failure is None

    def mark_progress(self, revision: int) -> None:
        """Queue a PROGRESS event after everything already buffered (it never counts against capacity)."""
        self.pending.append(Event(EventType.PROGRESS, "", b"", revision, None))
        self.wakeup.set()

    def fail(self, reason: str) -> None:
        """Cut the subscriber off: it drains what it has, then raises WatcherTooSlow."""
        self.failure = WatcherTooSlow("", reason)
        self.wakeup.set()

    def end(self) -> None:
        self.closed = True
        self.wakeup.set()

    async def next(self) -> Event | None:
        """The next buffered event; None once the store closed. Raises WatcherTooSlow after draining."""
        while True:
            if self.closed:
                return None
            if self.pending:
                return self.pending.popleft()
            if self.failure is not None:
                raise self.failure
            self.wakeup.clear()
            await self.wakeup.wait()


class Fanout:
    """Routes each committed event to the subscribers whose directory prefix contains its key."""

    def __init__(self, revision: int, capacity: int) -> None:
        # The newest revision handed to subscribers: a watcher subscribing now sees everything after it.
        self.published_revision = revision
        self._capacity = capacity
        self._subscribers: set[Subscriber] = set()
        # Progress markers waiting for their revision to be published: (revision, subscriber).
        self._progress: list[tuple[int, Subscriber]] = []
        self._closed = False

    def subscribe(self, prefix: str) -> Subscriber:
        subscriber = Subscriber(prefix=prefix, capacity=self._capacity)
        if self._closed:
            subscriber.end()
        else:
            self._subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.discard(subscriber)
        if self._progress:
            self._progress = [(rev, sub) for rev, sub in self._progress if sub is not subscriber]

    def publish(self, events: list[Event], revision: int, lost: bool = False) -> None:
        """Route `events` (in revision order); everything up to `revision` is now published.

        `lost`: history before `revision` was compacted before this process could deliver it, so
        every watcher is cut off (it re-watches and, if that is too old, gets 410 and re-lists).
        """
        if lost:
            for subscriber in self._subscribers:
                subscriber.fail(f"history before revision {revision} was compacted before delivery")
            self._subscribers.clear()
        for event in events:
            dropped = [
                subscriber
                for subscriber in self._subscribers
                if event.key.startswith(subscriber.prefix) and not subscriber.offer(event)
            ]
            self._subscribers.difference_update(dropped)
        self.published_revision = max(self.published_revision, revision)
        if self._progress:
            ready = [(rev, sub) for rev, sub in self._progress if rev <= self.published_revision]
            self._progress = [(rev, sub) for rev, sub in self._progress if rev > self.published_revision]
            for rev, subscriber in ready:
                subscriber.mark_progress(rev)

    def request_progress(self, subscriber: Subscriber, revision: int) -> None:
        """Queue PROGRESS at `revision` for `subscriber` once everything up to it was published."""
        if revision <= self.published_revision:
            subscriber.mark_progress(revision)
        else:
            self._progress.append((revision, subscriber))

    def close(self) -> None:
        self._closed = True
        for subscriber in self._subscribers:
            subscriber.end()
        self._subscribers.clear()
        self._progress.clear()
