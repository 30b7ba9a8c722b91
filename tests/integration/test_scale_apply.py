"""Server-side apply on /scale over HTTPS, as kube's ScaleREST + ScaleHandler + the Scale's field manager.

Expected bodies follow k8s.io/apiextensions-apiserver registry/customresource/etcd.go (ScaleREST,
scaleUpdatedObjectInfo), k8s.io/apimachinery managedfields/scalehandler.go and conflict.go, read in
source: parent owners of spec.replicas are seen on the Scale as `f:spec.f:replicas` at autoscaling/v1,
and a Scale applier is recorded on the parent with `subresource: scale`.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integration.conftest import GROUP, Api

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
REPLICAS = {"f:spec": {"f:replicas": {}}}


def scale_path(api: Api, name: str = "p") -> str:
    return api.pizzas_path("v1beta1", name) + "/scale"


def scale_config(replicas: int, name: str = "p") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": name},
        "spec": {"replicas": replicas},
    }


async def apply_scale(api: Api, body: Any, manager: str, name: str = "p", **params: str) -> Any:
    return await api.patch(
        scale_path(api, name), json.dumps(body), APPLY, params={"fieldManager": manager, **params}
    )


def owners(pizza: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(manager, operation, subresource) → entry."""
    return {
        (e["manager"], e["operation"], e.get("subresource", "")): e
        for e in pizza["metadata"].get("managedFields", [])
    }


async def _pizza(api: Api, replicas: int) -> dict[str, Any]:
    await api.create_toppings("tomato")
    body = api.pizza("p", [{"name": "tomato", "quantity": 1}])
    body["spec"]["replicas"] = replicas
    r = await api.post(api.pizzas_path(), body, params={"fieldManager": "creator"})
    assert r.status == 201, r
    return r.body


async def test_apply_on_scale_needs_the_object(any_api: Api) -> None:
    """ScaleREST never creates: no forceAllowCreate, so a missing parent is the parent's 404."""
    r = await apply_scale(any_api, scale_config(2, "ghost"), "hpa", "ghost")
    assert r.status == 404, r
    assert r.body["reason"] == "NotFound"
    assert r.body["details"] == {"name": "ghost", "group": GROUP, "kind": "pizzas"}
    r = await any_api.get(any_api.pizzas_path("v1beta1", "ghost"))
    assert r.status == 404


async def test_apply_scale_conflicts_force_and_parent_ownership(any_api: Api) -> None:
    api = any_api
    await _pizza(api, 2)

    # The creator owns spec.replicas through the Pizza: seen on the Scale, it conflicts.
    r = await apply_scale(api, scale_config(3), "hpa")
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"
    assert r.body["message"] == (
        'Apply failed with 1 conflict: conflict with "creator" using autoscaling/v1: .spec.replicas'
    )
    assert r.body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "creator" using autoscaling/v1',
            "field": ".spec.replicas",
        }
    ]
    r = await api.get(api.pizzas_path("v1beta1", "p"))
    assert r.body["spec"]["replicas"] == 2

    # force takes the field: the applier is recorded on the Pizza with subresource scale, in the
    # Pizza's version; the creator keeps everything else.
    r = await apply_scale(api, scale_config(3), "hpa", force="true")
    assert r.status == 200, r
    assert r.body["kind"] == "Scale" and r.body["spec"] == {"replicas": 3}
    assert "managedFields" not in r.body["metadata"]
    pizza = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert pizza["spec"]["replicas"] == 3
    by = owners(pizza)
    hpa = by[("hpa", "Apply", "scale")]
    assert hpa["apiVersion"] == f"{GROUP}/v1beta1" and hpa["fieldsV1"] == REPLICAS
    creator = by[("creator", "Update", "")]
    assert "f:replicas" not in creator["fieldsV1"]["f:spec"]
    assert "f:toppings" in creator["fieldsV1"]["f:spec"]

    # Applying again updates, without conflict: the applier owns what it applies.
    r = await apply_scale(api, scale_config(4), "hpa")
    assert r.status == 200, r
    assert r.body["spec"] == {"replicas": 4}
    pizza = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert pizza["spec"]["replicas"] == 4
    assert owners(pizza)[("hpa", "Apply", "scale")]["fieldsV1"] == REPLICAS

    # `kubectl scale` (a merge patch on /scale) takes the replicas from the applier...
    r = await api.patch(scale_path(api), {"spec": {"replicas": 5}}, MERGE, params={"fieldManager": "kubectl"})
    assert r.status == 200, r
    pizza = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert ("hpa", "Apply", "scale") not in owners(pizza)
    # ...so the applier's next change conflicts with that Update, printed with its subresource.
    r = await apply_scale(api, scale_config(6), "hpa")
    assert r.status == 409, r
    assert r.body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl" with subresource "scale" using autoscaling/v1',
            "field": ".spec.replicas",
        }
    ]
    # A second applier conflicts with the first one.
    r = await apply_scale(api, scale_config(6), "hpa", force="true")
    assert r.status == 200, r
    r = await apply_scale(api, scale_config(7), "other")
    assert r.status == 409, r
    assert r.body["details"]["causes"][0]["message"] == 'conflict with "hpa" with subresource "scale"'


async def test_apply_scale_dry_run_and_bad_configs(api: Api) -> None:
    pizza = await _pizza(api, 2)
    rv = pizza["metadata"]["resourceVersion"]

    r = await apply_scale(api, scale_config(9), "hpa", force="true", dryRun="All")
    assert r.status == 200, r
    assert r.body["spec"] == {"replicas": 9}
    after = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert after["spec"]["replicas"] == 2 and after["metadata"]["resourceVersion"] == rv
    assert after["metadata"]["managedFields"] == pizza["metadata"]["managedFields"]

    # The config must be an autoscaling/v1 Scale (versionCheckManager).
    wrong = {**scale_config(3), "apiVersion": f"{GROUP}/v1beta1", "kind": "Pizza"}
    r = await apply_scale(api, wrong, "hpa")
    assert r.status == 400, r
    assert r.body["message"] == f"invalid object type: {GROUP}/v1beta1, Kind=Pizza"
    # A field the Scale does not declare: SMD cannot type the config, whatever fieldValidation says.
    bogus = {**scale_config(3), "spec": {"replicas": 3, "paused": True}}
    r = await apply_scale(api, bogus, "hpa", fieldValidation="Ignore")
    assert r.status == 400, r
    assert r.body["message"] == (
        "failed to create typed patch object (/p; autoscaling/v1, Kind=Scale): "
        ".spec.paused: field not declared in schema"
    )
    # fieldManager is required for apply.
    r = await api.patch(scale_path(api), json.dumps(scale_config(3)), APPLY)
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "fieldManager"
    # The kind's bounds hold: 422 on the Pizza's field, nothing written.
    r = await apply_scale(api, scale_config(101), "hpa", force="true")
    assert r.status == 422, r
    assert r.body["details"]["kind"] == "Pizza"
    after = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert after["spec"]["replicas"] == 2 and after["metadata"]["resourceVersion"] == rv


async def test_openapi_scale_patch_consumes_apply(api: Api) -> None:
    doc = (await api.get("/openapi/v2")).body
    for version in ("v1alpha1", "v1beta1"):
        item = doc["paths"][f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/pizzas/{{name}}/scale"]
        assert APPLY in item["patch"]["consumes"]


async def test_apply_scale_before_first_apply_no_op_and_v1alpha1(api: Api) -> None:
    await _pizza(api, 2)
    # Nobody owns anything any more: the Scale's current fields are recorded as before-first-apply
    # first (skipNonAppliedManager), which then owns the replicas a different value conflicts with.
    r = await api.patch(
        api.pizzas_path("v1beta1", "p"),
        {"metadata": {"managedFields": []}},
        MERGE,
        params={"fieldManager": "x"},
    )
    assert r.status == 200 and "managedFields" not in r.body["metadata"], r
    r = await apply_scale(api, scale_config(3), "hpa")
    assert r.status == 409, r
    assert r.body["details"]["causes"][0]["message"] == (
        'conflict with "before-first-apply" with subresource "scale" using autoscaling/v1'
    )
    r = await apply_scale(api, scale_config(3), "hpa", force="true")
    assert r.status == 200, r
    pizza = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    assert list(owners(pizza)) == [("hpa", "Apply", "scale")]

    # Applying the same config again writes nothing.
    rv = pizza["metadata"]["resourceVersion"]
    r = await apply_scale(api, scale_config(3), "hpa")
    assert r.status == 200, r
    assert r.body["metadata"]["resourceVersion"] == rv

    # Through v1alpha1 (replicas in an annotation there) the owner is recorded in the version that
    # has the field, as every /scale write is.
    r = await api.patch(
        api.pizzas_path("v1alpha1", "p") + "/scale",
        json.dumps(scale_config(4)),
        APPLY,
        params={"fieldManager": "alpha", "force": "true"},
    )
    assert r.status == 200 and r.body["spec"] == {"replicas": 4}, r
    pizza = (await api.get(api.pizzas_path("v1beta1", "p"))).body
    alpha = owners(pizza)[("alpha", "Apply", "scale")]
    assert alpha["apiVersion"] == f"{GROUP}/v1beta1" and alpha["fieldsV1"] == REPLICAS
    assert ("hpa", "Apply", "scale") not in owners(pizza)
