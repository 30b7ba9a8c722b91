"""The embedded store shared by several OS processes, as the workers of `pizza-apiserver --workers N`.

The test process plays the supervisor: it claims the store's lock and hands it to worker processes
(tests/storage/embedded_worker.py, started with "spawn"); it usually opens the store with the lock too
and acts as one more worker. Every wait is bounded, so a lost or stuck event fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from storage.embedded import EmbeddedStorage, StorageInUse, StoreLock, WatcherTooSlow, open_embedded
from storage.interface import EventType, KeyValue, UpdateFunc
from tests.storage import embedded_worker
from tests.storage.embedded_worker import PREFIX, summarize

TIMEOUT = 30.0
_spawn = multiprocessing.get_context("spawn")


class Worker:
    """A worker process and its command pipe."""

    def __init__(self, lock: StoreLock | None, path: Path, history_limit: int = 10000) -> None:
        self.conn, child = _spawn.Pipe()
        self.process = _spawn.Process(
            target=embedded_worker.main, args=(lock, path, child, history_limit), daemon=True
        )
        self.process.start()
        child.close()

    async def call(self, *command: Any) -> Any:
        self.conn.send(command)
        return await self.result()

    async def result(self) -> Any:
        if not await asyncio.to_thread(self.conn.poll, TIMEOUT):
            raise TimeoutError(f"worker did not answer within {TIMEOUT} s")
        answer = self.conn.recv()
        if answer[0] != "ok":
            raise AssertionError(f"worker failed: {answer[1]}: {answer[2]}")
        return answer[1]

    def stop(self) -> None:
        if self.process.is_alive():
            self.conn.send(("stop",))
            self.process.join(TIMEOUT)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "storage.db"


@pytest.fixture
def lock(db_path: Path) -> Iterator[StoreLock]:
    claimed = StoreLock.claim(db_path)
    try:
        yield claimed
    finally:
        claimed.release()


@pytest.fixture
async def workers(lock: StoreLock, db_path: Path) -> AsyncIterator[list[Worker]]:
    started = [Worker(lock, db_path), Worker(lock, db_path)]
    try:
        assert [await worker.result() for worker in started] == ["open", "open"]
        yield started
    finally:
        await asyncio.gather(*(asyncio.to_thread(worker.stop) for worker in started))


@pytest.fixture
async def local(lock: StoreLock, db_path: Path, workers: list[Worker]) -> AsyncIterator[EmbeddedStorage]:
    """The test process as one more worker of the same store."""
    store = await open_embedded(db_path, prefix=PREFIX, lock=lock)
    try:
        yield store
    finally:
        await store.close()


async def test_concurrent_writes_get_unique_increasing_revisions_and_every_watch_sees_all(
    workers: list[Worker], local: EmbeddedStorage
) -> None:
    a, b = workers
    start = await local.current_revision()
    count = 150
    here = local.watch("/toppings/", start)
    for worker in workers:
        await worker.call("watch", "all", "/toppings/", start, 2 * count)
    for worker, base in ((a, "/toppings/a"), (b, "/toppings/b")):
        worker.conn.send(("creates", base, count))
    from_a, from_b = await a.result(), await b.result()

    # Each process saw its own writes get increasing revisions; together they are unique and gapless.
    assert from_a == sorted(from_a) and from_b == sorted(from_b)
    everything = sorted(from_a + from_b)
    assert len(set(everything)) == 2 * count
    assert everything == list(range(start + 1, start + 2 * count + 1))
    assert await local.current_revision() == everything[-1]

    # Three watchers in three processes: every commit, in revision order, once, with the right keys.
    async with asyncio.timeout(TIMEOUT):
        seen_here = [summarize(await anext(here)) for _ in range(2 * count)]
    await here.aclose()
    assert [event[3] for event in seen_here] == everything
    owner = {revision: "a" for revision in from_a} | {revision: "b" for revision in from_b}
    assert all(key.startswith(f"/toppings/{owner[revision]}") for _, key, _, revision in seen_here)
    for worker in workers:
        assert await worker.call("collected", "all") == seen_here


async def test_acknowledged_write_elsewhere_is_covered_by_current_revision_and_progress(
    workers: list[Worker], local: EmbeddedStorage
) -> None:
    a, _ = workers
    events = local.watch("/pizzas/", await local.current_revision())
    try:
        for index in range(40):
            written = await a.call("create", f"/pizzas/ns/p{index}", b"x")
            # A acknowledged `written`; B (this process) may not have been rung yet.
            assert await local.current_revision() >= written
            assert events.request_progress()
            async with asyncio.timeout(TIMEOUT):
                event = await anext(events)
                assert (event.type, event.key, event.revision) == (
                    EventType.ADDED,
                    f"/pizzas/ns/p{index}",
                    written,
                )
                progress = await anext(events)
            assert progress.type is EventType.PROGRESS
            assert progress.revision >= written
    finally:
        await events.aclose()


async def test_progress_waits_for_other_processes_events_under_load(
    workers: list[Worker], local: EmbeddedStorage
) -> None:
    a, b = workers
    start = await local.current_revision()
    events = local.watch("/toppings/", start)
    a.conn.send(("creates", "/toppings/a", 100))
    b.conn.send(("creates", "/toppings/b", 100))
    seen: list[int] = []
    try:
        async with asyncio.timeout(TIMEOUT):
            while len(seen) < 200:
                now = await local.current_revision()
                events.request_progress()
                while True:  # events up to `now`, then the marker: never a marker before an event <= it
                    event = await anext(events)
                    if event.type is EventType.PROGRESS:
                        assert event.revision >= now
                        assert all(revision <= event.revision for revision in seen)
                        break
                    seen.append(event.revision)
                await asyncio.sleep(0.002)
    finally:
        await events.aclose()
    await a.result()
    await b.result()
    assert seen == list(range(start + 1, start + 201))


async def test_optimistic_concurrency_across_processes_loses_no_increment(
    workers: list[Worker], local: EmbeddedStorage
) -> None:
    a, b = workers
    for worker in workers:
        worker.conn.send(("increment", "/counters/hot", 100))
    revisions = await a.result() + await b.result()
    assert len(set(revisions)) == 200
    assert (await local.get("/counters/hot")).value == b"200"
    assert await a.call("get", "/counters/hot") == b"200"


async def test_compaction_from_several_processes_is_idempotent(
    workers: list[Worker], local: EmbeddedStorage
) -> None:
    a, b = workers
    first = await local.create("/toppings/cheese", b"1")
    for value in (b"2", b"3"):
        await a.call("increment", "/counters/c", 1)
        await local.guaranteed_update("/toppings/cheese", _set_to(value))
    current = await local.current_revision()
    await asyncio.gather(a.call("compact", current), b.call("compact", current - 1), local.compact(current))
    with pytest.raises(Exception, match="too old"):
        await local.get("/toppings/cheese", revision=first.mod_revision)
    assert (await local.get("/toppings/cheese")).value == b"3"
    assert await b.call("get", "/toppings/cheese") == b"3"
    later = await b.call("create", "/toppings/ham", b"h")
    assert later == current + 1


async def test_another_server_on_the_same_file_is_refused(lock: StoreLock, db_path: Path) -> None:
    # Another server: no lock handed over, in this process or in another one.
    with pytest.raises(StorageInUse, match="already in use"):
        await open_embedded(db_path, prefix=PREFIX)
    stranger = Worker(None, db_path)
    try:
        answer = await asyncio.to_thread(stranger.conn.poll, TIMEOUT)
        assert answer
        assert stranger.conn.recv()[:2] == ("error", "StorageInUse")
    finally:
        stranger.process.join(TIMEOUT)
    # A descriptor of the lock file that is not the owner's does not pass for the lock.
    forged = StoreLock(db_path, _open_lock_file(db_path))
    try:
        with pytest.raises(StorageInUse):
            await open_embedded(db_path, prefix=PREFIX, lock=forged)
    finally:
        forged.release()
    # With the owner's lock released (the server stopped), the file is free again.
    lock.release()
    store = await open_embedded(db_path, prefix=PREFIX)
    await store.close()


def _open_lock_file(db_path: Path) -> int:
    return os.open(db_path.with_name(db_path.name + ".lock"), os.O_RDWR)


def _set_to(value: bytes) -> UpdateFunc:
    async def update(current: KeyValue | None) -> bytes:
        return value

    return update


async def test_a_feed_that_fell_behind_a_compaction_cuts_its_watchers_off(
    lock: StoreLock, db_path: Path
) -> None:
    # Two workers of one server in this process (each its own store, thread and feed); the second's
    # feed is paused while the first rewrites a key and compacts the history it never delivered.
    first = await open_embedded(db_path, prefix=PREFIX, lock=lock)
    second = await open_embedded(db_path, prefix=PREFIX, lock=lock)
    try:
        events = second.watch("/toppings/", await second.current_revision())
        await first.create("/toppings/cheese", b"1")
        async with asyncio.timeout(TIMEOUT):
            assert (await anext(events)).value == b"1"  # replay done: the watch is on the live feed
        assert second._follower is not None
        await second._follower.stop()
        for value in (b"2", b"3"):
            await first.guaranteed_update("/toppings/cheese", _set_to(value))
        await first.compact(await first.current_revision())
        await second._call(second._log.catch_up)  # what the follower would have run
        with pytest.raises(WatcherTooSlow):
            async with asyncio.timeout(TIMEOUT):
                await anext(events)
        assert (await second.get("/toppings/cheese")).value == b"3"
    finally:
        await second.close()
        await first.close()
