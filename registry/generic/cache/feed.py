"""Keeps a group's resource caches current: one list, then one storage watch over the group's keys.

kube runs one reflector per resource. Here one feed serves every resource of a group, because one
stream over `/<group>/` tells each cache more: an event of any resource proves that every change of
the others up to that revision has been seen, so consistent reads and bookmarks advance with the
group's writes, not only with the resource's own (and, where the backend offers progress
notifications, with every write in the store).

A failed or compacted watch makes the feed not ready: its watchers are ended (the clients re-watch),
reads go to storage, and the feed lists again after a short back-off (kube's reflector relist).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from registry.generic.cache.watchers import REINITIALIZED, STOPPED
from storage import interface as st

if TYPE_CHECKING:
    from registry.generic.cache.derived import DerivedCache
    from registry.generic.cache.resource_cache import ResourceCache
    from registry.generic.cache.stored import StoredObject

logger = logging.getLogger(__name__)

# kube lists the resource in pages of 10,000 when (re)filling the cache.
LIST_PAGE = 10_000
# kube's blockTimeout: how long a read waits for the cache to reach a revision before giving up.
BLOCK_TIMEOUT = 3.0
# A read "not older than N" on storage that cannot report progress (an etcd before 3.5.13) waits this
# long for an event already on its way (N is usually a client's own write), then goes to storage.
IN_FLIGHT_WAIT = 0.02
# kube's progressRequestPeriod: while readers wait, progress is asked for again this often (etcd drops
# a request while a watcher on the stream is catching up, and a lagging member may answer too low).
PROGRESS_PERIOD = 0.1
# Bookmarks are due every second or so; a progress request then moves their resourceVersion on
# without writes.
PROGRESS_EVERY = 1.0
# Objects decoded between two yields to the loop while (re)filling: a large list must not stall it.
DECODE_BATCH = 200
MAX_RETRY_DELAY = 5.0


class Unserved(Exception):
    """The cache cannot answer this read as asked (not ready, or not provably fresh): read storage."""


class Companion(Protocol):
    """Something fed by the caches that runs while the feed runs (a graceful deletion finisher)."""

    def start(self) -> None: ...
    async def stop(self) -> None: ...


class GroupFeed:
    def __init__(
        self,
        storage: st.Interface,
        prefix: str,
        caches: Sequence[ResourceCache],
        *,
        derived: Sequence[DerivedCache] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.storage = storage
        self.prefix = prefix
        self.caches = tuple(caches)
        # Caches of resources without storage, computed from the caches' events (derived.py): each is
        # told of every event after the cache it came from has taken it in, in revision order.
        self.derived = tuple(derived)
        self.clock = clock
        # Every change at or below this revision under `prefix` is in the caches.
        self.revision = 0
        self.ready = False
        self._stream: st.WatchStream | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        # The highest revision a progress request was sent for on the current stream: readers that
        # wait for that revision or an older one share it (kube's ConditionalProgressRequester).
        self._asked_for = 0
        self._asker: asyncio.Task[None] | None = None
        # Started and stopped with the feed.
        self.companions: list[Companion] = []
        for cache in self.caches:
            cache.feed = self
        for view in self.derived:
            view.bind(self)

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run()), loop.create_task(self._tick())]
        for companion in self.companions:
            companion.start()

    async def stop(self) -> None:
        for companion in self.companions:
            await companion.stop()
        if self._asker is not None:
            self._asker.cancel()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self._unready(STOPPED)

    async def wait_ready(self, timeout: float) -> bool:
        """For start-up and tests: whether the first fill finished within `timeout` seconds."""
        deadline = self.clock() + timeout
        while not self.ready and self.clock() < deadline:
            await asyncio.sleep(0.01)
        return self.ready

    async def _run(self) -> None:
        delay = 0.1
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except st.TooOldResourceVersion as e:
                logger.info("watch cache for %s: %s; listing again", self.prefix, e)
            except Exception as e:
                logger.warning(
                    "watch cache for %s failed (%s); listing again in %.1fs", self.prefix, e, delay
                )
            else:
                delay = 0.1
            self._unready(REINITIALIZED)
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_RETRY_DELAY)

    async def _list_and_watch(self) -> None:
        loaded, revision = await self._list()
        stream = self.storage.watch(self.prefix, revision)
        try:
            for cache, objects in loaded.items():
                cache.replace(objects, revision)
            for view in self.derived:
                view.rebuild(revision)
            self._stream = stream
            self.ready = True
            self._advance(revision)
            count = sum(len(objects) for objects in loaded.values())
            logger.info("watch cache for %s filled at revision %d (%d objects)", self.prefix, revision, count)
            del loaded
            async for event in stream:
                if event.type is st.EventType.PROGRESS:
                    self._advance(event.revision)
                    continue
                if event.revision <= self.revision:
                    continue  # already in the caches (a stream never repeats; this is defence)
                target = self._route(event.key)
                if target is not None:
                    cached = target.apply(event, self.clock())
                    if cached is not None and self.derived:
                        for view in self.derived:
                            view.source_changed(target, cached, self.clock())
                self._advance(event.revision)
        finally:
            self._stream = None
            self._asked_for = 0
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def _list(self) -> tuple[dict[ResourceCache, list[StoredObject]], int]:
        """Every object under the prefix, decoded, at one revision (read in pages at that revision).

        A function of its own so that the storage pages are garbage once it returns: the watch loop
        runs for hours and must not keep the last page's raw values alive."""
        loaded: dict[ResourceCache, list[StoredObject]] = {cache: [] for cache in self.caches}
        revision, start = 0, None
        decoded = 0
        while True:
            page = await self.storage.list(self.prefix, revision=revision, start_key=start, limit=LIST_PAGE)
            revision = page.revision
            for kv in page.items:
                cache = self._route(kv.key)
                if cache is not None and (obj := cache.ingest(kv.key, kv.value, kv.mod_revision)) is not None:
                    loaded[cache].append(obj)
                decoded += 1
                if decoded % DECODE_BATCH == 0:
                    await asyncio.sleep(0)
            if not page.more or not page.items:
                return loaded, revision
            start = page.items[-1].key + "\x00"

    async def _tick(self) -> None:
        """Ask for progress while anyone watches, so bookmarks advance with the store's revision."""
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            if self._stream is not None and any(cache.watchers for cache in (*self.caches, *self.derived)):
                self._stream.request_progress()

    def _route(self, key: str) -> ResourceCache | None:
        for cache in self.caches:
            if key.startswith(cache.prefix):
                return cache
        return None

    def _unready(self, reason: str) -> None:
        self.ready = False
        for cache in (*self.caches, *self.derived):
            cache.end_watchers(reason)

    # --- freshness -------------------------------------------------------------------------------

    def _advance(self, revision: int) -> None:
        if revision <= self.revision:
            return
        self.revision = revision
        if self._waiters:
            waiting = []
            for target, future in self._waiters:
                if target <= revision:
                    if not future.done():
                        future.set_result(None)
                else:
                    waiting.append((target, future))
            self._waiters = waiting

    async def wait_for(self, revision: int, timeout: float = BLOCK_TIMEOUT) -> bool:
        """Whether the caches reach `revision` within `timeout` seconds."""
        if self.revision >= revision:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = (revision, future)
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return False
        finally:
            if not future.done() or future.cancelled():
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
        return True

    async def fresh(self) -> int:
        """kube's consistent read from cache: wait until the caches hold every change the store had
        acknowledged when this was called; returns that revision. Raises Unserved when that cannot be
        confirmed in time, or at once when the storage cannot report progress (the read then goes to
        storage, as kube reads etcd when etcd cannot answer progress requests)."""
        if not self.ready:
            raise Unserved
        target = await self.storage.current_revision()
        if self.revision >= target:
            return target
        if not self._ask_progress(target) or not await self.wait_for(target):
            raise Unserved
        return target

    async def reach(self, revision: int) -> None:
        """A read "not older than `revision`": wait for the caches to get there (kube: 3 s), asking
        for progress. A revision the store itself has not reached is "Too large resource version" at
        once (kube waits the 3 s first; the answer is the same)."""
        if not self.ready:
            raise Unserved
        if self.revision >= revision:
            return
        current = await self.storage.current_revision()
        if current < revision:
            raise st.FutureRevision(revision, current)
        timeout = BLOCK_TIMEOUT if self._ask_progress(revision) else IN_FLIGHT_WAIT
        if not await self.wait_for(revision, timeout):
            raise Unserved

    def _ask_progress(self, revision: int) -> bool:
        """Make sure progress past `revision` is on its way; False when the storage cannot promise it.

        One request serves every reader waiting for the same revision or an older one: readers that
        shared one current-revision read ask once. While anyone waits, the request is repeated every
        PROGRESS_PERIOD until their revisions are reached (or their reads give up)."""
        stream = self._stream
        if stream is None:
            return False
        if revision > self._asked_for:
            if not stream.request_progress():
                return False
            self._asked_for = revision
        if self._asker is None:
            self._asker = asyncio.get_running_loop().create_task(self._ask_while_waiting())
        return True

    async def _ask_while_waiting(self) -> None:
        try:
            while self._waiters:
                await asyncio.sleep(PROGRESS_PERIOD)
                if self._waiters and self._stream is not None:
                    self._stream.request_progress()
        finally:
            self._asker = None
