"""dryRun=All: the answer is what the write would have produced; nothing is persisted."""

from __future__ import annotations

import pytest

GROUP = "restaurant.programming-kubernetes.info"
DRY = {"dryRun": "All"}


async def test_dry_run_create(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    rv_before = (await api.get(api.pizzas_path())).body["metadata"]["resourceVersion"]
    r = await api.post(api.pizzas_path("v1alpha1"), api.pizza("dry", ["ham", "ham"], "v1alpha1"), params=DRY)
    assert r.status == 201, r
    assert r.body["metadata"]["name"] == "dry"
    assert r.body["metadata"]["uid"]
    assert r.body["metadata"]["generation"] == 1
    assert r.body["spec"]["toppings"] == ["ham", "ham"]
    assert (await api.get(api.pizzas_path("v1beta1", "dry"))).status == 404
    after = (await api.get(api.pizzas_path())).body
    assert after["items"] == []
    assert after["metadata"]["resourceVersion"] == rv_before


async def test_dry_run_create_still_validates_and_admits(api) -> None:
    await api.create_toppings("ham")
    r = await api.post(api.toppings_path(), api.topping("neg", -1), params=DRY)
    assert r.status == 422, r
    r = await api.post(api.pizzas_path(), api.pizza("p", [{"name": "nope"}]), params=DRY)
    assert r.status == 403, r
    r = await api.post(api.toppings_path(), api.topping("ham"), params=DRY)
    assert r.status == 409, r
    assert r.body["reason"] == "AlreadyExists"


async def test_dry_run_update_and_patch(any_api) -> None:
    api = any_api
    await api.create_toppings("ham", "cheese")
    created = await api.create_pizza("p", [{"name": "ham"}])
    path = api.pizzas_path("v1beta1", "p")

    changed = {**created, "spec": {"toppings": [{"name": "cheese", "quantity": 3}]}}
    r = await api.put(path, changed, params=DRY)
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == [{"name": "cheese", "quantity": 3}]
    assert r.body["metadata"]["generation"] == 2

    r = await api.patch(
        path, {"metadata": {"labels": {"dry": "yes"}}}, "application/merge-patch+json", params=DRY
    )
    assert r.status == 200, r
    assert r.body["metadata"]["labels"] == {"dry": "yes"}

    r = await api.patch(
        path,
        [{"op": "replace", "path": "/spec/toppings/0/quantity", "value": 7}],
        "application/json-patch+json",
        params=DRY,
    )
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == [{"name": "ham", "quantity": 7}]

    r = await api.put(path + "/status", {**created, "status": {"cost": 9}}, params=DRY)
    assert r.status == 200, r
    assert r.body["status"] == {"cost": 9}

    assert (await api.get(path)).body == created

    # A dry-run update with a stale resourceVersion is still a conflict.
    r = await api.put(
        path, {**changed, "metadata": {**created["metadata"], "resourceVersion": "1"}}, params=DRY
    )
    assert r.status == 409, r


async def test_dry_run_delete(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    before = (await api.get(api.toppings_path("v1beta1", "ham"))).body
    r = await api.delete(api.toppings_path("v1beta1", "ham"), params=DRY)
    assert r.status == 200, r
    assert r.body["kind"] == "Status" and r.body["status"] == "Success"
    assert r.body["details"]["uid"] == before["metadata"]["uid"]
    assert (await api.get(api.toppings_path("v1beta1", "ham"))).body == before

    # dryRun in the DeleteOptions body counts as well.
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "ham"),
        json={"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]},
    )
    assert r.status == 200, r
    assert (await api.get(api.toppings_path("v1beta1", "ham"))).body == before


async def test_dry_run_delete_with_finalizer(api) -> None:
    await api.post(api.toppings_path(), api.topping("held", finalizers=["example.com/x"]))
    before = (await api.get(api.toppings_path("v1beta1", "held"))).body
    r = await api.delete(api.toppings_path("v1beta1", "held"), params=DRY)
    assert r.status == 200, r
    assert r.body["metadata"]["deletionTimestamp"]
    assert (await api.get(api.toppings_path("v1beta1", "held"))).body == before


async def test_dry_run_deletecollection(api) -> None:
    await api.create_toppings("a", "b")
    r = await api.delete(api.toppings_path(), params=DRY)
    assert r.status == 200, r
    assert sorted(i["metadata"]["name"] for i in r.body["items"]) == ["a", "b"]
    assert len((await api.get(api.toppings_path())).body["items"]) == 2


@pytest.mark.parametrize("value", ["all", "Some", ""])
async def test_bad_dry_run_value_is_rejected(api, value: str) -> None:
    r = await api.post(api.toppings_path(), api.topping("x"), params={"dryRun": value})
    assert r.status in (400, 422), r
    assert (await api.get(api.toppings_path("v1beta1", "x"))).status == 404
