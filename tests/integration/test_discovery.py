"""Discovery documents as kubectl and kube-aggregator read them."""

from __future__ import annotations

import pytest

GROUP = "restaurant.programming-kubernetes.info"
AGGREGATOR_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
)
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "code": 404,
    "details": {},
}


def _group_versions() -> list[dict[str, str]]:
    return [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in ("v1beta1", "v1alpha1")]


async def test_apis_plain_group_list(api) -> None:
    for accept in (None, "application/json", "*/*"):
        r = await api.get("/apis", headers={"Accept": accept} if accept else None)
        assert r.status == 200
        assert r.headers["Content-Type"] == "application/json"
        body = r.body
        assert (body["kind"], body["apiVersion"]) == ("APIGroupList", "v1")
        # Every installed group is served (wardle.example.com too); this test is about restaurant's.
        assert [g for g in body["groups"] if g["name"] == GROUP] == [
            {
                "name": GROUP,
                "versions": _group_versions(),
                "preferredVersion": {"groupVersion": f"{GROUP}/v1beta1", "version": "v1beta1"},
            }
        ]


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        (AGGREGATOR_ACCEPT, "v2"),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
            "v2beta1",
        ),
    ],
)
async def test_apis_aggregated(api, accept: str, version: str) -> None:
    r = await api.get("/apis", headers={"Accept": accept})
    assert r.status == 200
    assert r.headers["Content-Type"] == (
        f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    )
    body = r.body
    assert body["kind"] == "APIGroupDiscoveryList"
    assert body["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    [group] = [g for g in body["items"] if g["metadata"]["name"] == GROUP]
    assert group["metadata"]["name"] == GROUP
    assert [v["version"] for v in group["versions"]] == ["v1beta1", "v1alpha1"]
    for v in group["versions"]:
        by_name = {res["resource"]: res for res in v["resources"]}
        assert set(by_name) == {"menuitems", "pizzas", "toppings"}
        assert by_name["menuitems"]["verbs"] == ["get", "list", "watch"]
        pizzas, toppings = by_name["pizzas"], by_name["toppings"]
        assert pizzas["scope"] == "Namespaced" and toppings["scope"] == "Cluster"
        assert pizzas["responseKind"] == {"group": GROUP, "version": v["version"], "kind": "Pizza"}
        assert pizzas["verbs"] == VERBS
        # The group's custom subresources (a getter and a connecter) sort in with status and scale.
        subresources = {s["subresource"]: s for s in pizzas["subresources"]}
        assert list(subresources) == ["bill", "oven", "scale", "status"]
        assert subresources["bill"] == {
            "subresource": "bill",
            "responseKind": {"group": GROUP, "version": v["version"], "kind": "Bill"},
            "verbs": ["get"],
        }
        assert subresources["oven"]["verbs"] == ["get"]
        assert all(subresources[s]["verbs"] == ["get", "patch", "update"] for s in ("scale", "status"))
        assert subresources["scale"]["responseKind"] == {
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
        }
        assert "subresources" not in toppings or not toppings["subresources"]


async def test_api_group(api) -> None:
    r = await api.get(f"/apis/{GROUP}")
    assert r.status == 200
    assert r.body == {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": _group_versions(),
        "preferredVersion": {"groupVersion": f"{GROUP}/v1beta1", "version": "v1beta1"},
    }


@pytest.mark.parametrize("version", ["v1beta1", "v1alpha1"])
async def test_api_resource_list(api, version: str) -> None:
    r = await api.get(f"/apis/{GROUP}/{version}")
    assert r.status == 200
    assert r.headers["Content-Type"] == "application/json"
    body = r.body
    assert (body["kind"], body["apiVersion"], body["groupVersion"]) == (
        "APIResourceList",
        "v1",
        f"{GROUP}/{version}",
    )
    by_name = {res["name"]: res for res in body["resources"]}
    assert list(by_name) == [
        "menuitems",
        "pizzas",
        "pizzas/bill",
        "pizzas/oven",
        "pizzas/scale",
        "pizzas/status",
        "toppings",
    ]
    assert by_name["pizzas/bill"] == {
        "name": "pizzas/bill",
        "singularName": "",
        "namespaced": True,
        "kind": "Bill",
        "verbs": ["get"],
    }
    # A connecter's kind is its options' (pods/exec: PodExecOptions).
    assert (by_name["pizzas/oven"]["kind"], by_name["pizzas/oven"]["verbs"]) == ("PizzaOvenOptions", ["get"])
    assert by_name["menuitems"]["verbs"] == ["get", "list", "watch"]
    assert "storageVersionHash" not in by_name["menuitems"]
    assert by_name["pizzas"]["namespaced"] is True
    assert by_name["pizzas"]["kind"] == "Pizza"
    assert by_name["pizzas"]["singularName"] == "pizza"
    assert by_name["pizzas"]["verbs"] == VERBS
    assert by_name["pizzas/status"]["namespaced"] is True
    assert by_name["pizzas/status"]["kind"] == "Pizza"
    assert by_name["pizzas/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["toppings"]["namespaced"] is False
    assert by_name["toppings"]["kind"] == "Topping"
    assert by_name["toppings"]["verbs"] == VERBS
    # The storage version hash is the same in every version: it names the storage version (v1beta1).
    other = (await api.get(f"/apis/{GROUP}/{'v1alpha1' if version == 'v1beta1' else 'v1beta1'}")).body
    other_hash = {res["name"]: res.get("storageVersionHash") for res in other["resources"]}
    assert by_name["pizzas"]["storageVersionHash"] == other_hash["pizzas"]
    assert by_name["pizzas"]["storageVersionHash"] != by_name["toppings"]["storageVersionHash"]


@pytest.mark.parametrize(
    "path",
    [
        "/apis/no.such.group",
        f"/apis/{GROUP}/v2",
        f"/apis/{GROUP}/v1beta1/burgers",
        f"/apis/{GROUP}/v1beta1/namespaces/default/burgers",
        f"/apis/{GROUP}/v1beta1/namespaces/default/burgers/x",
        f"/apis/{GROUP}/v3/toppings",
        "/apis/no.such.group/v1/toppings",
        f"/apis/{GROUP}/v1beta1/toppings/x/status",
        f"/apis/{GROUP}/v1beta1/toppings/x/scale",  # only pizzas declare a scale subresource
    ],
)
async def test_unknown_paths_are_404_status(api, path: str) -> None:
    r = await api.get(path)
    assert r.status == 404
    assert r.headers["Content-Type"] == "application/json"
    assert r.body == NOT_FOUND
