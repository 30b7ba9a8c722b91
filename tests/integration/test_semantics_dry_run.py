"""dryRun=All on every write verb, on both backends: every step runs, nothing is persisted, and the
answer is what would have been stored.

Complements test_dry_run.py. "Nothing is persisted" is checked the strict way: the collection's
resourceVersion does not move and a watch open across the dry runs sees no event.
"""

from __future__ import annotations

import pytest

from tests.fixtures.objects import list_resource_version

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"
DRY = {"dryRun": "All"}
HOLD = "example.com/hold"


async def _no_events_since(api, path: str, rv: str) -> None:
    """Nothing happened after `rv`: a watch from it, bounded by timeoutSeconds, ends empty."""
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    async with api.session.get(path, params=params) as stream:
        assert await api.read_to_end(stream, timeout=8) == []


async def test_dry_run_create_answers_what_would_be_stored(any_api) -> None:
    api = any_api
    await api.create_toppings("ham", "cheese")
    path = api.pizzas_path()
    rv = await list_resource_version(api, path)
    # Defaulting (v1beta1 quantity), system fields, a generated name — and the request version's shape.
    body = api.pizza("", [{"name": "ham"}, {"name": "cheese", "quantity": 2}], generateName="dry-")
    del body["metadata"]["name"]
    r = await api.post(path, body, params=DRY)
    assert r.status == 201, r
    meta = r.body["metadata"]
    assert meta["name"].startswith("dry-") and len(meta["name"]) == len("dry-") + 5
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert meta["namespace"] == "default"
    assert r.body["spec"]["toppings"] == [{"name": "ham", "quantity": 1}, {"name": "cheese", "quantity": 2}]
    assert r.body["status"] == {}
    r = await api.post(
        api.pizzas_path("v1alpha1"), api.pizza("alpha", ["ham", "ham"], "v1alpha1"), params=DRY
    )
    assert r.status == 201, r
    assert r.body["apiVersion"] == f"{GROUP}/v1alpha1" and r.body["spec"]["toppings"] == ["ham", "ham"]
    # Validation, admission and conflicts still answer.
    r = await api.post(path, api.pizza("bad", [{"name": "caviar"}]), params=DRY)
    assert r.status == 403, r
    r = await api.post(path, api.pizza("Bad_Name", []), params=DRY)
    assert r.status == 422, r
    assert (await api.get(api.pizzas_path("v1beta1", meta["name"]))).status == 404
    assert await list_resource_version(api, path) == rv
    await _no_events_since(api, path, rv)


async def test_dry_run_update_and_patch_of_missing_or_stale(any_api) -> None:
    api = any_api
    created = (await api.post(api.toppings_path(), api.topping("salt"))).body
    path = api.toppings_path("v1beta1", "salt")
    rv = created["metadata"]["resourceVersion"]
    r = await api.put(
        api.toppings_path("v1beta1", "ghost"), api.topping("ghost", resourceVersion=rv), params=DRY
    )
    assert r.status == 404, r
    r = await api.patch(api.toppings_path("v1beta1", "ghost"), {"spec": {"cost": 2}}, MERGE, params=DRY)
    assert r.status == 404, r
    r = await api.put(path, {**created, "metadata": {"name": "salt"}, "spec": {"cost": 3}}, params=DRY)
    assert r.status == 422, r
    r = await api.put(path, {**created, "spec": {"cost": -1}}, params=DRY)
    assert r.status == 422, r
    r = await api.put(path, {**created, "spec": {"cost": 2}}, params=DRY)
    assert r.status == 200, r
    # What would be stored: generation moved, resourceVersion did not (nothing was written).
    assert (r.body["spec"], r.body["metadata"]["generation"]) == ({"cost": 2}, 2)
    assert r.body["metadata"]["resourceVersion"] == rv
    assert (await api.get(path)).body == created
    await _no_events_since(api, api.toppings_path(), rv)


async def test_dry_run_delete_paths(any_api) -> None:
    api = any_api
    plain = (await api.post(api.toppings_path(), api.topping("plain"))).body
    held = (await api.post(api.toppings_path(), api.topping("held", finalizers=[HOLD]))).body
    rv = await list_resource_version(api, api.toppings_path())

    r = await api.delete(api.toppings_path("v1beta1", "plain"), params=DRY)
    assert (r.status, r.body["status"], r.body["details"]["uid"]) == (
        200,
        "Success",
        plain["metadata"]["uid"],
    )
    # Preconditions are still checked.
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "plain"),
        json={"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"], "preconditions": {"uid": "x"}},
    )
    assert r.status == 409, r
    # A finalizer: the answer is the object marked for deletion, with the GC finalizer asked for.
    r = await api.delete(api.toppings_path("v1beta1", "held"), params={**DRY, "propagationPolicy": "Orphan"})
    assert r.status == 200, r
    assert r.body["metadata"]["deletionTimestamp"]
    assert r.body["metadata"]["finalizers"] == [HOLD, "orphan"]
    assert r.body["metadata"]["generation"] == held["metadata"]["generation"] + 1
    # deletecollection with a selector lists what it would delete.
    r = await api.delete(api.toppings_path(), params={**DRY, "fieldSelector": "metadata.name=plain"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["plain"]
    assert (await api.get(api.toppings_path("v1beta1", "plain"))).body == plain
    assert (await api.get(api.toppings_path("v1beta1", "held"))).body == held
    await _no_events_since(api, api.toppings_path(), rv)


async def test_dry_run_removal_of_the_last_finalizer_keeps_the_object(any_api) -> None:
    api = any_api
    await api.post(api.toppings_path(), api.topping("held", finalizers=[HOLD]))
    path = api.toppings_path("v1beta1", "held")
    marked = (await api.delete(path)).body
    r = await api.patch(path, {"metadata": {"finalizers": None}}, MERGE, params=DRY)
    assert r.status == 200, r
    assert not r.body["metadata"].get("finalizers")
    assert (await api.get(path)).body == marked
    await _no_events_since(api, api.toppings_path(), marked["metadata"]["resourceVersion"])


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_dry_run_values_other_than_all_are_422(api, method: str) -> None:
    created = (await api.post(api.toppings_path(), api.topping("x"))).body
    path = api.toppings_path() if method == "POST" else api.toppings_path("v1beta1", "x")
    headers = {"Content-Type": MERGE} if method == "PATCH" else {}
    body = {"PATCH": {"spec": {"cost": 2}}, "DELETE": None}.get(method, created)
    r = await api.request(method, path, json=body, params={"dryRun": "Partial"}, headers=headers)
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "dryRun"
    assert (await api.get(api.toppings_path("v1beta1", "x"))).body == created
