"""Removes gracefully deleted objects when their grace period is over (for pods, the kubelet's job).

One finisher per resource whose strategy declares graceful deletion, fed by that resource's watch
cache (registry/generic/cache/): every object the cache takes in passes its metadata through `seen`,
which keeps the earliest deadline per object — its uid, the resourceVersion seen and its
deletionTimestamp — in a dict and a heap. At the deadline the object is deleted with a grace period
of 0 and preconditions on that uid and resourceVersion, through the Store like any client's delete
(finalizers still hold it; admission ran when its deletion was asked for). NotFound and Conflict are
expected and ignored: another worker or server got there first, or the object changed and its new
event scheduled it again.

Why fed by the cache and run everywhere: the deadline survives in storage, so a server started after
it (a restart) removes the object as soon as its cache is filled, and several workers or servers on
one storage need no election — the preconditions let exactly one delete succeed.

Objects being deleted without a grace period (deletionGracePeriodSeconds 0: finalizers hold them)
are not the finisher's: deleting them again would only rewrite the same mark.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from apis.meta.errors import StatusError
from registry.generic.graceful_deletion import parse_timestamp
from registry.generic.options import DeleteOptions

logger = logging.getLogger(__name__)

# Deletes run at once when many deadlines pass together (a restart after a long outage).
WORKERS = 16
# A delete that failed for another reason (storage unavailable) is tried again this much later.
RETRY_AFTER = 1.0

# (namespace, name, options) → the Store's delete.
DeleteObject = Callable[[str, str, DeleteOptions], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class _Due:
    deadline: float
    uid: str
    resource_version: str
    namespace: str
    name: str


class GracefulDeletionFinisher:
    def __init__(self, delete: DeleteObject, *, clock: Callable[[], float] = time.time) -> None:
        self._delete = delete
        self._clock = clock
        # key → the object's current deadline; the heap may also hold superseded ones (skipped).
        self._due: dict[str, _Due] = {}
        self._heap: list[tuple[float, int, str, _Due]] = []
        self._order = itertools.count()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- fed by the watch cache ------------------------------------------------------------------

    def seen(self, key: str, hub: Any) -> None:
        """A state of the object at `key` (every ADDED and MODIFIED, every object of a fill)."""
        meta = hub.metadata
        timestamp = meta.get("deletionTimestamp")
        if not timestamp or not meta.get("deletionGracePeriodSeconds"):
            if self._due:
                self._due.pop(key, None)
            return
        try:
            deadline = float(parse_timestamp(timestamp))
        except (TypeError, ValueError):
            logger.error("graceful deletion: %s has an unreadable deletionTimestamp %r", key, timestamp)
            return
        due = _Due(
            deadline,
            meta.get("uid") or "",
            meta.get("resourceVersion") or "",
            meta.get("namespace") or "",
            meta.get("name") or "",
        )
        if self._due.get(key) == due:
            return
        self._due[key] = due
        heapq.heappush(self._heap, (deadline, next(self._order), key, due))
        if self._heap[0][3] is due:
            self._wake.set()

    def gone(self, key: str) -> None:
        """The object at `key` was deleted."""
        if self._due:
            self._due.pop(key, None)

    def filled(self, present: Callable[[str], object]) -> None:
        """The cache was filled again: forget objects that are no longer there."""
        for key in [key for key in self._due if present(key) is None]:
            del self._due[key]

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def scheduled(self) -> int:
        """How many objects wait for their deadline (for tests and metrics)."""
        return len(self._due)

    # --- removing --------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            now = self._clock()
            due = self._take_due(now)
            if due:
                await self._finish_all(due)
                continue
            delay = self._heap[0][0] - now if self._heap else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _take_due(self, now: float) -> list[tuple[str, _Due]]:
        taken: list[tuple[str, _Due]] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, key, due = heapq.heappop(heap)
            if self._due.get(key) is due:
                taken.append((key, due))
        return taken

    async def _finish_all(self, due: list[tuple[str, _Due]]) -> None:
        pending = iter(due)

        async def worker() -> None:
            for key, entry in pending:
                await self._finish(key, entry)

        await asyncio.gather(*(worker() for _ in range(min(WORKERS, len(due)))))

    async def _finish(self, key: str, due: _Due) -> None:
        options = DeleteOptions(uid=due.uid, resource_version=due.resource_version, grace_period_seconds=0)
        try:
            await self._delete(due.namespace, due.name, options)
        except StatusError as e:
            if e.code not in (404, 409):
                self._retry(key, due, e)
                return
        except Exception as e:
            self._retry(key, due, e)
            return
        if self._due.get(key) is due:
            del self._due[key]

    def _retry(self, key: str, due: _Due, error: BaseException) -> None:
        logger.warning("graceful deletion of %s failed (%s); trying again", key, error)
        if self._due.get(key) is due:
            heapq.heappush(self._heap, (self._clock() + RETRY_AFTER, next(self._order), key, due))
