"""deletecollection in pages with a pool of workers, over a real embedded store (no HTTP in between)."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from apis.meta.errors import StatusError
from apis.runtime.codec import Codec
from apis.wardle.install import FISCHER_KIND, Fischer
from registry.generic.delete_collection import delete_in_pages
from registry.generic.deletion import delete_listed
from registry.generic.options import DeleteOptions, ListOptions
from registry.generic.store import Store
from registry.generic.strategy import PlainStrategy
from storage.embedded import EmbeddedStorage


def _store(storage: EmbeddedStorage) -> Store:
    return Store(Codec("wardle.example.com", FISCHER_KIND), PlainStrategy(namespaced=False), storage)


async def _create(store: Store, count: int) -> list[str]:
    names = [f"f{i:02d}" for i in range(count)]
    for name in names:
        await store.create(Fischer(metadata={"name": name}))
    return names


async def test_every_page_is_deleted_and_the_answer_lists_every_item(
    embedded_storage: EmbeddedStorage,
) -> None:
    store = _store(embedded_storage)
    names = await _create(store, 11)

    async def delete(item: Any) -> object:
        return await store.delete("", item.name, DeleteOptions())

    result = await delete_in_pages(
        functools.partial(store.read_list, ""), delete, ListOptions(), workers=4, page_size=3
    )
    assert sorted(item.name for item in result.items) == names
    assert (await store.list("", ListOptions())).items == []


async def test_a_limit_means_one_page(embedded_storage: EmbeddedStorage) -> None:
    store = _store(embedded_storage)
    names = await _create(store, 5)
    result = await store.delete_collection("", ListOptions(limit=2), DeleteOptions())
    assert [item.name for item in result.items] == names[:2]
    assert [f.metadata["name"] for f in (await store.list("", ListOptions())).items] == names[2:]


async def test_items_already_gone_are_skipped_and_other_errors_stop_it(
    embedded_storage: EmbeddedStorage,
) -> None:
    store = _store(embedded_storage)
    await _create(store, 6)
    listed = await store.read_list("", ListOptions())
    await store.delete("", "f03", DeleteOptions())  # gone between the list and its delete: skipped

    async def stale_list(options: ListOptions) -> Any:
        return listed

    async def delete(item: Any) -> object:
        return await store.delete("", item.name, DeleteOptions())

    result = await delete_in_pages(stale_list, delete, ListOptions(limit=10), workers=3)
    assert len(result.items) == 6 and (await store.list("", ListOptions())).items == []

    await _create(store, 4)
    with pytest.raises(StatusError) as err:  # a uid precondition no item meets: 409, not swallowed
        await store.delete_collection("", ListOptions(), DeleteOptions(uid="not-this-one"))
    assert err.value.code == 409


async def test_items_changed_since_the_list_are_deleted_from_their_current_state(
    embedded_storage: EmbeddedStorage,
) -> None:
    """kube's conditionalDelete from a cached state: a stale listed state only costs a retry from the
    current one, with admission asked again; a denial of a stale state does not stand."""
    store = _store(embedded_storage)
    await _create(store, 6)
    listed = await store.read_list("", ListOptions())

    async def relabel(obj: Any) -> Any:
        obj.metadata["labels"] = {"changed": "yes"}
        return obj

    for name in ("f02", "f04"):
        await store.update("", name, relabel)
    seen: list[tuple[str, Any]] = []

    async def validate(obj: Any, old: Any) -> None:
        seen.append((obj.metadata["name"], obj.metadata.get("labels")))
        if obj.metadata["name"] == "f04" and not obj.metadata.get("labels"):
            raise StatusError(403, "Forbidden", "not as listed", {})

    async def stale_list(options: ListOptions) -> Any:
        return listed

    async def delete(item: Any) -> None:
        await delete_listed(store, item, DeleteOptions(), validate)

    result = await delete_in_pages(stale_list, delete, ListOptions(limit=10), workers=3)
    assert len(result.items) == 6 and (await store.list("", ListOptions())).items == []
    for name in ("f02", "f04"):
        assert [labels for n, labels in seen if n == name] == [None, {"changed": "yes"}]
    assert [labels for n, labels in seen if n == "f01"] == [None]


async def test_a_denial_of_the_current_state_stands(embedded_storage: EmbeddedStorage) -> None:
    store = _store(embedded_storage)
    await _create(store, 3)
    calls: list[str] = []

    async def validate(obj: Any, old: Any) -> None:
        calls.append(obj.metadata["name"])
        if obj.metadata["name"] == "f01":
            raise StatusError(403, "Forbidden", "f01 stays", {})

    with pytest.raises(StatusError, match="f01 stays"):
        await store.delete_collection("", ListOptions(), DeleteOptions(), validate=validate)
    assert calls.count("f01") == 1
    assert [f.metadata["name"] for f in (await store.list("", ListOptions())).items] == ["f01"]
