"""The generic Store on its own, over a real embedded store: CRUD for a kind with spec and status
(Pizza) and for a kind with neither (wardle's Fischer), without HTTP in between."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from apis.meta.errors import StatusError
from apis.meta.fields import parse_field_selector
from apis.restaurant.install import PIZZA_KIND
from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping
from apis.runtime.codec import Codec
from apis.wardle.install import FISCHER_KIND, Fischer
from registry.generic.options import DeleteOptions, ListOptions, Predicate, WatchOptions
from registry.generic.store import Store
from registry.generic.strategy import PlainStrategy
from registry.restaurant.pizza.strategy import STATUS_STRATEGY, STRATEGY
from storage.embedded import EmbeddedStorage
from storage.interface import Interface


@pytest.fixture
def storage(embedded_storage: EmbeddedStorage) -> Interface:
    return embedded_storage


async def test_kind_without_spec(storage: Interface) -> None:
    store = Store(Codec("wardle.example.com", FISCHER_KIND), PlainStrategy(namespaced=False), storage)
    created = await store.create(Fischer(metadata={"name": "f"}, disallowed_flunders=["a"]))
    assert created.metadata["resourceVersion"] and "generation" not in created.metadata

    async def label(old: Any) -> Any:
        new = Fischer(metadata={**old.metadata, "labels": {"x": "y"}}, disallowed_flunders=["a", "b"])
        return new

    updated, was_created = await store.update("", "f", label)
    assert not was_created and updated.disallowed_flunders == ["a", "b"]
    raw = orjson.loads((await storage.get("/wardle.example.com/fischers/f")).value)
    assert raw["apiVersion"] == "wardle.example.com/v1alpha1" and raw["metadata"]["labels"] == {"x": "y"}
    listed = await store.list("", ListOptions())
    assert [f.metadata["name"] for f in listed.items] == ["f"]
    _, deleted_now = await store.delete("", "f", DeleteOptions())
    assert deleted_now
    with pytest.raises(StatusError) as e:
        await store.get("", "f")
    assert e.value.code == 404


async def test_spec_status_kind_generation_and_status(storage: Interface) -> None:
    store = Store(Codec("restaurant.programming-kubernetes.info", PIZZA_KIND), STRATEGY, storage)
    pizza = Pizza({"name": "p", "namespace": "ns"}, PizzaSpec([PizzaTopping("ham")]), PizzaStatus(cost=9))
    created = await store.create(pizza)
    # Status is reset on create; generation starts at 1.
    assert created.status == PizzaStatus() and created.metadata["generation"] == 1

    async def more_ham(old: Any) -> Any:
        return Pizza(dict(old.metadata), PizzaSpec([PizzaTopping("ham", 2)]), PizzaStatus(cost=1))

    updated, _ = await store.update("ns", "p", more_ham)
    assert updated.metadata["generation"] == 2 and updated.status == PizzaStatus()

    async def priced(old: Any) -> Any:
        return Pizza(dict(old.metadata), PizzaSpec(), PizzaStatus(cost=4))

    updated, _ = await store.update("ns", "p", priced, strategy=STATUS_STRATEGY)
    assert updated.status == PizzaStatus(cost=4) and updated.spec == PizzaSpec([PizzaTopping("ham", 2)])
    assert updated.metadata["generation"] == 2


async def test_list_and_watch_scope_comes_from_the_request_not_the_key(storage: Interface) -> None:
    """A name selector over every namespace must not read one key (there is no namespace to put in it),
    while within a namespace it does: the scope is the request's, read through storage (no cache)."""
    store = Store(Codec("restaurant.programming-kubernetes.info", PIZZA_KIND), STRATEGY, storage)
    for namespace in ("n1", "n2", "n1-x"):
        await store.create(Pizza({"name": "same", "namespace": namespace}, PizzaSpec(), PizzaStatus()))
    by_name = ListOptions(Predicate(fields=parse_field_selector("metadata.name=same")))

    async def names(namespace: str) -> list[str]:
        return [
            f"{p.metadata['namespace']}/{p.metadata['name']}"
            for p in (await store.list(namespace, by_name)).items
        ]

    assert await names("") == ["n1-x/same", "n1/same", "n2/same"]
    assert await names("n1") == ["n1/same"]
    watch = await store.watch("", WatchOptions(by_name.predicate))
    watcher = watch.watcher
    try:
        async with asyncio.timeout(10):
            while len(watcher.pending) < 3 and watcher.ended is None:
                watcher.wakeup.clear()
                await watcher.wakeup.wait()
    finally:
        watch.stop(watcher)
    assert sorted(e.object.namespace for e in watcher.pending if e.object is not None) == ["n1", "n1-x", "n2"]
