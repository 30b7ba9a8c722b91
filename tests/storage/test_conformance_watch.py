"""Conformance of every backend to storage.Interface: watch, compaction, close and health.

Every read from a watch is bounded by a timeout, so a backend that loses an event fails instead of hanging.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from storage.interface import (
    Event,
    EventType,
    FutureRevision,
    Interface,
    KeyValue,
    NotFound,
    TooOldResourceVersion,
    Unavailable,
)

TIMEOUT = 5.0


def set_to(value: bytes):
    async def update(current: KeyValue | None) -> bytes:
        return value

    return update


async def next_event(events: AsyncIterator[Event]) -> Event:
    return await asyncio.wait_for(anext(events), TIMEOUT)


async def take(events: AsyncIterator[Event], count: int) -> list[Event]:
    return [await next_event(events) for _ in range(count)]


def summary(events: list[Event]) -> list[tuple[EventType, str, bytes, bytes | None]]:
    return [(e.type, e.key, e.value, e.prev_value) for e in events]


async def test_watch_replays_history_in_order_then_streams_live(store: Interface) -> None:
    start = await store.current_revision()
    created = await store.create("/pizzas/ns/a", b"1")
    updated = await store.guaranteed_update("/pizzas/ns/a", set_to(b"2"))
    events = store.watch("/pizzas/ns/", start)

    history = await take(events, 2)
    assert summary(history) == [
        (EventType.ADDED, "/pizzas/ns/a", b"1", None),
        (EventType.MODIFIED, "/pizzas/ns/a", b"2", b"1"),
    ]
    assert [e.revision for e in history] == [created.mod_revision, updated.mod_revision]

    b = await store.create("/pizzas/ns/b", b"x")
    await store.delete("/pizzas/ns/a")
    live = await take(events, 2)
    assert summary(live) == [
        (EventType.ADDED, "/pizzas/ns/b", b"x", None),
        (EventType.DELETED, "/pizzas/ns/a", b"2", b"2"),
    ]
    assert live[0].revision == b.mod_revision
    assert live[1].revision == await store.current_revision()


async def test_watch_from_a_mid_history_revision_skips_earlier_events(store: Interface) -> None:
    await store.create("/pizzas/ns/a", b"1")
    middle = await store.guaranteed_update("/pizzas/ns/a", set_to(b"2"))
    await store.guaranteed_update("/pizzas/ns/a", set_to(b"3"))
    events = store.watch("/pizzas/ns/", middle.mod_revision)
    first = await next_event(events)
    assert (first.type, first.value, first.prev_value) == (EventType.MODIFIED, b"3", b"2")


async def test_deleted_event_carries_last_state_and_delete_revision(store: Interface) -> None:
    events = store.watch("/toppings/", await store.current_revision())
    await store.create("/toppings/cheese", b"v1")
    await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    deleted = await store.delete("/toppings/cheese")
    added, modified, removed = await take(events, 3)
    assert (added.type, added.prev_value) == (EventType.ADDED, None)
    assert (modified.type, modified.value, modified.prev_value) == (EventType.MODIFIED, b"v2", b"v1")
    assert (removed.type, removed.key, removed.value, removed.prev_value) == (
        EventType.DELETED,
        "/toppings/cheese",
        b"v2",
        b"v2",
    )
    assert removed.revision == deleted.mod_revision == await store.current_revision()
    assert removed.revision > modified.revision


async def test_watch_revision_zero_streams_only_new_events(store: Interface) -> None:
    await store.create("/toppings/old", b"x")
    events = store.watch("/toppings/", 0)
    await store.guaranteed_update("/toppings/old", set_to(b"y"))
    await store.create("/toppings/new", b"z")
    got = await take(events, 2)
    assert summary(got) == [
        (EventType.MODIFIED, "/toppings/old", b"y", b"x"),
        (EventType.ADDED, "/toppings/new", b"z", None),
    ]


async def test_watch_treats_prefix_as_a_directory(store: Interface) -> None:
    events = store.watch("/pizzas/a", 0)
    await store.create("/pizzasx/a/1", b"no")
    await store.create("/pizzas/ab/1", b"no")
    await store.create("/pizzas/a", b"no")
    await store.create("/pizzas/a/1", b"yes")
    await store.create("/pizzas/a/ns/2", b"yes")
    got = await take(events, 2)
    assert [(e.key, e.value) for e in got] == [("/pizzas/a/1", b"yes"), ("/pizzas/a/ns/2", b"yes")]


async def test_watch_has_no_gap_or_duplicate_while_writes_race_the_replay(store: Interface) -> None:
    start = await store.current_revision()
    for index in range(10):
        await store.create(f"/toppings/t{index:02d}", b"x")

    async def write_more() -> None:
        for index in range(10, 40):
            await store.create(f"/toppings/t{index:02d}", b"x")

    writer = asyncio.create_task(write_more())
    events = store.watch("/toppings/", start)
    got = await take(events, 40)
    await asyncio.wait_for(writer, TIMEOUT)
    assert [e.key for e in got] == [f"/toppings/t{index:02d}" for index in range(40)]
    revisions = [e.revision for e in got]
    assert revisions == sorted(set(revisions))


async def test_concurrent_watchers_each_see_every_event(store: Interface) -> None:
    start = await store.current_revision()
    watchers = [store.watch("/toppings/", start) for _ in range(3)]
    for index in range(5):
        await store.create(f"/toppings/{index}", str(index).encode())
    for events in watchers:
        assert [e.value for e in await take(events, 5)] == [b"0", b"1", b"2", b"3", b"4"]


async def test_watch_ahead_of_the_store_raises_future_revision(store: Interface) -> None:
    await store.create("/toppings/a", b"x")
    events = store.watch("/toppings/", await store.current_revision() + 1000)
    with pytest.raises(FutureRevision):
        await next_event(events)


async def test_compaction_makes_older_reads_and_watches_too_old(store: Interface) -> None:
    first = await store.create("/toppings/cheese", b"v1")
    await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    third = await store.guaranteed_update("/toppings/cheese", set_to(b"v3"))
    await store.create("/toppings/ham", b"h")
    await store.compact(third.mod_revision)

    with pytest.raises(TooOldResourceVersion) as too_old:
        await store.get("/toppings/cheese", revision=first.mod_revision)
    assert too_old.value.requested == first.mod_revision
    with pytest.raises(TooOldResourceVersion):
        await store.list("/toppings/", revision=first.mod_revision)
    with pytest.raises(TooOldResourceVersion):
        await next_event(store.watch("/toppings/", first.mod_revision))
    with pytest.raises(TooOldResourceVersion):
        await store.check_retained(first.mod_revision)
    await store.check_retained(third.mod_revision)
    await store.check_retained(third.mod_revision + 1)

    # The state at the compacted revision itself is intact, and so is everything after it.
    assert (await store.get("/toppings/cheese", revision=third.mod_revision)).value == b"v3"
    with pytest.raises(NotFound):
        await store.get("/toppings/ham", revision=third.mod_revision)
    at_compaction = await store.list("/toppings/", revision=third.mod_revision)
    assert [(i.key, i.value) for i in at_compaction.items] == [("/toppings/cheese", b"v3")]
    after = await next_event(store.watch("/toppings/", third.mod_revision))
    assert (after.type, after.key) == (EventType.ADDED, "/toppings/ham")
    assert (await store.get("/toppings/cheese")).value == b"v3"


async def test_compaction_forgets_deleted_keys_but_keeps_live_ones(store: Interface) -> None:
    await store.create("/toppings/gone", b"g")
    await store.delete("/toppings/gone")
    kept = await store.create("/toppings/kept", b"k")
    await store.compact(await store.current_revision())
    result = await store.list("/toppings/")
    assert result.items == [kept]
    with pytest.raises(NotFound):
        await store.get("/toppings/gone")
    recreated = await store.create("/toppings/gone", b"again")
    assert recreated.create_revision == recreated.mod_revision


async def test_close_ends_watch_iterators(store: Interface) -> None:
    events = store.watch("/toppings/", 0)
    await store.create("/toppings/a", b"x")
    assert (await next_event(events)).key == "/toppings/a"

    async def drain() -> list[Event]:
        return [event async for event in events]

    reader = asyncio.create_task(drain())
    await asyncio.sleep(0.05)  # the reader is now blocked waiting for an event
    await store.close()
    assert await asyncio.wait_for(reader, TIMEOUT) == []


async def test_check_raises_unavailable_after_close(store: Interface) -> None:
    await store.check()
    await store.close()
    with pytest.raises(Unavailable):
        await store.check()
    await store.close()  # closing twice is harmless
