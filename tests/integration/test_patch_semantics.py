"""Strategic merge patch over HTTPS: advertised in OpenAPI, applied with each version's schema.

kube-apiserver refuses SMP for custom resources (415); this server accepts it for every kind and
merges with the patch metadata its schemas publish: v1beta1 toppings by name, v1alpha1 toppings as
a whole, ObjectMeta's finalizers as a set and ownerReferences by uid. Errors are answered as kube's
patch handler answers them for built-in kinds (handlers/patch.go interpretStrategicMergePatchError).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import GROUP, Api

SMP = "application/strategic-merge-patch+json"
HAWAII = [
    {"name": "tomato", "quantity": 1},
    {"name": "mozzarella", "quantity": 2},
    {"name": "ham", "quantity": 2},
]


@pytest.fixture
async def hawaii(api: Api) -> dict[str, Any]:
    await api.create_toppings("tomato", "mozzarella", "ham", "basil", "pineapple")
    return await api.create_pizza("hawaii", HAWAII, labels={"a": "1", "b": "2"})


async def smp(api: Api, path: str, body: Any, **kw: Any) -> Any:
    return await api.patch(path, body, SMP, **kw)


def names(pizza: dict[str, Any]) -> list[tuple[str, int]]:
    return [(t["name"], t["quantity"]) for t in pizza["spec"]["toppings"]]


async def test_openapi_lists_strategic_merge_patch_for_every_patch(api: Api) -> None:
    v2 = (await api.get("/openapi/v2")).body
    patches = [ops["patch"] for path, ops in v2["paths"].items() if GROUP in path and "patch" in ops]
    # 2 versions x (toppings/{name}, pizzas/{name}, pizzas/{name}/status, pizzas/{name}/scale)
    assert len(patches) == 8
    assert all(SMP in p["consumes"] for p in patches)
    v3 = (await api.get(f"/openapi/v3/apis/{GROUP}/v1beta1")).body
    patch = v3["paths"][f"/apis/{GROUP}/v1beta1/namespaces/{{namespace}}/pizzas/{{name}}"]["patch"]
    assert SMP in patch["requestBody"]["content"]


async def test_a_new_topping_is_added_by_name(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(
        api, api.pizzas_path("v1beta1", "hawaii"), {"spec": {"toppings": [{"name": "basil", "quantity": 2}]}}
    )
    assert r.status == 200, r
    assert names(r.body) == [("basil", 2), ("tomato", 1), ("mozzarella", 2), ("ham", 2)]
    assert r.body["metadata"]["generation"] == 2


async def test_an_existing_topping_is_updated_in_place(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(
        api, api.pizzas_path("v1beta1", "hawaii"), {"spec": {"toppings": [{"name": "ham", "quantity": 5}]}}
    )
    assert r.status == 200, r
    assert names(r.body) == [("tomato", 1), ("mozzarella", 2), ("ham", 5)]


async def test_a_topping_without_quantity_is_defaulted(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), {"spec": {"toppings": [{"name": "basil"}]}})
    assert r.status == 200, r
    assert ("basil", 1) in names(r.body)


async def test_delete_directive_removes_a_topping(api: Api, hawaii: dict[str, Any]) -> None:
    body = {"spec": {"toppings": [{"$patch": "delete", "name": "mozzarella"}]}}
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), body)
    assert r.status == 200, r
    assert names(r.body) == [("tomato", 1), ("ham", 2)]


async def test_set_element_order_reorders(api: Api, hawaii: dict[str, Any]) -> None:
    order = [{"name": "ham"}, {"name": "pineapple"}, {"name": "tomato"}, {"name": "mozzarella"}]
    body = {"spec": {"$setElementOrder/toppings": order, "toppings": [{"name": "pineapple", "quantity": 3}]}}
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), body)
    assert r.status == 200, r
    assert names(r.body) == [("ham", 2), ("pineapple", 3), ("tomato", 1), ("mozzarella", 2)]


async def test_replace_directive_replaces_the_list(api: Api, hawaii: dict[str, Any]) -> None:
    body = {"spec": {"toppings": [{"$patch": "replace"}, {"name": "basil", "quantity": 4}]}}
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), body)
    assert names(r.body) == [("basil", 4)]


async def test_v1alpha1_toppings_are_replaced_whole(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(api, api.pizzas_path("v1alpha1", "hawaii"), {"spec": {"toppings": ["basil", "basil"]}})
    assert r.status == 200, r
    assert r.body["spec"]["toppings"] == ["basil", "basil"]
    beta = (await api.get(api.pizzas_path("v1beta1", "hawaii"))).body
    assert names(beta) == [("basil", 2)]


async def test_labels_merge_and_null_deletes(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), {"metadata": {"labels": {"a": None, "c": "3"}}})
    assert r.status == 200, r
    assert r.body["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert r.body["metadata"]["generation"] == 1  # metadata only: spec unchanged


async def test_retain_keys_clears_other_metadata(api: Api, hawaii: dict[str, Any]) -> None:
    path = api.pizzas_path("v1beta1", "hawaii")
    await smp(api, path, {"metadata": {"annotations": {"note": "x"}}})
    keep = ["name", "namespace", "uid", "resourceVersion", "creationTimestamp", "generation", "labels"]
    r = await smp(api, path, {"metadata": {"$retainKeys": keep, "labels": {"z": "9"}}})
    assert r.status == 200, r
    assert "annotations" not in r.body["metadata"]
    assert r.body["metadata"]["labels"] == {"a": "1", "b": "2", "z": "9"}


async def test_finalizers_merge_as_a_set(api: Api, hawaii: dict[str, Any]) -> None:
    path = api.pizzas_path("v1beta1", "hawaii")
    r = await smp(api, path, {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}})
    assert r.body["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    r = await smp(api, path, {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}})
    assert r.body["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]
    r = await smp(api, path, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}})
    assert r.body["metadata"]["finalizers"] == ["example.com/c", "example.com/b"]
    r = await smp(api, path, {"metadata": {"finalizers": None}})
    assert "finalizers" not in r.body["metadata"]


async def test_owner_references_merge_by_uid(api: Api, hawaii: dict[str, Any]) -> None:
    path = api.pizzas_path("v1beta1", "hawaii")
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "menu", "uid": "u-1"}
    r = await smp(api, path, {"metadata": {"ownerReferences": [owner]}})
    assert r.status == 200, r
    other = {**owner, "name": "specials", "uid": "u-2"}
    r = await smp(api, path, {"metadata": {"ownerReferences": [other, {**owner, "name": "renamed"}]}})
    assert r.body["metadata"]["ownerReferences"] == [other, {**owner, "name": "renamed"}]
    r = await smp(api, path, {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u-1"}]}})
    assert r.body["metadata"]["ownerReferences"] == [other]


async def test_toppings_and_status_of_other_kinds(api: Api, hawaii: dict[str, Any]) -> None:
    # At most double the stored cost (the transition rule on spec.cost).
    r = await smp(api, api.toppings_path("v1alpha1", "ham"), {"spec": {"cost": 2}})
    assert r.status == 200 and r.body["spec"] == {"cost": 2}, r
    status = api.pizzas_path("v1beta1", "hawaii") + "/status"
    r = await smp(
        api, status, {"status": {"cost": 9}, "spec": {"toppings": [{"name": "basil", "quantity": 1}]}}
    )
    assert r.status == 200, r
    assert r.body["status"] == {"cost": 9}
    assert names(r.body) == [("tomato", 1), ("mozzarella", 2), ("ham", 2)]  # spec not changed via /status


async def test_dry_run_does_not_persist(api: Api, hawaii: dict[str, Any]) -> None:
    path = api.pizzas_path("v1beta1", "hawaii")
    body = {"spec": {"toppings": [{"name": "basil", "quantity": 2}]}}
    r = await smp(api, path, body, params={"dryRun": "All"})
    assert r.status == 200 and ("basil", 2) in names(r.body), r
    assert names((await api.get(path)).body) == [("tomato", 1), ("mozzarella", 2), ("ham", 2)]


# --- errors ---------------------------------------------------------------------------------------


async def test_item_without_merge_key_is_422_naming_the_key(api: Api, hawaii: dict[str, Any]) -> None:
    # kube answers 500 here (a plain error from the patcher); bad input must never be a 500 for us.
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), {"spec": {"toppings": [{"quantity": 2}]}})
    assert r.status == 422, r
    assert r.body["reason"] == "Invalid"
    assert r.body["message"] == (
        "the strategic merge patch cannot be applied: "
        "map: map[quantity:2] does not contain declared merge key: name"
    )
    unchanged = await api.get(api.pizzas_path("v1beta1", "hawaii"))
    assert unchanged.body["spec"] == hawaii["spec"]


@pytest.mark.parametrize(
    "body, message",
    [
        ({"spec": {"$setElementOrderXtoppings": []}}, "invalid patch format of setElementOrder list"),
        (
            {"metadata": {"$deleteFromPrimitiveListXfinalizers": ["a"]}},
            "invalid patch format of primitive list",
        ),
        ({"metadata": {"$retainKeys": ["name"], "labels": {"a": "b"}}}, "invalid patch format of retainKeys"),
        (
            ["not", "an", "object"],
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
    ],
)
async def test_malformed_patches_are_400(api: Api, hawaii: dict[str, Any], body: Any, message: str) -> None:
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), body)
    assert r.status == 400, r
    assert r.body["reason"] == "BadRequest" and r.body["message"] == message


async def test_list_of_lists_is_422(api: Api) -> None:
    await api.create_toppings("tomato")
    await api.create_pizza("bare", [])
    r = await smp(api, api.pizzas_path("v1beta1", "bare"), {"spec": {"toppings": [["tomato"]]}})
    assert r.status == 422, r
    assert r.body["message"] == "the server rejected our request due to an error in our request"


async def test_unknown_field_with_strict_validation_is_422(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(
        api,
        api.pizzas_path("v1beta1", "hawaii"),
        {"spec": {"bogus": 1}},
        params={"fieldValidation": "Strict"},
    )
    assert r.status == 422, r
    [cause] = r.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert 'strict decoding error: unknown field "spec.bogus"' in cause["message"]
    assert "map[spec:map[bogus:1]]" in cause["message"]  # kube prints the patch map with %+v


async def test_unknown_field_with_warn_validation_warns(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(api, api.pizzas_path("v1beta1", "hawaii"), {"spec": {"bogus": 1}})
    assert r.status == 200, r
    assert r.headers["Warning"] == '299 - "unknown field \\"spec.bogus\\""'


async def test_invalid_result_is_422_invalid(api: Api, hawaii: dict[str, Any]) -> None:
    r = await smp(
        api, api.pizzas_path("v1beta1", "hawaii"), {"spec": {"toppings": [{"name": "ham", "quantity": 0}]}}
    )
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "spec.toppings[2].quantity"


async def test_missing_object_is_404(api: Api) -> None:
    r = await smp(api, api.pizzas_path("v1beta1", "nowhere"), {"metadata": {"labels": {"a": "b"}}})
    assert r.status == 404 and r.body["reason"] == "NotFound", r
