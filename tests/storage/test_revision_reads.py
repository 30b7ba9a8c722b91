"""SharedRevisionReads: many readers, one read in flight, and never an answer older than the question."""

from __future__ import annotations

import asyncio

import pytest

from storage.revision_reads import SharedRevisionReads


async def settle() -> None:
    """Let every ready task run until it waits on something."""
    for _ in range(10):
        await asyncio.sleep(0)


class Store:
    """A revision counter whose reads take a while; `started` records the counter when each read began."""

    def __init__(self) -> None:
        self.revision = 0
        self.started: list[int] = []
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def read(self) -> int:
        seen = self.revision
        self.started.append(seen)
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return seen


async def test_readers_share_reads_and_never_get_a_read_begun_before_they_asked() -> None:
    store = Store()
    reads = SharedRevisionReads(store.read)
    first = [asyncio.create_task(reads.current()) for _ in range(5)]
    await settle()
    assert store.started == [0]  # five readers, one read
    store.revision = 7  # a write acknowledged while that read is in flight
    later = [asyncio.create_task(reads.current()) for _ in range(5)]
    await settle()
    assert store.started == [0]  # the later readers wait for the next read...
    store.release.set()
    assert await asyncio.gather(*first) == [0] * 5
    assert await asyncio.gather(*later) == [7] * 5  # ...which began after they asked
    assert store.started == [0, 7]


async def test_an_error_reaches_every_reader_of_that_read_and_the_next_read_is_fresh() -> None:
    store = Store()
    reads = SharedRevisionReads(store.read)
    store.fail = ConnectionError("etcd unavailable")
    store.release.set()
    waiting = [asyncio.create_task(reads.current()) for _ in range(3)]
    for outcome in await asyncio.gather(*waiting, return_exceptions=True):
        assert isinstance(outcome, ConnectionError)
    store.fail, store.revision = None, 3
    assert await reads.current() == 3


async def test_a_reader_that_gives_up_does_not_cancel_the_others() -> None:
    store = Store()
    reads = SharedRevisionReads(store.read)
    impatient = asyncio.create_task(reads.current())
    patient = asyncio.create_task(reads.current())
    await settle()
    impatient.cancel()
    with pytest.raises(asyncio.CancelledError):
        await impatient
    store.revision = 0
    store.release.set()
    assert await patient == 0
    await reads.close()
