"""The default storage backend: one SQLite file with etcd-like revisions, watch and compaction.

It exists so the server runs without an etcd cluster (development, tests, single-replica installs)
while keeping every storage.Interface semantic the registry relies on: global monotonic revisions,
reads and list pages at a fixed revision, optimistic read-modify-write, gapless watch from a revision,
and 410-style errors once history is compacted.

Threading: ALL SQLite work runs on one dedicated single-thread executor
(ThreadPoolExecutor(max_workers=1)) through loop.run_in_executor, so the event loop never blocks on
disk and SQLite only ever sees one thread; that thread also serialises writes, which is what makes
revisions strictly ordered. Update and delete-check callbacks run on the event loop between an
executor read and an executor compare-and-swap, never inside the executor.

Processes: by default the store belongs to this process alone (an exclusive lock on `<db>.lock`).
The workers of one server share it instead when their supervisor claimed the lock and handed it to
them (storage/embedded_lock.py). Then every worker writes the file (revisions stay global and strictly
increasing: storage/embedded_sqlite.py), and each worker's fan-out follows the other workers' commits
through a ring on a Unix datagram socket and a catch-up read of the `revisions` table
(storage/embedded_feed.py), so its watchers see every commit, in order, exactly once. A sole owner
follows the feed too, because a maintenance command may join the store (`open_embedded(join=True)`,
no lock claimed) and write next to the server, as `pizza-apiserver migrate-storage` does.
`current_revision()` reads the counter the writers share in memory, so it covers every write any
worker acknowledged without an executor hop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections.abc import AsyncGenerator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from storage.embedded_fanout import Fanout, Subscriber, WatcherTooSlow
from storage.embedded_feed import Follower, Notifier
from storage.embedded_lock import StorageInUse, StoreLock, inherited
from storage.embedded_sqlite import CREATE, DELETE, PUT, RevisionLog, WriteOp
from storage.interface import (
    Companions,
    DeleteCheck,
    Event,
    EventType,
    KeyValue,
    ListResult,
    NotFound,
    StorageError,
    Unavailable,
    UpdateFunc,
)

__all__ = ["EmbeddedStorage", "StorageInUse", "StoreLock", "WatcherTooSlow", "open_embedded"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
# Events read per executor call while a watch replays history; bounds one call's latency and memory.
_HISTORY_PAGE = 500
# Writes in one group commit at most: bounds one transaction's time on the writer lock.
_GROUP_COMMIT_MAX = 256


async def open_embedded(
    path: Path,
    *,
    prefix: str,
    history_limit: int = 10000,
    watch_buffer: int = 1024,
    lock: StoreLock | None = None,
    join: bool = False,
) -> EmbeddedStorage:
    """Open (creating if needed) the store at `path`; keys are stored as `prefix` + key.

    `history_limit` revisions are kept for old reads and watch replay (0 disables auto-compaction);
    `watch_buffer` is how many unread events a watcher may lag before it is cut off. `lock` (or the
    lock this process inherited for `path`, storage.embedded_lock.inherit) shares the store with the
    other processes of the server that claimed it; without one this process takes the store alone.
    Raises StorageInUse when another server holds the file.

    `join` opens the store as one more writer next to whichever server owns it (or none), without
    claiming the lock: what a maintenance command (`pizza-apiserver migrate-storage`) needs while
    the server keeps serving. The multi-process protocol (writer lock, shared counter, change feed)
    keeps revisions and every server's watchers exact; the file must already exist.
    """
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedded-storage")
    fanout = Fanout(revision=0, capacity=watch_buffer)

    def publish(events: list[Event], revision: int, lost: bool) -> None:
        # Called on the executor thread right after COMMIT; call_soon_threadsafe keeps commit order.
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody is watching
            loop.call_soon_threadsafe(fanout.publish, events, revision, lost)

    shared = lock or inherited(path)
    notifier: Notifier | None = None
    owned: StoreLock | None = None
    try:
        if join:
            if not await loop.run_in_executor(executor, path.exists):
                raise NotFound(str(path), f"no embedded storage at {path}")
        elif shared is None:
            owned = await loop.run_in_executor(executor, StoreLock.claim, path)
        else:
            await loop.run_in_executor(executor, shared.verify)
        # Every process is a member of the change feed, the sole owner too: another process (a worker,
        # or a maintenance command that joined) may commit, and this one's watchers must see it.
        notifier = Notifier()
        opener = functools.partial(
            RevisionLog.open, path, prefix=prefix.rstrip("/"), publish=publish, notifier=notifier
        )
        revision_log = await loop.run_in_executor(executor, opener)
        fanout.published_revision = await loop.run_in_executor(executor, revision_log.delivered_revision)
    except BaseException:
        if notifier is not None:
            notifier.close()
        if owned is not None:
            owned.release()
        executor.shutdown(wait=False)
        raise
    store = EmbeddedStorage(
        revision_log, executor, fanout, history_limit=history_limit, owned=owned, notifier=notifier
    )
    store.start()
    return store


class EmbeddedStorage:
    """storage.Interface over a RevisionLog; see the module docstring for the threading model."""

    def __init__(
        self,
        revision_log: RevisionLog,
        executor: ThreadPoolExecutor,
        fanout: Fanout,
        *,
        history_limit: int,
        owned: StoreLock | None,
        notifier: Notifier | None,
    ) -> None:
        self._log = revision_log
        self._executor = executor
        self._fanout = fanout
        self._history_limit = history_limit
        # Compact again once history exceeds the limit by this much, so compaction is occasional.
        self._compaction_slack = max(1, history_limit // 10)
        self._compacted = revision_log.compacted_revision()
        self._compaction: asyncio.Task[None] | None = None
        self._owned = owned
        self._notifier = notifier
        # Only when other processes may write: follows their commits into this process's fan-out.
        self._follower = (
            Follower(
                notifier,
                shared_revision=revision_log.shared_revision,
                delivered_revision=lambda: fanout.published_revision,
                catch_up=functools.partial(self._call, revision_log.catch_up),
            )
            if notifier is not None
            else None
        )
        # Writes waiting for the next group commit, and the task committing them (None when idle).
        self._queued: list[tuple[WriteOp, asyncio.Future[KeyValue | None]]] = []
        self._committer: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        if self._follower is not None:
            self._follower.start()

    async def create(
        self, key: str, value: bytes, *, companions: Mapping[str, bytes] | None = None
    ) -> KeyValue:
        written = await self._commit(
            WriteOp(CREATE, key, value, companions=tuple((companions or {}).items()))
        )
        assert written is not None
        return self._after_write(written)

    async def get(self, key: str, *, revision: int = 0) -> KeyValue:
        return await self._call(self._log.get, key, revision)

    async def list(
        self, prefix: str, *, revision: int = 0, start_key: str | None = None, limit: int = 0
    ) -> ListResult:
        return await self._call(self._log.list, _directory(prefix), revision, start_key, limit)

    async def guaranteed_update(
        self, key: str, update: UpdateFunc, *, ignore_not_found: bool = False
    ) -> KeyValue:
        while True:
            current = await self._call(self._log.current, key)
            if current is None and not ignore_not_found:
                raise NotFound(key)
            new_value = await update(current)  # on the loop: it may await admission, webhooks, ...
            if current is not None and new_value == current.value:
                return current
            expected = current.mod_revision if current is not None else 0
            written = await self._commit(WriteOp(PUT, key, new_value, expected))
            if written is not None:
                return self._after_write(written)

    async def delete(
        self,
        key: str,
        *,
        check: DeleteCheck | None = None,
        cached: KeyValue | None = None,
        companions: Companions | None = None,
    ) -> KeyValue:
        while True:
            current, cached = cached or await self._call(self._log.current, key), None
            if current is None:
                raise NotFound(key)
            if check is not None:
                await check(current)
            with_it = tuple(companions(current).items()) if companions is not None else ()
            deleted = await self._commit(WriteOp(DELETE, key, b"", current.mod_revision, with_it))
            if deleted is not None:
                self._after_write(deleted)
                return deleted

    async def _commit(self, op: WriteOp) -> KeyValue | None:
        """Queue a write for the next group commit and wait for its outcome.

        Writes that arrive while a commit is on the executor thread wait for the next one and share
        its transaction (one fsync for all): under concurrent writers this is what lets the embedded
        store keep up, since an fsync costs more than the rest of a write. A write whose caller is
        cancelled after queueing still happens, as a request already sent to etcd does.
        """
        if self._closed:
            raise Unavailable("", "embedded storage is closed")
        future: asyncio.Future[KeyValue | None] = asyncio.get_running_loop().create_future()
        self._queued.append((op, future))
        if self._committer is None:
            self._committer = asyncio.get_running_loop().create_task(self._commit_queued())
        return await future

    async def _commit_queued(self) -> None:
        try:
            while self._queued:
                batch, self._queued = self._queued[:_GROUP_COMMIT_MAX], self._queued[_GROUP_COMMIT_MAX:]
                try:
                    outcomes = await self._call(self._log.write_batch, [op for op, _ in batch])
                except Exception as err:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(err)
                    continue
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    if future.done():
                        continue
                    if isinstance(outcome, StorageError):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            self._committer = None

    def watch(self, prefix: str, revision: int) -> _WatchStream:
        # Subscribe now, before anything is read, so no commit can fall between history and live events.
        subscriber = self._fanout.subscribe(_directory(prefix))
        # Revision 0: after the newest revision of the store now, which another worker may have reached
        # before this one published it; the events up to it are then skipped as they arrive.
        start = revision or self._revision_now()
        events = self._watch_events(subscriber, replay=revision != 0, start=start)
        return _WatchStream(events, subscriber, self)

    async def current_revision(self) -> int:
        """From memory, no executor hop: the counter every writer advances after COMMIT and before it
        acknowledges, so it is at least the revision of every write any worker acknowledged."""
        if self._closed:
            raise Unavailable("", "embedded storage is closed")
        return self._revision_now()

    def _revision_now(self) -> int:
        # A catch-up may publish a sibling's commit a moment before the sibling stores the counter.
        return max(self._log.shared_revision(), self._fanout.published_revision)

    def _request_progress(self, subscriber: Subscriber) -> None:
        self._fanout.request_progress(subscriber, self._revision_now())
        if self._follower is not None:
            self._follower.kick()  # do not wait for a ring that may still be on its way

    async def compact(self, revision: int) -> None:
        compacted = await self._call(self._log.compact, revision)
        self._compacted = max(self._compacted, compacted)

    async def check_retained(self, revision: int) -> None:
        """Exact: a one-row read at `revision` (local, and other workers may have compacted)."""
        await self.list("/", revision=revision, limit=1)

    async def check(self) -> None:
        await self._call(self._log.current_revision)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._fanout.close()
        if self._follower is not None:
            await self._follower.stop()
        if self._compaction is not None:
            with contextlib.suppress(Exception):
                await self._compaction
        loop = asyncio.get_running_loop()
        # Queued behind any executor work still in flight, so those calls finish on an open file.
        await loop.run_in_executor(self._executor, self._log.close)
        self._executor.shutdown(wait=False)  # the worker is idle now and exits on its own
        if self._notifier is not None:
            self._notifier.close()
        if self._owned is not None:
            self._owned.release()

    async def _watch_events(
        self, subscriber: Subscriber, *, replay: bool, start: int
    ) -> AsyncGenerator[Event, None]:
        """History after `start` from the table (when replaying), then live events, deduped by revision."""
        last = start
        try:
            if self._closed:
                raise Unavailable("", "embedded storage is closed")
            while replay and not subscriber.closed:
                page = await self._call(self._log.history, subscriber.prefix, last, _HISTORY_PAGE)
                for replayed in page:
                    if subscriber.closed:
                        return
                    last = replayed.revision
                    yield replayed
                replay = len(page) == _HISTORY_PAGE
            while (event := await subscriber.next()) is not None:
                if event.type is EventType.PROGRESS:
                    # Never behind an event already delivered (a replay may have run past it).
                    yield Event(EventType.PROGRESS, "", b"", max(event.revision, last), None)
                elif event.revision > last:  # already replayed from the table
                    last = event.revision
                    yield event
        finally:
            self._fanout.unsubscribe(subscriber)

    def _after_write(self, written: KeyValue) -> KeyValue:
        """Start an auto-compaction in the background when history outgrew the limit by the slack."""
        revision = written.mod_revision
        if (
            self._history_limit > 0
            and self._compaction is None
            and revision - self._compacted >= self._history_limit + self._compaction_slack
        ):
            task = asyncio.get_running_loop().create_task(self._auto_compact(revision - self._history_limit))
            self._compaction = task
        return written

    async def _auto_compact(self, revision: int) -> None:
        try:
            await self.compact(revision)
        except Exception:
            if not self._closed:
                _log.exception("embedded storage: auto-compaction to revision %d failed", revision)
        finally:
            self._compaction = None

    async def _call(self, function: Callable[..., _T], *args: object) -> _T:
        if self._closed:
            raise Unavailable("", "embedded storage is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, function, *args)
        except sqlite3.Error as err:
            raise Unavailable("", f"embedded storage failed: {err}") from err


class _WatchStream:
    """The watch iterator; closing it releases the subscription even if it was never iterated."""

    __slots__ = ("_events", "_store", "_subscriber")

    def __init__(
        self, events: AsyncGenerator[Event, None], subscriber: Subscriber, store: EmbeddedStorage
    ) -> None:
        self._events = events
        self._subscriber = subscriber
        self._store = store

    def request_progress(self) -> bool:
        """PROGRESS at the store's revision now (any worker's), queued once everything up to it was
        published in this process, so it follows every event at or below it."""
        self._store._request_progress(self._subscriber)
        return True

    def __aiter__(self) -> _WatchStream:
        return self

    async def __anext__(self) -> Event:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        self._store._fanout.unsubscribe(self._subscriber)
        await self._events.aclose()


def _directory(prefix: str) -> str:
    """Treat a prefix as a directory, like kube's etcd3 store, so "/pizzas/a" never matches "/pizzasx/"."""
    return prefix if prefix.endswith("/") else prefix + "/"
