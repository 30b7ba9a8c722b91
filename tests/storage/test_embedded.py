"""Embedded-backend specifics the shared conformance suite cannot express: the file outlives the process,
one server owns it at a time, slow watchers are cut off, and history is compacted on its own."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from storage.embedded import StorageInUse, WatcherTooSlow, open_embedded
from storage.interface import EventType, KeyValue, NotFound, TooOldResourceVersion, Unavailable

PREFIX = "/registry/restaurant.programming-kubernetes.info"
TIMEOUT = 5.0


def set_to(value: bytes):
    async def update(current: KeyValue | None) -> bytes:
        return value

    return update


async def test_embedded_data_history_and_revision_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.db"
    store = await open_embedded(path, prefix=PREFIX)
    first = await store.create("/pizzas/default/margherita", b"v1")
    second = await store.guaranteed_update("/pizzas/default/margherita", set_to(b"v2"))
    await store.create("/toppings/ham", b"h")
    await store.delete("/toppings/ham")
    revision = await store.current_revision()
    await store.close()

    reopened = await open_embedded(path, prefix=PREFIX)
    try:
        assert await reopened.current_revision() == revision
        assert await reopened.get("/pizzas/default/margherita") == second
        assert (await reopened.get("/pizzas/default/margherita", revision=first.mod_revision)).value == b"v1"
        with pytest.raises(NotFound):
            await reopened.get("/toppings/ham")
        events = reopened.watch("/pizzas/", first.mod_revision)
        replayed = await asyncio.wait_for(anext(events), TIMEOUT)
        assert (replayed.type, replayed.value, replayed.prev_value) == (EventType.MODIFIED, b"v2", b"v1")
        later = await reopened.create("/toppings/cheese", b"c")
        assert later.mod_revision == revision + 1
    finally:
        await reopened.close()


async def test_embedded_compaction_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = await open_embedded(path, prefix=PREFIX)
    first = await store.create("/toppings/cheese", b"v1")
    second = await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    await store.compact(second.mod_revision)
    await store.close()

    reopened = await open_embedded(path, prefix=PREFIX)
    try:
        with pytest.raises(TooOldResourceVersion) as too_old:
            await reopened.get("/toppings/cheese", revision=first.mod_revision)
        assert too_old.value.oldest == second.mod_revision
        assert (await reopened.get("/toppings/cheese")).value == b"v2"
    finally:
        await reopened.close()


async def test_embedded_second_open_of_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = await open_embedded(path, prefix=PREFIX)
    await store.create("/toppings/cheese", b"v1")
    with pytest.raises(StorageInUse, match="already in use"):
        await open_embedded(path, prefix=PREFIX)
    await store.check()  # the refused open did not disturb the owner
    await store.close()

    again = await open_embedded(path, prefix=PREFIX)
    try:
        assert (await again.get("/toppings/cheese")).value == b"v1"
    finally:
        await again.close()


async def test_embedded_prefixes_sharing_a_file_do_not_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = await open_embedded(path, prefix="/registry/a.example.com")
    await store.create("/toppings/cheese", b"a")
    await store.close()

    other = await open_embedded(path, prefix="/registry/b.example.com")
    try:
        assert (await other.list("/toppings/")).items == []
        with pytest.raises(NotFound):
            await other.get("/toppings/cheese")
        created = await other.create("/toppings/cheese", b"b")
        assert created.key == "/toppings/cheese"
    finally:
        await other.close()


async def test_embedded_slow_watcher_is_cut_off_without_blocking_writers(tmp_path: Path) -> None:
    store = await open_embedded(tmp_path / "store.db", prefix=PREFIX, watch_buffer=4)
    try:
        slow = store.watch("/toppings/", 0)
        fast = store.watch("/toppings/", 0)
        got_fast = []
        for index in range(10):
            await asyncio.wait_for(store.create(f"/toppings/{index}", b"x"), TIMEOUT)
            got_fast.append(await asyncio.wait_for(anext(fast), TIMEOUT))
        assert [e.key for e in got_fast] == [f"/toppings/{index}" for index in range(10)]
        # The slow watcher still gets what it had buffered, then learns it must re-watch.
        buffered = [await asyncio.wait_for(anext(slow), TIMEOUT) for _ in range(4)]
        assert [e.key for e in buffered] == ["/toppings/0", "/toppings/1", "/toppings/2", "/toppings/3"]
        with pytest.raises(WatcherTooSlow):
            await asyncio.wait_for(anext(slow), TIMEOUT)
        assert issubclass(WatcherTooSlow, Unavailable)
    finally:
        await store.close()


async def test_embedded_auto_compaction_keeps_recent_history(tmp_path: Path) -> None:
    store = await open_embedded(tmp_path / "store.db", prefix=PREFIX, history_limit=5)
    try:
        first = await store.create("/counters/c", b"0")
        for value in range(1, 30):
            await store.guaranteed_update("/counters/c", set_to(str(value).encode()))
        current = await store.current_revision()

        async def wait_until_compacted() -> None:
            while True:
                try:
                    await store.get("/counters/c", revision=first.mod_revision)
                except TooOldResourceVersion:
                    return
                await asyncio.sleep(0.01)

        await asyncio.wait_for(wait_until_compacted(), TIMEOUT)
        assert (await store.get("/counters/c")).value == b"29"
        assert (await store.get("/counters/c", revision=current - 3)).value == b"26"
    finally:
        await store.close()


async def test_embedded_sqlite_runs_on_one_thread_off_the_loop(tmp_path: Path) -> None:
    store = await open_embedded(tmp_path / "store.db", prefix=PREFIX)
    loop_thread = threading.get_ident()
    seen_threads: set[int] = set()

    async def record_thread(current: KeyValue | None) -> bytes:
        seen_threads.add(threading.get_ident())  # update funcs run on the loop, not in the executor
        return b"x"

    try:
        await store.guaranteed_update("/toppings/a", record_thread, ignore_not_found=True)
        assert seen_threads == {loop_thread}
        storage_threads = {t.ident for t in threading.enumerate() if t.name.startswith("embedded-storage")}
        assert storage_threads
        assert loop_thread not in storage_threads
    finally:
        await store.close()


async def test_embedded_concurrent_writes_share_commits_and_keep_their_own_outcomes(tmp_path: Path) -> None:
    """Group commit: writers arriving while a commit is on the storage thread share the next one
    (one fsync for all), yet each write gets its own revision and its own result."""
    store = await open_embedded(tmp_path / "storage.db", prefix=PREFIX)
    try:
        before = store._log.commits
        created = await asyncio.gather(*(store.create(f"/toppings/t{i:02d}", b"v") for i in range(40)))
        revisions = sorted(kv.mod_revision for kv in created)
        assert revisions == list(range(revisions[0], revisions[0] + 40))
        assert store._log.commits - before < 40

        # In one batch: one create wins a key, the others get AlreadyExists; compare-and-swaps on one
        # key conflict and retry until each increment landed exactly once.
        outcomes = await asyncio.gather(
            *(store.create("/toppings/same", str(i).encode()) for i in range(10)), return_exceptions=True
        )
        assert sum(isinstance(o, KeyValue) for o in outcomes) == 1
        assert all(isinstance(o, KeyValue) or type(o).__name__ == "AlreadyExists" for o in outcomes)

        await store.create("/counter", b"0")

        async def increment(current: KeyValue | None) -> bytes:
            assert current is not None
            return str(int(current.value) + 1).encode()

        await asyncio.gather(*(store.guaranteed_update("/counter", increment) for _ in range(30)))
        assert (await store.get("/counter")).value == b"30"
        deleted = await asyncio.gather(*(store.delete(f"/toppings/t{i:02d}") for i in range(40)))
        assert len({kv.mod_revision for kv in deleted}) == 40
    finally:
        await store.close()


async def test_embedded_a_joined_process_writes_next_to_the_sole_owner_and_its_watchers_see_it(
    tmp_path: Path,
) -> None:
    """What `migrate-storage` relies on: it joins the store a one-process server owns, without the
    lock, and that server's watchers and current revision follow its commits."""
    path = tmp_path / "store.db"
    with pytest.raises(NotFound, match="no embedded storage at"):
        await open_embedded(path, prefix=PREFIX, join=True)
    owner = await open_embedded(path, prefix=PREFIX)
    joined = await open_embedded(path, prefix=PREFIX, join=True)
    try:
        with pytest.raises(StorageInUse):  # joining does not make room for a second server
            await open_embedded(path, prefix=PREFIX)
        start = await owner.create("/pizzas/default/a", b"v1")
        watch = owner.watch("/pizzas/", start.mod_revision)
        written = await joined.guaranteed_update("/pizzas/default/a", set_to(b"v2"))
        async with asyncio.timeout(TIMEOUT):
            event = await anext(aiter(watch))
        assert (event.type, event.value, event.revision) == (EventType.MODIFIED, b"v2", written.mod_revision)
        assert await owner.current_revision() == written.mod_revision
        # And the other way round: the joined process sees the owner's writes in its reads.
        mine = await owner.create("/pizzas/default/b", b"b")
        assert (await joined.get("/pizzas/default/b")).mod_revision == mine.mod_revision
        await watch.aclose()
    finally:
        await joined.close()
        await owner.close()
