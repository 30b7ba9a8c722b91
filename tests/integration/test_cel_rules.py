"""x-kubernetes-validations on the restaurant kinds over real HTTPS, and validation ratcheting.

The expected texts are kube-apiserver 1.36's for the same rules on CRDs (shared/KUBE-BEHAVIOUR.md).
Objects "stored before a rule existed" are written straight into storage as v1beta1 JSON, the way an
older release would have left them.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from registry.generic.keys import object_key

GROUP = "restaurant.programming-kubernetes.info"
PORTIONS = "a pizza holds at most 30 portions"


def _toppings(n: int, quantity: int) -> list[dict[str, Any]]:
    return [{"name": f"t{i}", "quantity": quantity} for i in range(n)]


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_pizza_over_30_portions_v1beta1(api) -> None:
    r = await api.post(api.pizzas_path("v1beta1"), api.pizza("big", _toppings(4, 8)))
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    assert r.body["details"]["kind"] == "Pizza" and r.body["details"]["name"] == "big"
    assert _causes(r.body) == [("FieldValueInvalid", "spec", f"Invalid value: {PORTIONS}")]
    assert r.body["message"] == f'Pizza.{GROUP} "big" is invalid: spec: Invalid value: {PORTIONS}'
    assert (await api.get(api.pizzas_path("v1beta1", "big"))).status == 404
    # Exactly 30 portions is fine (the rule runs after defaulting: quantity 1 each).
    await api.create_toppings(*(f"t{i}" for i in range(30)))
    r = await api.post(api.pizzas_path("v1beta1"), api.pizza("full", [{"name": f"t{i}"} for i in range(30)]))
    assert r.status == 201, r


async def test_pizza_over_30_portions_v1alpha1(api) -> None:
    r = await api.post(api.pizzas_path("v1alpha1"), api.pizza("big", ["salami"] * 31, "v1alpha1"))
    assert r.status == 422, r
    assert _causes(r.body) == [("FieldValueInvalid", "spec", f"Invalid value: {PORTIONS}")]
    await api.create_toppings("salami")
    r = await api.post(api.pizzas_path("v1alpha1"), api.pizza("ok", ["salami"] * 30, "v1alpha1"))
    assert r.status == 201, r


async def test_one_422_for_metadata_schema_and_rule_errors(api) -> None:
    toppings = _toppings(4, 8)
    toppings[0]["quantity"] = 101  # over the schema's maximum: Invalid, which does not stop the rules
    r = await api.post(api.pizzas_path("v1beta1"), api.pizza("Bad_Name", toppings))
    assert r.status == 422, r
    fields = [f for _, f, _ in _causes(r.body)]
    assert fields == ["metadata.name", "spec.toppings[0].quantity", "spec"], r


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_cost_transition_rule_only_on_update(api, version: str) -> None:
    path = api.toppings_path(version)
    # On create there is no oldSelf: any cost is accepted.
    r = await api.post(path, api.topping("ham", 3, version))
    assert r.status == 201, r
    current = r.body
    current["spec"]["cost"] = 6.5
    r = await api.put(api.toppings_path(version, "ham"), current)
    assert r.status == 422, r
    message = "Invalid value: 6.5: cost may at most double in one update, from 3 to 6.5"
    assert _causes(r.body) == [("FieldValueInvalid", "spec.cost", message)]
    assert r.body["message"] == f'Topping.{GROUP} "ham" is invalid: spec.cost: {message}'
    current["spec"]["cost"] = 6
    r = await api.put(api.toppings_path(version, "ham"), current)
    assert r.status == 200, r
    r = await api.patch(
        api.toppings_path(version, "ham"), {"spec": {"cost": 13}}, "application/merge-patch+json"
    )
    assert r.status == 422 and _causes(r.body)[0][1] == "spec.cost", r


async def _store_v1beta1(api, resource: str, obj: dict[str, Any], namespace: str = "") -> None:
    """Write an object as an older release stored it: v1beta1 JSON, straight through storage."""
    obj = {"apiVersion": f"{GROUP}/v1beta1", **obj}
    obj["metadata"] = {
        "uid": "0c4b5d6e-0000-4000-8000-000000000001",
        "creationTimestamp": "2024-01-01T00:00:00Z",
        **obj["metadata"],
    }
    key = object_key(GROUP, resource, namespace, obj["metadata"]["name"])
    await api.extra["storage"].create(key, orjson.dumps(obj))


async def test_ratcheting_an_old_pizza_over_the_limit(storage_api) -> None:
    api = storage_api
    await api.create_toppings(*(f"t{i}" for i in range(5)))
    old = {
        "kind": "Pizza",
        "metadata": {"name": "old", "namespace": "default"},
        "spec": {"toppings": _toppings(5, 8)},
    }
    await _store_v1beta1(api, "pizzas", old, "default")
    path = api.pizzas_path("v1beta1", "old")
    # A change elsewhere (a label) leaves spec unchanged: the rule's error is only a warning.
    r = await api.patch(path, {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json")
    assert r.status == 200, r
    assert PORTIONS in r.headers.get("Warning", ""), r.headers
    # The same through v1alpha1 (the node is compared in the request's version).
    r = await api.patch(
        api.pizzas_path("v1alpha1", "old"),
        {"metadata": {"labels": {"c": "d"}}},
        "application/merge-patch+json",
    )
    assert r.status == 200, r
    # Changing spec while still over the limit is refused.
    toppings = _toppings(5, 7)
    r = await api.patch(path, {"spec": {"toppings": toppings}}, "application/merge-patch+json")
    assert r.status == 422, r
    assert _causes(r.body) == [("FieldValueInvalid", "spec", f"Invalid value: {PORTIONS}")]
    # Bringing it under the limit is allowed.
    r = await api.patch(path, {"spec": {"toppings": _toppings(5, 6)}}, "application/merge-patch+json")
    assert r.status == 200, r


async def test_ratcheting_openapi_validations(storage_api) -> None:
    api = storage_api
    await api.create_toppings("a", "b")
    # status.cost below the schema's minimum, spec valid: stored by an older, laxer release.
    old = {
        "kind": "Pizza",
        "metadata": {"name": "neg", "namespace": "default"},
        "spec": {"toppings": [{"name": "a", "quantity": 1}]},
        "status": {"cost": -5},
    }
    await _store_v1beta1(api, "pizzas", old, "default")
    path = api.pizzas_path("v1beta1", "neg")
    r = await api.patch(
        path, {"spec": {"toppings": [{"name": "b", "quantity": 2}]}}, "application/merge-patch+json"
    )
    assert r.status == 200, r  # the invalid status is unchanged: ratcheted
    r = await api.patch(path + "/status", {"status": {"cost": -6}}, "application/merge-patch+json")
    assert r.status == 422, r
    assert [c["field"] for c in r.body["details"]["causes"]] == ["status.cost"], r
    # A quantity over today's maximum (and so over 30 portions): map-list items match by name, so
    # changing only topping b keeps a's schema error ratcheted, but the spec rule sees a change.
    heavy = {
        "kind": "Pizza",
        "metadata": {"name": "heavy", "namespace": "default"},
        "spec": {"toppings": [{"name": "a", "quantity": 150}, {"name": "b", "quantity": 1}]},
    }
    await _store_v1beta1(api, "pizzas", heavy, "default")
    hpath = api.pizzas_path("v1beta1", "heavy")
    r = await api.patch(hpath, {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
    assert r.status == 200, r
    r = await api.patch(
        hpath,
        {"spec": {"toppings": [{"name": "b", "quantity": 2}, {"name": "a", "quantity": 150}]}},
        "application/merge-patch+json",
    )
    assert r.status == 422, r
    assert _causes(r.body) == [("FieldValueInvalid", "spec", f"Invalid value: {PORTIONS}")]


async def test_rules_published_in_openapi_v2_and_v3(api) -> None:
    prefix = "info.programming-kubernetes.restaurant"
    v2 = (await api.get("/openapi/v2")).body["definitions"]
    for version in ("v1alpha1", "v1beta1"):
        v3 = (await api.get(f"/openapi/v3/apis/{GROUP}/{version}")).body["components"]["schemas"]
        for doc in (v2, v3):
            pizza_spec = doc[f"{prefix}.{version}.Pizza"]["properties"]["spec"]
            [rule] = pizza_spec["x-kubernetes-validations"]
            assert rule["message"] == PORTIONS and "<= 30" in rule["rule"]
            cost = doc[f"{prefix}.{version}.Topping"]["properties"]["spec"]["properties"]["cost"]
            assert cost["x-kubernetes-validations"] == [
                {
                    "rule": "self <= oldSelf * 2.0",
                    "messageExpression": (
                        "'cost may at most double in one update, from %s to %s'.format([oldSelf, self])"
                    ),
                }
            ]


async def test_server_side_apply_runs_the_rules(api) -> None:
    manifest = api.pizza("applied", _toppings(4, 8))
    r = await api.patch(
        api.pizzas_path("v1beta1", "applied"),
        manifest,
        "application/apply-patch+yaml",
        params={"fieldManager": "tester"},
    )
    assert r.status == 422, r
    assert _causes(r.body) == [("FieldValueInvalid", "spec", f"Invalid value: {PORTIONS}")]
