"""Concurrent "what is the revision now?" questions share one quorum read.

Every consistent read served from the watch cache first asks storage for its current revision (kube's
consistent-list-from-cache), one round trip each: on etcd that halved the GET rate. A revision read
that *started after* a request arrived is as good an answer for it as its own read would be (the
request is still linearizable), so requests that arrive while a read is in flight wait for the next
read, which starts when that one ends and answers all of them: at most one read in flight, however
many readers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable


class SharedRevisionReads:
    def __init__(self, read: Callable[[], Awaitable[int]]) -> None:
        self._read = read
        # The next read's outcome, for everyone who arrived since the last read started.
        self._next: asyncio.Future[int] | None = None
        self._runner: asyncio.Task[None] | None = None

    async def current(self) -> int:
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        future = self._next
        if self._runner is None:
            self._runner = asyncio.create_task(self._run())
        # A caller that gives up (its request timed out) must not cancel the others' answer.
        return await asyncio.shield(future)

    async def _run(self) -> None:
        try:
            while (future := self._next) is not None:
                self._next = None  # who arrives from now on waits for the next read
                try:
                    revision = await self._read()
                except asyncio.CancelledError:
                    future.cancel()
                    raise
                except Exception as err:
                    future.set_exception(err)
                else:
                    future.set_result(revision)
                # Nobody may be left waiting on an exception nobody retrieves.
                if future.done() and not future.cancelled():
                    future.exception()
        finally:
            self._runner = None

    async def close(self) -> None:
        runner = self._runner
        if runner is not None:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
        if self._next is not None:
            self._next.cancel()
            self._next = None
