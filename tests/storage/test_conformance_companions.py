"""Conformance of every backend to the companion keys of create and delete (storage.interface).

A create with companions writes the object and every companion in one transaction or nothing; a
delete with companions removes the companions that still hold the given bytes with the object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from storage.interface import AlreadyExists, CompanionExists, Interface, KeyValue, NotFound

OBJECT = "/pizzas/default/margherita"
NUMBER = "/_numbers/pizzas/7"


async def _absent(store: Interface, key: str) -> bool:
    try:
        await store.get(key)
    except NotFound:
        return True
    return False


async def test_create_writes_the_companions_with_the_object(store: Interface) -> None:
    created = await store.create(OBJECT, b"pizza", companions={NUMBER: b"owner"})
    assert created.key == OBJECT and created.value == b"pizza"
    assert await store.get(OBJECT) == created
    number = await store.get(NUMBER)
    assert number.value == b"owner"
    assert number.mod_revision <= created.mod_revision == await store.current_revision()


async def test_a_taken_companion_is_told_apart_and_nothing_is_written(store: Interface) -> None:
    await store.create(NUMBER, b"someone else")
    before = await store.current_revision()
    with pytest.raises(CompanionExists) as raised:
        await store.create(OBJECT, b"pizza", companions={"/_numbers/pizzas/8": b"me", NUMBER: b"me"})
    assert raised.value.key == NUMBER
    assert await _absent(store, OBJECT)
    assert await _absent(store, "/_numbers/pizzas/8")
    assert await store.current_revision() == before


async def test_an_existing_object_is_already_exists_even_when_a_companion_is_taken(store: Interface) -> None:
    await store.create(OBJECT, b"first", companions={NUMBER: b"first"})
    with pytest.raises(AlreadyExists) as raised:
        await store.create(OBJECT, b"second", companions={NUMBER: b"second"})
    assert raised.value.key == OBJECT
    with pytest.raises(AlreadyExists):
        await store.create(OBJECT, b"third", companions={"/_numbers/pizzas/9": b"third"})
    assert await _absent(store, "/_numbers/pizzas/9")
    assert (await store.get(NUMBER)).value == b"first"


async def test_concurrent_creates_for_one_companion_exactly_one_wins(store: Interface) -> None:
    outcomes = await asyncio.wait_for(
        asyncio.gather(
            *(store.create(f"/pizzas/default/p{i}", b"x", companions={NUMBER: b"%d" % i}) for i in range(8)),
            return_exceptions=True,
        ),
        5.0,
    )
    winners = [i for i, outcome in enumerate(outcomes) if isinstance(outcome, KeyValue)]
    assert len(winners) == 1
    assert all(isinstance(o, CompanionExists) for i, o in enumerate(outcomes) if i not in winners)
    assert (await store.get(NUMBER)).value == b"%d" % winners[0]
    listed = await store.list("/pizzas/default/")
    assert [kv.key for kv in listed.items] == [f"/pizzas/default/p{winners[0]}"]


def _holding(value: bytes) -> Mapping[str, bytes]:
    return {NUMBER: value, "/_numbers/pizzas/missing": b"owner"}


async def test_delete_removes_companions_that_still_hold_the_value(store: Interface) -> None:
    created = await store.create(OBJECT, b"pizza", companions={NUMBER: b"owner"})
    seen: list[KeyValue] = []

    def companions(kv: KeyValue) -> Mapping[str, bytes]:
        seen.append(kv)
        return _holding(b"owner")

    deleted = await store.delete(OBJECT, companions=companions)
    assert deleted.value == b"pizza" and deleted.mod_revision > created.mod_revision
    assert [kv.value for kv in seen] == [b"pizza"]
    assert await _absent(store, OBJECT)
    assert await _absent(store, NUMBER)
    assert await _absent(store, "/_numbers/pizzas/missing")


async def test_delete_leaves_a_companion_holding_something_else(store: Interface) -> None:
    await store.create(OBJECT, b"pizza", companions={NUMBER: b"another owner"})
    await store.delete(OBJECT, companions=lambda kv: _holding(b"owner"))
    assert await _absent(store, OBJECT)
    assert (await store.get(NUMBER)).value == b"another owner"


async def test_delete_from_cached_state_passes_it_to_companions(store: Interface) -> None:
    created = await store.create(OBJECT, b"pizza", companions={NUMBER: b"owner"})
    seen: list[bytes] = []

    def companions(kv: KeyValue) -> Mapping[str, bytes]:
        seen.append(kv.value)
        return {NUMBER: b"owner"}

    await store.delete(OBJECT, cached=created, companions=companions)
    assert seen == [b"pizza"]
    assert await _absent(store, NUMBER)
