"""/scale on Pizza: autoscaling/v1 Scale over spec.replicas / status.replicas, as kube's CR ScaleREST."""

from __future__ import annotations

from typing import Any

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
SPEC_ANNOTATION = f"{GROUP}/spec.replicas"


def alpha_number(alpha: dict[str, Any]) -> int:
    """The order number a v1alpha1 pizza carries in its annotation (checked to be an integer)."""
    return int(alpha["metadata"]["annotations"][f"{GROUP}/spec.orderNumber"])


def scale_path(api: Any, name: str, version: str = "v1beta1") -> str:
    return api.pizzas_path(version, name) + "/scale"


async def _pizza_with_replicas(api: Any, name: str, replicas: int) -> dict[str, Any]:
    body = api.pizza(name, [{"name": "tomato", "quantity": 1}])
    body["spec"]["replicas"] = replicas
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r
    return r.body


async def test_get_put_patch_scale(any_api) -> None:
    api = any_api
    await api.create_toppings("tomato")
    pizza = await _pizza_with_replicas(api, "margherita", 2)
    meta = pizza["metadata"]

    r = await api.get(scale_path(api, "margherita"))
    assert r.status == 200, r
    assert r.body == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "margherita",
            "namespace": "default",
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 0},
    }

    # PUT with the shared resourceVersion: spec.replicas written, generation bumped, status kept.
    scale = {**r.body, "spec": {"replicas": 5}}
    r = await api.put(scale_path(api, "margherita"), scale)
    assert r.status == 200, r
    assert r.body["spec"] == {"replicas": 5}
    rv = r.body["metadata"]["resourceVersion"]
    assert int(rv) > int(meta["resourceVersion"])
    r = await api.get(api.pizzas_path("v1beta1", "margherita"))
    assert r.body["spec"]["replicas"] == 5
    assert r.body["metadata"]["resourceVersion"] == rv
    assert r.body["metadata"]["generation"] == 2
    # The write is recorded as the manager's, on the scale subresource, in the parent's version.
    entry = r.body["metadata"]["managedFields"][-1]
    assert entry["subresource"] == "scale" and entry["apiVersion"] == f"{GROUP}/v1beta1"
    assert entry["fieldsV1"] == {"f:spec": {"f:replicas": {}}}

    # A stale resourceVersion is a 409, nothing written.
    r = await api.put(scale_path(api, "margherita"), scale)
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"

    # Every patch type kubectl and controllers send.
    r = await api.patch(scale_path(api, "margherita"), {"spec": {"replicas": 3}}, MERGE)
    assert r.status == 200, r
    assert r.body["spec"] == {"replicas": 3}
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 4}]
    r = await api.patch(scale_path(api, "margherita"), ops, JSON_PATCH)
    assert r.status == 200 and r.body["spec"] == {"replicas": 4}, r
    r = await api.patch(scale_path(api, "margherita"), {"spec": {"replicas": 0}}, SMP)
    assert r.status == 200, r
    assert r.body["spec"] == {}  # Go's omitempty on ScaleSpec.replicas
    r = await api.get(api.pizzas_path("v1beta1", "margherita"))
    assert r.body["spec"]["replicas"] == 0
    # Apply is served too (tests/integration/test_scale_apply.py); another type is a 415.
    r = await api.patch(scale_path(api, "margherita"), "{}", "application/xml")
    assert r.status == 415, r
    assert "application/apply-patch+yaml" in r.body["message"]


async def test_scale_validation_and_errors(api) -> None:
    await api.create_toppings("tomato")
    await _pizza_with_replicas(api, "margherita", 1)
    path = scale_path(api, "margherita")

    # The kind's bounds hold through /scale: 422 on the Pizza, naming its field.
    r = await api.patch(path, {"spec": {"replicas": 101}}, MERGE)
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    assert r.body["details"]["kind"] == "Pizza" and r.body["details"]["group"] == GROUP
    causes = r.body["details"]["causes"]
    assert {
        "reason": "FieldValueInvalid",
        "field": "spec.replicas",
        "message": "Invalid value: 101: spec.replicas in body should be less than or equal to 100",
    } in causes
    r = await api.patch(path, {"spec": {"replicas": -1}}, MERGE)
    assert r.status == 422, r
    fields = {c["field"] for c in r.body["details"]["causes"]}
    assert fields == {"spec.replicas", ".spec.replicas"}  # the schema's and kube's ValidateScaleSpec
    r = await api.get(api.pizzas_path("v1beta1", "margherita"))
    assert r.body["spec"]["replicas"] == 1

    # A Scale body that does not decode as one: 400; inside a patch: 422 on `patch`.
    r = await api.patch(path, {"spec": {"replicas": "three"}}, MERGE)
    assert r.status == 422 and r.body["details"]["causes"][0]["field"] == "patch", r
    r = await api.put(
        path,
        {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": "other"},
            "spec": {"replicas": 2},
        },
    )
    assert r.status == 400, r
    assert (
        r.body["message"] == "the name of the object (other) does not match the name on the URL (margherita)"
    )
    r = await api.put(
        path,
        {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": "margherita"},
            "spec": {"replicas": 2, "bogus": 1},
        },
        params={"fieldValidation": "Strict"},
    )
    assert r.status == 400 and 'unknown field "spec.bogus"' in r.body["message"], r

    # A missing object: 404 on the pizza.
    r = await api.get(scale_path(api, "nope"))
    assert r.status == 404 and r.body["details"] == {"name": "nope", "group": GROUP, "kind": "pizzas"}, r

    # A pizza without replicas: kube's CR scale answers GET with an internal error and refuses a
    # write that does not set them; a merge patch that sets them works (kubectl scale).
    await api.create_pizza("plain", [{"name": "tomato", "quantity": 1}])
    r = await api.get(scale_path(api, "plain"))
    assert r.status == 500 and r.body["message"].endswith(
        'the spec replicas field ".spec.replicas" does not exist'
    )
    r = await api.patch(scale_path(api, "plain"), {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert r.status == 400, r
    assert r.body["message"] == 'the spec replicas field ".spec.replicas" cannot be empty'
    r = await api.patch(scale_path(api, "plain"), {"spec": {"replicas": 2}}, MERGE)
    assert r.status == 200 and r.body["spec"] == {"replicas": 2}, r

    # dry-run changes nothing.
    r = await api.patch(path, {"spec": {"replicas": 9}}, MERGE, params={"dryRun": "All"})
    assert r.status == 200 and r.body["spec"] == {"replicas": 9}, r
    r = await api.get(path)
    assert r.body["spec"] == {"replicas": 1}


async def test_v1alpha1_keeps_replicas_in_an_annotation(api) -> None:
    """v1alpha1 has no replicas: it carries them in annotations, and writing back keeps them."""
    await api.create_toppings("tomato")
    await _pizza_with_replicas(api, "margherita", 3)
    r = await api.patch(
        api.pizzas_path("v1beta1", "margherita") + "/status", {"status": {"replicas": 2}}, MERGE
    )
    assert r.status == 200, r
    r = await api.get(api.pizzas_path("v1alpha1", "margherita"))
    alpha = r.body
    assert "replicas" not in alpha["spec"] and "replicas" not in alpha.get("status", {})
    assert alpha["metadata"]["annotations"] == {
        SPEC_ANNOTATION: "3",
        f"{GROUP}/status.replicas": "2",
        f"{GROUP}/spec.orderNumber": str(alpha_number(alpha)),
    }
    # A v1alpha1 client writes back what it read, with another topping: replicas survive.
    alpha["spec"]["toppings"] = ["tomato", "tomato"]
    r = await api.put(api.pizzas_path("v1alpha1", "margherita"), alpha)
    assert r.status == 200, r
    r = await api.get(api.pizzas_path("v1beta1", "margherita"))
    assert r.body["spec"]["replicas"] == 3 and r.body["status"]["replicas"] == 2
    assert "annotations" not in r.body["metadata"]
    # ... and sets them through the annotation, checked against the hub's bounds.
    alpha = (await api.get(api.pizzas_path("v1alpha1", "margherita"))).body
    alpha["metadata"]["annotations"][SPEC_ANNOTATION] = "500"
    r = await api.put(api.pizzas_path("v1alpha1", "margherita"), alpha)
    assert r.status == 422 and r.body["details"]["causes"][0]["field"] == "spec.replicas", r
    # /scale in v1alpha1 works on the same replicas.
    r = await api.patch(scale_path(api, "margherita", "v1alpha1"), {"spec": {"replicas": 4}}, MERGE)
    assert r.status == 200 and r.body["status"] == {"replicas": 2}, r
    r = await api.get(api.pizzas_path("v1alpha1", "margherita"))
    assert r.body["metadata"]["annotations"][SPEC_ANNOTATION] == "4"
