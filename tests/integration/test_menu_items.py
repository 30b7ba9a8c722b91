"""MenuItems over HTTPS: a resource without storage, computed from the pizzas and toppings in the
watch cache (registry/restaurant/menu.py over registry/generic/derived.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.server import running_server
from tests.integration.conftest import Api

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"


def items_path(version: str = "v1beta1", name: str = "", namespace: str | None = "default") -> str:
    base = f"/apis/{GROUP}/{version}"
    base += f"/namespaces/{namespace}/menuitems" if namespace is not None else "/menuitems"
    return f"{base}/{name}" if name else base


async def _toppings(api: Api, **costs: Any) -> None:
    for name, cost in costs.items():
        r = await api.post(api.toppings_path(), api.topping(name, cost))
        assert r.status == 201, r


async def _set_cost(api: Api, topping: str, cost: Any) -> None:
    r = await api.patch(api.toppings_path("v1beta1", topping), {"spec": {"cost": cost}}, MERGE)
    assert r.status == 200, r


async def test_get_and_list_with_selectors(any_api: Api) -> None:
    api = any_api
    await _toppings(api, tomato=1, mozzarella=0.1, salami=0.2)
    pizza = await api.create_pizza(
        "margherita",
        [{"name": "tomato", "quantity": 2}, {"name": "mozzarella", "quantity": 1}],
        labels={"style": "classic"},
    )
    await api.create_pizza("diavola", [{"name": "salami", "quantity": 1}, {"name": "mozzarella"}])
    body = api.pizza("other", [{"name": "tomato"}], namespace="kitchen")
    r = await api.post(api.pizzas_path(namespace="kitchen"), body)
    assert r.status == 201, r

    r = await api.get(items_path(name="margherita"))
    assert r.status == 200, r
    item = r.body
    meta = pizza["metadata"]
    assert item["apiVersion"] == f"{GROUP}/v1beta1" and item["kind"] == "MenuItem"
    assert item["metadata"]["name"] == "margherita" and item["metadata"]["namespace"] == "default"
    assert item["metadata"]["labels"] == {"style": "classic"}
    assert item["metadata"]["creationTimestamp"] == meta["creationTimestamp"]
    assert int(item["metadata"]["resourceVersion"]) > 0
    assert item["toppings"] == [{"name": "tomato", "quantity": 2}, {"name": "mozzarella", "quantity": 1}]
    assert item["price"] == 2.1 and item["available"] is True
    # 0.2 + 0.1 is priced 0.3, not 0.30000000000000004.
    r = await api.get(items_path(name="diavola"))
    assert r.body["price"] == 0.3, r
    # The same shape in v1alpha1.
    r = await api.get(items_path("v1alpha1", "margherita"))
    assert r.status == 200, r
    assert r.body["apiVersion"] == f"{GROUP}/v1alpha1"
    assert {k: v for k, v in r.body.items() if k != "apiVersion"} == {
        k: v for k, v in item.items() if k != "apiVersion"
    }

    # No pizza, no menu item: a 404 naming the resource.
    r = await api.get(items_path(name="hawaii"))
    assert r.status == 404, r
    assert r.body["reason"] == "NotFound" and r.body["details"]["kind"] == "menuitems"
    assert r.body["message"] == f'menuitems.{GROUP} "hawaii" not found'

    r = await api.get(items_path(namespace=None))
    assert r.status == 200, r
    assert r.body["kind"] == "MenuItemList"
    names = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.body["items"]]
    assert names == [("default", "diavola"), ("default", "margherita"), ("kitchen", "other")]

    async def listed(path: str, **params: str) -> list[str]:
        reply = await api.get(path, params=params)
        assert reply.status == 200, reply
        return [i["metadata"]["name"] for i in reply.body["items"]]

    assert await listed(items_path()) == ["diavola", "margherita"]
    assert await listed(items_path(namespace=None), labelSelector="style=classic") == ["margherita"]
    assert await listed(items_path(namespace=None), labelSelector="style!=classic") == ["diavola", "other"]
    assert await listed(items_path(namespace=None), fieldSelector="metadata.namespace=kitchen") == ["other"]
    assert await listed(items_path(), fieldSelector="metadata.name=diavola") == ["diavola"]
    # Paging as for a stored resource.
    r = await api.get(items_path(namespace=None), params={"limit": "2"})
    assert len(r.body["items"]) == 2 and r.body["metadata"]["continue"], r
    assert r.body["metadata"]["remainingItemCount"] == 1
    token = r.body["metadata"]["continue"]
    r = await api.get(items_path(namespace=None), params={"limit": "2", "continue": token})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["other"], r
    # A selector on a field the resource does not have is refused, as for custom resources.
    r = await api.get(items_path(), params={"fieldSelector": "price=1"})
    assert r.status == 400, r


async def test_changes_follow_prices_and_toppings(any_api: Api) -> None:
    api = any_api
    await _toppings(api, tomato=1, basil=2)
    await api.create_pizza("marinara", [{"name": "tomato", "quantity": 3}, {"name": "basil"}])

    await _set_cost(api, "tomato", 1.5)
    r = await api.get(items_path(name="marinara"))
    assert r.body["price"] == 6.5 and r.body["available"] is True, r

    r = await api.delete(api.toppings_path("v1beta1", "basil"))
    assert r.status == 200, r
    r = await api.get(items_path(name="marinara"))
    assert r.body["price"] == 4.5 and r.body["available"] is False, r

    await _toppings(api, basil=1)
    r = await api.get(items_path(name="marinara"))
    assert r.body["price"] == 5.5 and r.body["available"] is True, r

    r = await api.delete(api.pizzas_path("v1beta1", "marinara"))
    assert r.status == 200, r
    r = await api.get(items_path(name="marinara"))
    assert r.status == 404, r


async def _watch(api: Api, resource_version: str, count: int, **params: str) -> list[dict[str, Any]]:
    """`count` events of a watch of every namespace from `resource_version` (0: a stream the server
    ends after a second, which must carry no event)."""
    query = {"watch": "1", "resourceVersion": resource_version, **params}
    if count == 0:
        query["timeoutSeconds"] = "1"
    async with api.session.get(items_path(namespace=None), params=query) as response:
        assert response.status == 200
        if count == 0:
            return await api.read_to_end(response)
        return await api.read_events(response, count)


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, str, Any, Any]]:
    return [
        (e["type"], e["object"]["metadata"]["name"], e["object"].get("price"), e["object"].get("available"))
        for e in events
    ]


async def test_watch_in_order_and_resumable_from_every_event(any_api: Api) -> None:
    api = any_api
    await _toppings(api, tomato=1, cheese=2)
    r = await api.get(items_path(namespace=None))
    start = r.body["metadata"]["resourceVersion"]

    await api.create_pizza("a", [{"name": "tomato"}, {"name": "cheese"}])
    await api.create_pizza("b", [{"name": "cheese", "quantity": 2}], labels={"size": "s"})
    await api.create_pizza("c", [{"name": "tomato"}])
    # One change of cheese's price changes two menu items: two events, each its own resourceVersion.
    await _set_cost(api, "cheese", 3)
    # A change that leaves every menu item as it was (a topping's label, a pizza's status) is no event.
    r = await api.patch(api.toppings_path("v1beta1", "tomato"), {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert r.status == 200, r
    r = await api.patch(api.pizzas_path("v1beta1", "c") + "/status", {"status": {"cost": 9}}, MERGE)
    assert r.status == 200, r
    r = await api.patch(api.pizzas_path("v1beta1", "b"), {"metadata": {"labels": {"size": "l"}}}, MERGE)
    assert r.status == 200, r
    r = await api.delete(api.toppings_path("v1beta1", "tomato"))
    assert r.status == 200, r
    r = await api.delete(api.pizzas_path("v1beta1", "c"))
    assert r.status == 200, r

    events = await _watch(api, start, 9)
    assert _summary(events) == [
        ("ADDED", "a", 3, True),
        ("ADDED", "b", 4, True),
        ("ADDED", "c", 1, True),
        ("MODIFIED", "a", 4, True),
        ("MODIFIED", "b", 6, True),
        ("MODIFIED", "b", 6, True),  # the new label
        ("MODIFIED", "a", 3, False),  # tomato deleted
        ("MODIFIED", "c", 0, False),
        ("DELETED", "c", 0, False),
    ]
    assert events[5]["object"]["metadata"]["labels"] == {"size": "l"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(set(versions)), versions
    # Resumed from any event's resourceVersion, a watch sends exactly the events after it.
    for i, event in enumerate(events):
        rest = await _watch(api, event["object"]["metadata"]["resourceVersion"], len(events) - i - 1)
        assert rest == events[i + 1 :], i

    # A selector: leaving it is DELETED, as for a stored resource; one namespace only.
    watched = await _watch(api, start, 2, labelSelector="size=s")
    assert _summary(watched) == [("ADDED", "b", 4, True), ("MODIFIED", "b", 6, True)]
    # A resourceVersion from before the window (here: older than the cache) is 410 in the stream.
    expired = await _watch(api, "1", 1)
    assert expired[0]["type"] == "ERROR" and expired[0]["object"]["code"] == 410, expired


async def test_table_and_partial_metadata(api: Api) -> None:
    await _toppings(api, tomato=1.25, pineapple=3)
    await api.create_pizza("margherita", [{"name": "tomato", "quantity": 2}])
    await api.create_pizza("ghost", [{"name": "pineapple"}])
    r = await api.delete(api.toppings_path("v1beta1", "pineapple"))
    assert r.status == 200, r
    r = await api.get(items_path(), headers={"Accept": api.TABLE_ACCEPT})
    assert r.status == 200, r
    table = r.body
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Price", "Available", "Age"]
    assert [c["type"] for c in table["columnDefinitions"]] == ["string", "number", "boolean", "date"]
    rows = {row["cells"][0]: row["cells"][1:3] for row in table["rows"]}
    assert rows == {"ghost": [0, False], "margherita": [2.5, True]}
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    r = await api.get(
        items_path(name="margherita"),
        headers={"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
    )
    assert r.status == 200 and r.body["metadata"]["name"] == "margherita", r


async def test_writes_are_not_allowed(api: Api) -> None:
    await _toppings(api, tomato=1)
    await api.create_pizza("margherita", [{"name": "tomato"}])
    item = (await api.get(items_path(name="margherita"))).body
    not_allowed = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server does not allow this method on the requested resource",
        "reason": "MethodNotAllowed",
        "details": {},
        "code": 405,
    }
    replies = [
        await api.post(items_path(), {**item, "metadata": {"name": "new"}}),
        await api.put(items_path(name="margherita"), item),
        await api.patch(items_path(name="margherita"), {"price": 0}, MERGE),
        await api.patch(items_path(name="margherita"), {"price": 0}, "application/apply-patch+yaml"),
        await api.delete(items_path(name="margherita")),
        await api.delete(items_path()),
    ]
    for reply in replies:
        assert reply.status == 405 and reply.body == not_allowed, reply
    # Nothing changed, and a menu item has no subresources.
    r = await api.get(items_path(name="margherita"))
    assert r.body == item
    r = await api.get(items_path(name="margherita") + "/status")
    assert r.status == 404, r


def _menu_paths(document: dict[str, Any]) -> dict[str, list[str]]:
    return {
        path: sorted(k for k in operations if k != "parameters")
        for path, operations in document["paths"].items()
        if "menuitems" in path
    }


async def test_discovery_and_openapi(api: Api) -> None:
    r = await api.get(f"/apis/{GROUP}/v1beta1")
    entry = next(e for e in r.body["resources"] if e["name"] == "menuitems")
    # No storageVersionHash: nothing of it is stored (kube gives none to a non-StorageVersionProvider).
    assert entry == {
        "name": "menuitems",
        "singularName": "menuitem",
        "namespaced": True,
        "kind": "MenuItem",
        "verbs": ["get", "list", "watch"],
    }
    assert not any(e["name"].startswith("menuitems/") for e in r.body["resources"])
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    r = await api.get("/apis", headers={"Accept": aggregated})
    group = next(g for g in r.body["items"] if g["metadata"]["name"] == GROUP)
    for version in group["versions"]:
        menu = next(e for e in version["resources"] if e["resource"] == "menuitems")
        assert menu["verbs"] == ["get", "list", "watch"] and "subresources" not in menu
        assert menu["responseKind"] == {"group": GROUP, "version": version["version"], "kind": "MenuItem"}

    r = await api.get("/openapi/v2")
    paths = _menu_paths(r.body)
    base = f"/apis/{GROUP}/v1beta1"
    assert paths[f"{base}/namespaces/{{namespace}}/menuitems"] == ["get"]
    assert paths[f"{base}/namespaces/{{namespace}}/menuitems/{{name}}"] == ["get"]
    assert paths[f"{base}/menuitems"] == ["get"]
    assert paths[f"{base}/watch/namespaces/{{namespace}}/menuitems"] == ["get"]
    assert paths[f"{base}/watch/menuitems"] == ["get"]
    assert len(paths) == 2 * 6  # both versions: list, get, list of all, and three watch paths
    definition = r.body["definitions"]["info.programming-kubernetes.restaurant.v1beta1.MenuItem"]
    assert {"price", "available", "toppings"} <= set(definition["properties"])
    r = await api.get(f"/openapi/v3/apis/{GROUP}/v1alpha1")
    paths = _menu_paths(r.body)
    assert paths[f"/apis/{GROUP}/v1alpha1/namespaces/{{namespace}}/menuitems/{{name}}"] == ["get"]
    assert "info.programming-kubernetes.restaurant.v1alpha1.MenuItem" in r.body["components"]["schemas"]


async def test_storage_holds_no_menu_item(storage_api: Api) -> None:
    api = storage_api
    await _toppings(api, tomato=1)
    await api.create_pizza("margherita", [{"name": "tomato"}])
    await _set_cost(api, "tomato", 2)
    r = await api.get(items_path(name="margherita"))
    assert r.status == 200 and r.body["price"] == 2, r
    listed = await api.extra["storage"].list("/")
    keys = [kv.key for kv in listed.items]
    assert any("/pizzas/" in key for key in keys), keys
    assert not any("menuitems" in key for key in keys), keys


@pytest.mark.parametrize("flag", ["--watch-cache=false"])
async def test_served_without_the_watch_cache(tmp_path: Path, flag: str) -> None:
    """Without --watch-cache the menu keeps caches of its own sources (stored reads go to storage)."""
    async with running_server(tmp_path / "data", flag) as server, server.session() as session:
        api = Api(server, session)
        await _toppings(api, tomato=1)
        r = await api.get(items_path(namespace=None))
        start = r.body["metadata"]["resourceVersion"]
        await api.create_pizza("margherita", [{"name": "tomato", "quantity": 2}])
        r = await api.get(items_path(name="margherita"))
        assert r.status == 200 and r.body["price"] == 2, r
        await _set_cost(api, "tomato", 1.5)
        events = await _watch(api, start, 2)
        assert _summary(events) == [("ADDED", "margherita", 2, True), ("MODIFIED", "margherita", 3, True)]
