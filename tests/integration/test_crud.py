"""Create, read, list, update, patch and delete in both versions, on both storage backends."""

from __future__ import annotations

import pytest

GROUP = "restaurant.programming-kubernetes.info"
GENERIC_422 = "the server rejected our request due to an error in our request"


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_topping_lifecycle(any_api, version: str) -> None:
    api = any_api
    r = await api.post(api.toppings_path(version), api.topping("salami", 2, version))
    assert r.status == 201, r
    created = r.body
    assert created["apiVersion"] == f"{GROUP}/{version}"
    assert created["kind"] == "Topping"
    assert created["spec"] == {"cost": 2}
    meta = created["metadata"]
    assert meta["name"] == "salami" and "namespace" not in meta
    assert int(meta["resourceVersion"]) > 0

    r = await api.post(api.toppings_path(version), api.topping("salami", 2, version))
    assert r.status == 409
    assert r.body["reason"] == "AlreadyExists"
    assert r.body["message"] == f'toppings.{GROUP} "salami" already exists'
    assert r.body["details"] == {"name": "salami", "group": GROUP, "kind": "toppings"}

    r = await api.get(api.toppings_path(version, "salami"))
    assert r.status == 200
    assert r.body == created

    r = await api.get(api.toppings_path(version))
    assert r.status == 200
    assert r.body["kind"] == "ToppingList"
    assert r.body["apiVersion"] == f"{GROUP}/{version}"
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["salami"]
    assert int(r.body["metadata"]["resourceVersion"]) >= int(meta["resourceVersion"])

    # PUT with the current resourceVersion.
    body = {**created, "spec": {"cost": 3}}
    r = await api.put(api.toppings_path(version, "salami"), body)
    assert r.status == 200, r
    updated = r.body
    assert updated["spec"] == {"cost": 3}
    assert int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert updated["metadata"]["uid"] == meta["uid"]

    # Stale resourceVersion → Conflict; nothing written.
    r = await api.put(api.toppings_path(version, "salami"), {**created, "spec": {"cost": 9}})
    assert r.status == 409
    assert r.body["reason"] == "Conflict"
    assert r.body["message"] == (
        f'Operation cannot be fulfilled on toppings.{GROUP} "salami": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert r.body["details"] == {"name": "salami", "group": GROUP, "kind": "toppings"}

    # No resourceVersion at all → 422 (custom resources do not allow unconditional updates).
    unconditional = {**created, "metadata": {"name": "salami"}, "spec": {"cost": 9}}
    r = await api.put(api.toppings_path(version, "salami"), unconditional)
    assert r.status == 422
    assert r.body["reason"] == "Invalid"
    assert r.body["message"] == (
        f'toppings.{GROUP} "salami" is invalid: metadata.resourceVersion: Invalid value: 0: '
        "must be specified for an update"
    )
    assert r.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: must be specified for an update",
            "field": "metadata.resourceVersion",
        }
    ]
    assert (await api.get(api.toppings_path(version, "salami"))).body["spec"] == {"cost": 3}

    # Merge patch, then JSON patch.
    r = await api.patch(
        api.toppings_path(version, "salami"), {"spec": {"cost": 4}}, "application/merge-patch+json"
    )
    assert r.status == 200, r
    assert r.body["spec"] == {"cost": 4}
    ops = [
        {"op": "test", "path": "/spec/cost", "value": 4},
        {"op": "replace", "path": "/spec/cost", "value": 5},
    ]
    r = await api.patch(api.toppings_path(version, "salami"), ops, "application/json-patch+json")
    assert r.status == 200, r
    assert r.body["spec"] == {"cost": 5}

    # A failed JSON-patch `test` → 422 with kube's generic message; nothing written.
    r = await api.patch(
        api.toppings_path(version, "salami"),
        [
            {"op": "test", "path": "/spec/cost", "value": 99},
            {"op": "replace", "path": "/spec/cost", "value": 6},
        ],
        "application/json-patch+json",
    )
    assert r.status == 422
    assert r.body["reason"] == "Invalid"
    assert r.body["message"] == GENERIC_422
    assert (await api.get(api.toppings_path(version, "salami"))).body["spec"] == {"cost": 5}

    # Delete → 200 Status with details; 404 after.
    uid = meta["uid"]
    r = await api.delete(api.toppings_path(version, "salami"))
    assert r.status == 200, r
    assert r.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "salami", "group": GROUP, "kind": "toppings", "uid": uid},
    }
    r = await api.get(api.toppings_path(version, "salami"))
    assert r.status == 404
    assert r.body["message"] == f'toppings.{GROUP} "salami" not found'
    assert r.body["details"] == {"name": "salami", "group": GROUP, "kind": "toppings"}
    r = await api.delete(api.toppings_path(version, "salami"))
    assert r.status == 404


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_pizza_crud_across_namespaces(any_api, version: str) -> None:
    api = any_api
    await api.create_toppings("cheese", "ham")
    toppings = ["cheese"] if version == "v1alpha1" else [{"name": "cheese", "quantity": 1}]
    a = await api.create_pizza("a", toppings, version)
    assert a["metadata"]["namespace"] == "default"
    r = await api.post(api.pizzas_path(version, namespace="other"), api.pizza("b", toppings, version))
    assert r.status == 201, r
    assert r.body["metadata"]["namespace"] == "other"

    r = await api.get(api.pizzas_path(version))
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a"]
    assert r.body["kind"] == "PizzaList"
    r = await api.get(f"/apis/{GROUP}/{version}/pizzas")
    assert r.status == 200
    assert sorted((i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.body["items"]) == [
        ("default", "a"),
        ("other", "b"),
    ]
    r = await api.get(api.pizzas_path(version, "b"))
    assert r.status == 404
    assert r.body["details"] == {"name": "b", "group": GROUP, "kind": "pizzas"}

    # Merge patch adds a topping; JSON patch removes it again.
    if version == "v1alpha1":
        merge = {"spec": {"toppings": ["cheese", "ham"]}}
    else:
        merge = {"spec": {"toppings": [{"name": "cheese"}, {"name": "ham", "quantity": 2}]}}
    r = await api.patch(api.pizzas_path(version, "a"), merge, "application/merge-patch+json")
    assert r.status == 200, r
    expected = (
        ["cheese", "ham"]
        if version == "v1alpha1"
        else [
            {"name": "cheese", "quantity": 1},
            {"name": "ham", "quantity": 2},
        ]
    )
    assert r.body["spec"]["toppings"] == expected
    r = await api.patch(
        api.pizzas_path(version, "a"),
        [{"op": "remove", "path": "/spec/toppings/1"}],
        "application/json-patch+json",
    )
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == expected[:1]

    r = await api.delete(api.pizzas_path(version, "a"))
    assert r.status == 200
    assert r.body["details"] == {"name": "a", "group": GROUP, "kind": "pizzas", "uid": a["metadata"]["uid"]}
    assert (await api.get(api.pizzas_path(version, "a"))).status == 404
    assert (await api.get(api.pizzas_path(version, "b", namespace="other"))).status == 200


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "text/plain",
    ],
)
async def test_unsupported_patch_types_are_415(api, content_type: str) -> None:
    await api.create_toppings("olive")
    r = await api.patch(api.toppings_path("v1beta1", "olive"), {"spec": {"cost": 7}}, content_type)
    assert r.status == 415, r
    assert r.body["reason"] == "UnsupportedMediaType"
    assert (await api.get(api.toppings_path("v1beta1", "olive"))).body["spec"] == {"cost": 1}


async def test_patch_of_missing_object_is_404(any_api) -> None:
    api = any_api
    for content_type, body in (
        ("application/merge-patch+json", {"spec": {"cost": 2}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/spec/cost", "value": 2}]),
    ):
        r = await api.patch(api.toppings_path("v1beta1", "ghost"), body, content_type)
        assert r.status == 404, r
        assert r.body["reason"] == "NotFound"
        assert r.body["details"] == {"name": "ghost", "group": GROUP, "kind": "toppings"}
    assert (await api.get(api.toppings_path("v1beta1", "ghost"))).status == 404


async def test_put_of_missing_object_is_404(api) -> None:
    r = await api.put(api.toppings_path("v1beta1", "ghost"), api.topping("ghost", 1, resourceVersion="5"))
    assert r.status == 404, r
    assert (await api.get(api.toppings_path("v1beta1", "ghost"))).status == 404


async def test_put_with_other_name_is_400(api) -> None:
    await api.create_toppings("basil")
    current = (await api.get(api.toppings_path("v1beta1", "basil"))).body
    current["metadata"]["name"] = "parsley"
    r = await api.put(api.toppings_path("v1beta1", "basil"), current)
    assert r.status == 400, r
    assert r.body["reason"] == "BadRequest"
    assert (await api.get(api.toppings_path("v1beta1", "parsley"))).status == 404


async def test_delete_with_preconditions(any_api) -> None:
    api = any_api
    await api.create_toppings("onion")
    current = (await api.get(api.toppings_path("v1beta1", "onion"))).body
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "onion"),
        json={"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}},
    )
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "onion"),
        json={"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}},
    )
    assert r.status == 409, r
    assert (await api.get(api.toppings_path("v1beta1", "onion"))).status == 200
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "onion"),
        json={
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "preconditions": {"uid": current["metadata"]["uid"]},
        },
    )
    assert r.status == 200, r
    assert (await api.get(api.toppings_path("v1beta1", "onion"))).status == 404


async def test_finalizer_holds_deletion(any_api) -> None:
    api = any_api
    await api.create_toppings("garlic")
    r = await api.patch(
        api.toppings_path("v1beta1", "garlic"),
        {"metadata": {"finalizers": ["example.com/hold"]}},
        "application/merge-patch+json",
    )
    assert r.status == 200, r
    r = await api.delete(api.toppings_path("v1beta1", "garlic"))
    assert r.status == 200, r
    assert r.body["kind"] == "Topping"
    assert r.body["metadata"]["deletionTimestamp"]
    assert r.body["metadata"]["finalizers"] == ["example.com/hold"]
    r = await api.patch(
        api.toppings_path("v1beta1", "garlic"),
        {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
        "application/merge-patch+json",
    )
    assert r.status == 422, r
    assert "no new finalizers can be added" in r.body["message"]
    r = await api.patch(
        api.toppings_path("v1beta1", "garlic"),
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    assert r.status == 200, r
    assert (await api.get(api.toppings_path("v1beta1", "garlic"))).status == 404


async def test_deletecollection(any_api) -> None:
    api = any_api
    await api.create_toppings("x1", "x2")
    r = await api.post(api.toppings_path(), api.topping("keep", 1, labels={"keep": "yes"}))
    assert r.status == 201
    r = await api.delete(api.toppings_path(), params={"labelSelector": "!keep"})
    assert r.status == 200, r
    assert r.body["kind"] == "ToppingList"
    assert sorted(i["metadata"]["name"] for i in r.body["items"]) == ["x1", "x2"]
    r = await api.get(api.toppings_path())
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["keep"]


async def test_namespaced_collection_verbs_without_namespace(api) -> None:
    r = await api.post(f"/apis/{GROUP}/v1beta1/pizzas", api.pizza("p", []))
    assert r.status in (404, 405), r
    assert (await api.get(f"/apis/{GROUP}/v1beta1/pizzas")).body["items"] == []
