"""Conformance of every backend to storage.Interface: create, get, list and paging, updates, deletes.

Only the `store` fixture and storage.interface are used, so the same assertions hold for each backend.
Watch, compaction and lifecycle live in test_conformance_watch.py.
"""

from __future__ import annotations

import asyncio

import pytest

from storage.interface import (
    AlreadyExists,
    FutureRevision,
    Interface,
    KeyValue,
    NotFound,
)

TIMEOUT = 5.0


def set_to(value: bytes):
    async def update(current: KeyValue | None) -> bytes:
        return value

    return update


class Refused(Exception):
    """Raised by callbacks to check that a backend propagates errors unchanged."""


# --- create / get ----------------------------------------------------------------------------------


async def test_create_returns_revisions_and_get_reads_it(store: Interface) -> None:
    before = await store.current_revision()
    created = await store.create("/pizzas/default/margherita", b"tomato")
    assert created.key == "/pizzas/default/margherita"
    assert created.value == b"tomato"
    assert created.mod_revision == created.create_revision > before
    assert await store.current_revision() == created.mod_revision
    assert await store.get("/pizzas/default/margherita") == created


async def test_create_existing_key_raises_already_exists(store: Interface) -> None:
    first = await store.create("/toppings/cheese", b"v1")
    with pytest.raises(AlreadyExists):
        await store.create("/toppings/cheese", b"v2")
    assert await store.get("/toppings/cheese") == first


async def test_get_missing_key_raises_not_found(store: Interface) -> None:
    await store.create("/toppings/cheese", b"v1")
    with pytest.raises(NotFound):
        await store.get("/toppings/ham")
    with pytest.raises(NotFound):
        await store.get("/toppings/chees")


async def test_get_at_old_revision_returns_the_value_then(store: Interface) -> None:
    first = await store.create("/toppings/cheese", b"v1")
    second = await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    assert second.create_revision == first.create_revision
    assert second.mod_revision > first.mod_revision
    old = await store.get("/toppings/cheese", revision=first.mod_revision)
    assert (old.value, old.mod_revision) == (b"v1", first.mod_revision)
    assert (await store.get("/toppings/cheese")).value == b"v2"


async def test_get_at_revision_before_creation_or_after_delete_is_not_found(store: Interface) -> None:
    other = await store.create("/toppings/ham", b"x")
    cheese = await store.create("/toppings/cheese", b"v1")
    await store.delete("/toppings/cheese")
    with pytest.raises(NotFound):
        await store.get("/toppings/cheese", revision=other.mod_revision)
    with pytest.raises(NotFound):
        await store.get("/toppings/cheese", revision=await store.current_revision())
    assert (await store.get("/toppings/cheese", revision=cheese.mod_revision)).value == b"v1"


async def test_reads_ahead_of_the_store_raise_future_revision(store: Interface) -> None:
    await store.create("/toppings/cheese", b"v1")
    ahead = await store.current_revision() + 1000
    with pytest.raises(FutureRevision):
        await store.get("/toppings/cheese", revision=ahead)
    with pytest.raises(FutureRevision):
        await store.list("/toppings/", revision=ahead)


# --- list ------------------------------------------------------------------------------------------


async def test_list_returns_keys_in_order_at_the_current_revision(store: Interface) -> None:
    for name in ["salami", "cheese", "ham"]:
        await store.create(f"/toppings/{name}", name.encode())
    result = await store.list("/toppings/")
    assert [item.key for item in result.items] == ["/toppings/cheese", "/toppings/ham", "/toppings/salami"]
    assert [item.value for item in result.items] == [b"cheese", b"ham", b"salami"]
    assert result.revision == await store.current_revision()
    assert (result.more, result.remaining) == (False, 0)


async def test_list_of_empty_prefix_reports_current_revision(store: Interface) -> None:
    await store.create("/toppings/cheese", b"x")
    result = await store.list("/pizzas/")
    assert result.items == []
    assert result.revision == await store.current_revision()


async def test_list_treats_prefix_as_a_directory(store: Interface) -> None:
    await store.create("/pizzas/a/one", b"1")
    await store.create("/pizzas/ab/two", b"2")
    await store.create("/pizzasx/a/three", b"3")
    assert [i.key for i in (await store.list("/pizzas/a")).items] == ["/pizzas/a/one"]
    assert [i.key for i in (await store.list("/pizzas/a/")).items] == ["/pizzas/a/one"]
    assert [i.key for i in (await store.list("/pizzas")).items] == ["/pizzas/a/one", "/pizzas/ab/two"]


async def test_list_at_old_revision_shows_the_state_then(store: Interface) -> None:
    await store.create("/toppings/cheese", b"v1")
    await store.create("/toppings/ham", b"v1")
    then = await store.current_revision()
    await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    await store.delete("/toppings/ham")
    await store.create("/toppings/salami", b"v1")
    old = await store.list("/toppings/", revision=then)
    assert old.revision == then
    assert [(i.key, i.value) for i in old.items] == [("/toppings/cheese", b"v1"), ("/toppings/ham", b"v1")]
    now = await store.list("/toppings/")
    assert [(i.key, i.value) for i in now.items] == [("/toppings/cheese", b"v2"), ("/toppings/salami", b"v1")]


async def test_list_pages_at_a_fixed_revision_ignore_writes_between_pages(store: Interface) -> None:
    for name in "abcde":
        await store.create(f"/pizzas/ns/{name}", b"old")
    first = await store.list("/pizzas/ns/", limit=2)
    assert [i.key for i in first.items] == ["/pizzas/ns/a", "/pizzas/ns/b"]
    assert (first.more, first.remaining) == (True, 3)

    # Writes between pages: a key sorting into page two, an update and a delete of later keys.
    await store.create("/pizzas/ns/bb", b"new")
    await store.guaranteed_update("/pizzas/ns/c", set_to(b"new"))
    await store.delete("/pizzas/ns/d")

    second = await store.list(
        "/pizzas/ns/", revision=first.revision, start_key=first.items[-1].key + "\x00", limit=2
    )
    assert second.revision == first.revision
    assert [(i.key, i.value) for i in second.items] == [("/pizzas/ns/c", b"old"), ("/pizzas/ns/d", b"old")]
    assert (second.more, second.remaining) == (True, 1)

    third = await store.list(
        "/pizzas/ns/", revision=first.revision, start_key=second.items[-1].key + "\x00", limit=2
    )
    assert [i.key for i in third.items] == ["/pizzas/ns/e"]
    assert (third.more, third.remaining) == (False, 0)

    latest = await store.list("/pizzas/ns/")
    assert [(i.key, i.value) for i in latest.items] == [
        ("/pizzas/ns/a", b"old"),
        ("/pizzas/ns/b", b"old"),
        ("/pizzas/ns/bb", b"new"),
        ("/pizzas/ns/c", b"new"),
        ("/pizzas/ns/e", b"old"),
    ]


async def test_list_limit_equal_to_count_has_no_more(store: Interface) -> None:
    for name in "abc":
        await store.create(f"/toppings/{name}", b"x")
    exact = await store.list("/toppings/", limit=3)
    assert [i.key for i in exact.items] == ["/toppings/a", "/toppings/b", "/toppings/c"]
    assert (exact.more, exact.remaining) == (False, 0)
    everything = await store.list("/toppings/", limit=0)
    assert len(everything.items) == 3
    assert not everything.more


async def test_list_items_carry_their_own_revisions(store: Interface) -> None:
    a = await store.create("/toppings/a", b"x")
    b = await store.create("/toppings/b", b"x")
    b2 = await store.guaranteed_update("/toppings/b", set_to(b"y"))
    items = (await store.list("/toppings/")).items
    assert items == [a, b2]
    assert items[1].create_revision == b.create_revision


# --- guaranteed_update -----------------------------------------------------------------------------


async def test_guaranteed_update_passes_current_and_writes_result(store: Interface) -> None:
    created = await store.create("/toppings/cheese", b"1")
    seen: list[KeyValue | None] = []

    async def append_two(current: KeyValue | None) -> bytes:
        seen.append(current)
        assert current is not None
        return current.value + b"2"

    updated = await store.guaranteed_update("/toppings/cheese", append_two)
    assert seen == [created]
    assert updated.value == b"12"
    assert updated.create_revision == created.create_revision
    assert updated.mod_revision > created.mod_revision
    assert await store.get("/toppings/cheese") == updated


async def test_guaranteed_update_returning_same_bytes_writes_nothing(store: Interface) -> None:
    created = await store.create("/toppings/cheese", b"same")
    revision = await store.current_revision()

    async def unchanged(current: KeyValue | None) -> bytes:
        assert current is not None
        return bytes(current.value)

    result = await store.guaranteed_update("/toppings/cheese", unchanged)
    assert result == created
    assert await store.current_revision() == revision


async def test_guaranteed_update_error_propagates_and_writes_nothing(store: Interface) -> None:
    created = await store.create("/toppings/cheese", b"v1")

    async def refuse(current: KeyValue | None) -> bytes:
        raise Refused("precondition failed")

    with pytest.raises(Refused, match="precondition failed"):
        await store.guaranteed_update("/toppings/cheese", refuse)
    assert await store.get("/toppings/cheese") == created
    assert await store.current_revision() == created.mod_revision


async def test_guaranteed_update_of_missing_key_raises_not_found_without_calling(store: Interface) -> None:
    calls: list[KeyValue | None] = []

    async def record(current: KeyValue | None) -> bytes:
        calls.append(current)
        return b"x"

    with pytest.raises(NotFound):
        await store.guaranteed_update("/toppings/ghost", record)
    assert calls == []
    with pytest.raises(NotFound):
        await store.get("/toppings/ghost")


async def test_guaranteed_update_ignore_not_found_creates(store: Interface) -> None:
    calls: list[KeyValue | None] = []

    async def create_it(current: KeyValue | None) -> bytes:
        calls.append(current)
        return b"fresh"

    created = await store.guaranteed_update("/toppings/new", create_it, ignore_not_found=True)
    assert calls == [None]
    assert created.value == b"fresh"
    assert created.create_revision == created.mod_revision
    assert await store.get("/toppings/new") == created
    with pytest.raises(AlreadyExists):
        await store.create("/toppings/new", b"again")


async def test_concurrent_guaranteed_updates_each_apply_exactly_once(store: Interface) -> None:
    await store.create("/counters/c", b"0")

    async def increment(current: KeyValue | None) -> bytes:
        assert current is not None
        value = int(current.value)
        await asyncio.sleep(0)  # let the other updaters read the same value and collide
        return str(value + 1).encode()

    results = await asyncio.wait_for(
        asyncio.gather(*(store.guaranteed_update("/counters/c", increment) for _ in range(20))), TIMEOUT
    )
    assert (await store.get("/counters/c")).value == b"20"
    assert sorted(int(r.value) for r in results) == list(range(1, 21))
    assert len({r.mod_revision for r in results}) == 20


# --- delete ----------------------------------------------------------------------------------------


async def test_delete_returns_last_value_and_removes_the_key(store: Interface) -> None:
    await store.create("/toppings/cheese", b"v1")
    last = await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    deleted = await store.delete("/toppings/cheese")
    # The last value, stamped with the delete's revision (kube's etcd3 store does the same).
    assert (deleted.key, deleted.value, deleted.create_revision) == (last.key, b"v2", last.create_revision)
    assert deleted.mod_revision > last.mod_revision
    assert deleted.mod_revision == await store.current_revision()
    with pytest.raises(NotFound):
        await store.get("/toppings/cheese")
    with pytest.raises(NotFound):
        await store.delete("/toppings/cheese")
    assert (await store.list("/toppings/")).items == []


async def test_delete_missing_key_raises_not_found(store: Interface) -> None:
    with pytest.raises(NotFound):
        await store.delete("/toppings/ghost")


async def test_recreate_after_delete_starts_a_new_lifetime(store: Interface) -> None:
    first = await store.create("/toppings/cheese", b"v1")
    await store.delete("/toppings/cheese")
    second = await store.create("/toppings/cheese", b"v2")
    assert second.create_revision > first.create_revision
    assert second.create_revision == second.mod_revision


async def test_delete_check_sees_current_and_raising_keeps_the_key(store: Interface) -> None:
    created = await store.create("/toppings/cheese", b"v1")
    seen: list[KeyValue] = []

    async def refuse(current: KeyValue) -> None:
        seen.append(current)
        raise Refused("uid mismatch")

    with pytest.raises(Refused, match="uid mismatch"):
        await store.delete("/toppings/cheese", check=refuse)
    assert seen == [created]
    assert await store.get("/toppings/cheese") == created
    assert await store.current_revision() == created.mod_revision


async def test_delete_retries_check_when_key_changes_during_check(store: Interface) -> None:
    await store.create("/toppings/cheese", b"v1")
    seen: list[bytes] = []

    async def check(current: KeyValue) -> None:
        seen.append(current.value)
        if len(seen) == 1:  # a concurrent writer sneaks in between the read and the delete
            await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))

    deleted = await asyncio.wait_for(store.delete("/toppings/cheese", check=check), TIMEOUT)
    assert seen == [b"v1", b"v2"]
    assert deleted.value == b"v2"
    with pytest.raises(NotFound):
        await store.get("/toppings/cheese")


async def test_delete_from_a_cached_revision_without_its_bytes(store: Interface) -> None:
    """A watch cache knows an object's revision but not its stored bytes: the delete compares the
    revision alone, hands `check` the cached state first, and answers with the value deleted."""
    created = await store.create("/toppings/cheese", b"v1")
    cached = KeyValue(created.key, b"", 0, created.mod_revision)
    seen: list[KeyValue] = []

    async def check(current: KeyValue) -> None:
        seen.append(current)

    deleted = await store.delete("/toppings/cheese", check=check, cached=cached)
    assert seen == [cached] and seen[0] is cached
    assert (deleted.value, deleted.create_revision) == (b"v1", created.create_revision)
    assert deleted.mod_revision == await store.current_revision()

    # A cached revision the key has moved past: nothing is deleted until `check` saw the current value.
    again = await store.create("/toppings/cheese", b"v1")
    stale = KeyValue(again.key, b"", 0, again.mod_revision)
    now = await store.guaranteed_update("/toppings/cheese", set_to(b"v2"))
    seen.clear()
    deleted = await store.delete("/toppings/cheese", check=check, cached=stale)
    assert seen == [stale, now]
    assert deleted.value == b"v2"


async def test_concurrent_deletes_exactly_one_wins(store: Interface) -> None:
    created = await store.create("/toppings/cheese", b"v1")
    outcomes = await asyncio.wait_for(
        asyncio.gather(*(store.delete("/toppings/cheese") for _ in range(5)), return_exceptions=True), TIMEOUT
    )
    winners = [o for o in outcomes if isinstance(o, KeyValue)]
    assert [(w.key, w.value, w.create_revision) for w in winners] == [
        (created.key, b"v1", created.create_revision)
    ]
    assert all(isinstance(o, NotFound) for o in outcomes if not isinstance(o, KeyValue))


async def test_update_racing_delete_sees_not_found(store: Interface) -> None:
    await store.create("/toppings/cheese", b"v1")

    async def delete_meanwhile(current: KeyValue | None) -> bytes:
        await store.delete("/toppings/cheese")
        return b"v2"

    with pytest.raises(NotFound):
        await asyncio.wait_for(store.guaranteed_update("/toppings/cheese", delete_meanwhile), TIMEOUT)
    with pytest.raises(NotFound):
        await store.get("/toppings/cheese")


# --- revisions -------------------------------------------------------------------------------------


async def test_revisions_are_global_and_strictly_increasing(store: Interface) -> None:
    revisions = [await store.current_revision()]
    revisions.append((await store.create("/toppings/a", b"1")).mod_revision)
    revisions.append((await store.create("/pizzas/ns/b", b"1")).mod_revision)
    revisions.append((await store.guaranteed_update("/toppings/a", set_to(b"2"))).mod_revision)
    revisions.append((await store.delete("/pizzas/ns/b")).mod_revision)
    revisions.append((await store.create("/pizzas/ns/b", b"again")).mod_revision)
    assert revisions == sorted(set(revisions))
    assert await store.current_revision() == revisions[-1]


async def test_check_succeeds_on_an_open_store(store: Interface) -> None:
    await store.check()
