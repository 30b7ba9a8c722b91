"""Validation (422 Invalid with causes) and the PizzaToppings admission plugin (403)."""

from __future__ import annotations

import pytest

GROUP = "restaurant.programming-kubernetes.info"


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_negative_cost_is_invalid(api, version: str) -> None:
    r = await api.post(api.toppings_path(version), api.topping("bad", -1, version))
    assert r.status == 422, r
    body = r.body
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "Topping"
    assert body["details"]["group"] == GROUP
    assert body["details"]["name"] == "bad"
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.cost"]
    assert body["message"].startswith(f'Topping.{GROUP} "bad" is invalid: spec.cost')
    assert (await api.get(api.toppings_path(version, "bad"))).status == 404


async def test_missing_cost_is_invalid(api) -> None:
    body = api.topping("nocost")
    body["spec"] = {}
    r = await api.post(api.toppings_path(), body)
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    # kube adds an unfielded note: the kind has CEL rules that a Required error keeps from running.
    cause, note = r.body["details"]["causes"]
    assert note["field"] == "<nil>"
    assert note["message"].startswith('Invalid value: "null": some validation rules were not checked')
    assert cause["field"] == "spec.cost"
    assert cause["reason"] == "FieldValueRequired"
    assert (await api.get(api.toppings_path("v1beta1", "nocost"))).status == 404


async def test_missing_spec_is_invalid_for_topping(api) -> None:
    body = api.topping("nospec")
    del body["spec"]
    r = await api.post(api.toppings_path(), body)
    assert r.status == 422, r
    # Required stops the CEL rules, which kube notes in an unfielded cause.
    assert [c["field"] for c in r.body["details"]["causes"]] == ["spec", "<nil>"]


async def test_wrong_type_is_invalid(api) -> None:
    r = await api.post(api.toppings_path(), api.topping("str", "three"))
    assert r.status == 422, r
    assert [c["field"] for c in r.body["details"]["causes"]] == ["spec.cost", "<nil>"]
    assert r.body["details"]["causes"][0]["reason"] == "FieldValueTypeInvalid"


async def test_duplicate_topping_names_in_v1beta1(api) -> None:
    await api.create_toppings("ham")
    r = await api.post(api.pizzas_path(), api.pizza("dup", [{"name": "ham"}, {"name": "ham", "quantity": 2}]))
    assert r.status == 422, r
    body = r.body
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "Pizza"
    assert body["details"]["name"] == "dup"
    causes = body["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.toppings[1]"] or [c["field"] for c in causes] == [
        "spec.toppings[1].name"
    ]
    assert causes[0]["reason"] == "FieldValueDuplicate"
    assert (await api.get(api.pizzas_path("v1beta1", "dup"))).status == 404


async def test_quantity_below_one_is_invalid(api) -> None:
    await api.create_toppings("ham")
    r = await api.post(api.pizzas_path(), api.pizza("zero", [{"name": "ham", "quantity": 0}]))
    assert r.status == 422, r
    assert [c["field"] for c in r.body["details"]["causes"]] == ["spec.toppings[0].quantity"]


@pytest.mark.parametrize("name", ["Upper", "under_score", "-lead", "a" * 254, "dots..dots"])
async def test_invalid_names(api, name: str) -> None:
    r = await api.post(api.toppings_path(), api.topping(name))
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    assert r.body["details"]["kind"] == "Topping"
    assert [c["field"] for c in r.body["details"]["causes"]] == ["metadata.name"]
    listed = (await api.get(api.toppings_path())).body
    assert listed["items"] == []


async def test_missing_name_is_invalid(api) -> None:
    body = api.topping("x")
    body["metadata"] = {}
    r = await api.post(api.toppings_path(), body)
    assert r.status == 422, r
    assert r.body["message"] == (
        f'Topping.{GROUP} "" is invalid: metadata.name: Required value: name or generateName is required'
    )


async def test_invalid_labels_are_invalid(api) -> None:
    r = await api.post(api.toppings_path(), api.topping("lbl", labels={"bad key!": "v"}))
    assert r.status == 422, r
    assert [c["field"] for c in r.body["details"]["causes"]] == ["metadata.labels"]


async def test_invalid_vs_not_found_details_kind(api) -> None:
    """Invalid names the KIND; NotFound and AlreadyExists name the RESOURCE."""
    await api.create_toppings("ham")
    r = await api.post(api.pizzas_path(), api.pizza("p", [{"name": "ham", "quantity": -1}]))
    assert (r.status, r.body["details"]["kind"]) == (422, "Pizza")
    r = await api.get(api.pizzas_path("v1beta1", "p"))
    assert (r.status, r.body["details"]["kind"]) == (404, "pizzas")
    await api.create_pizza("p", [{"name": "ham"}])
    r = await api.post(api.pizzas_path(), api.pizza("p", [{"name": "ham"}]))
    assert (r.status, r.body["reason"], r.body["details"]["kind"]) == (409, "AlreadyExists", "pizzas")


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_unknown_topping_on_create_is_forbidden(api, version: str) -> None:
    await api.create_toppings("ham")
    toppings = ["ham", "pineapple"] if version == "v1alpha1" else [{"name": "ham"}, {"name": "pineapple"}]
    r = await api.post(api.pizzas_path(version), api.pizza("hawaii", toppings, version))
    assert r.status == 403, r
    assert r.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pizzas.{GROUP} "hawaii" is forbidden: unknown topping: pineapple',
        "reason": "Forbidden",
        "details": {"name": "hawaii", "group": GROUP, "kind": "pizzas"},
        "code": 403,
    }
    assert (await api.get(api.pizzas_path(version, "hawaii"))).status == 404


async def test_unknown_topping_on_update_is_forbidden(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    created = await api.create_pizza("p", [{"name": "ham"}])
    created["spec"]["toppings"].append({"name": "pineapple", "quantity": 1})
    r = await api.put(api.pizzas_path("v1beta1", "p"), created)
    assert r.status == 403, r
    assert r.body["message"] == f'pizzas.{GROUP} "p" is forbidden: unknown topping: pineapple'
    r = await api.patch(
        api.pizzas_path("v1beta1", "p"),
        [{"op": "add", "path": "/spec/toppings/-", "value": {"name": "anchovy"}}],
        "application/json-patch+json",
    )
    assert r.status == 403, r
    assert r.body["message"] == f'pizzas.{GROUP} "p" is forbidden: unknown topping: anchovy'
    current = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert current["spec"]["toppings"] == [{"name": "ham", "quantity": 1}]
    assert current["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_admission_does_not_apply_to_status(api) -> None:
    """A pizza whose topping was deleted afterwards can still get its status updated."""
    await api.create_toppings("ham")
    created = await api.create_pizza("p", [{"name": "ham"}])
    assert (await api.delete(api.toppings_path("v1beta1", "ham"))).status == 200
    r = await api.put(api.pizzas_path("v1beta1", "p") + "/status", {**created, "status": {"cost": 1}})
    assert r.status == 200, r
    # ... while a spec write still has to name existing toppings.
    r = await api.patch(
        api.pizzas_path("v1beta1", "p"), {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json"
    )
    assert r.status == 403, r
