"""One writer at a time per key within this process, so concurrent updates of one object queue
instead of all losing the compare-and-swap but one.

Updates are optimistic (read, compute, write if unchanged, else retry), as kube's GuaranteedUpdate.
When eight clients patch the same object, each round computes eight updates, commits one and throws
seven away: the work grows with the square of the writers (measured: 67-89 merge patches/s on one
pizza from 8 connections). Queued behind a per-key lock, each update reads the state the previous
one left and commits on its first try. Storage still checks the revision, so writers in other
processes (workers, other servers on the same etcd) are handled by the retry as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class KeyLocks:
    def __init__(self) -> None:
        # key → (lock, holders and waiters); an entry lives only while someone uses it.
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)
