"""Discovery documents: legacy (/apis, /apis/g, /apis/g/v) and aggregated (apidiscovery.k8s.io)."""

from __future__ import annotations

import pytest

from apis.restaurant.install import GROUP
from apis.runtime.kinds import GroupInfo
from server.endpoints.discovery import (
    RESOURCE_VERBS,
    aggregated_content_type,
    aggregated_discovery,
    api_group,
    api_group_list,
    api_resource_list,
    storage_version_hash,
)
from tests.server.endpoints.example_group import EXAMPLE


@pytest.fixture
def example_group() -> GroupInfo:
    """The made-up group (a cluster-scoped kind in two versions, a namespaced one with status)."""
    return EXAMPLE


ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def test_storage_version_hash_matches_kube_values() -> None:
    # Values a real kube-apiserver publishes for these built-in kinds.
    assert storage_version_hash("apps", "v1", "Deployment") == "8aSe+NMegvE="
    assert storage_version_hash("", "v1", "Pod") == "xPOwRZ+Yhw8="
    assert storage_version_hash("", "v1", "ConfigMap") == "qFsyl6wFWjQ="


def test_api_group_list_and_group(example_group: GroupInfo) -> None:
    doc = api_group_list([GROUP, example_group])
    assert doc["kind"] == "APIGroupList" and doc["apiVersion"] == "v1"
    assert [g["name"] for g in doc["groups"]] == [GROUP.group, "example.com"]
    restaurant = doc["groups"][0]
    assert restaurant["versions"] == [
        {"groupVersion": f"{GROUP.group}/v1beta1", "version": "v1beta1"},
        {"groupVersion": f"{GROUP.group}/v1alpha1", "version": "v1alpha1"},
    ]
    assert restaurant["preferredVersion"] == {"groupVersion": f"{GROUP.group}/v1beta1", "version": "v1beta1"}
    assert "serverAddressByClientCIDRs" not in restaurant

    cidrs = [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:443"}]
    with_cidrs = api_group_list([example_group], server_address_by_client_cidrs=cidrs)
    assert with_cidrs["groups"][0]["serverAddressByClientCIDRs"] == cidrs

    group = api_group(example_group)
    assert group["kind"] == "APIGroup" and group["name"] == "example.com"
    assert group["preferredVersion"]["version"] == "v2"


def test_api_resource_list_for_restaurant() -> None:
    doc = api_resource_list(GROUP, "v1beta1")
    assert doc["kind"] == "APIResourceList" and doc["apiVersion"] == "v1"
    assert doc["groupVersion"] == f"{GROUP.group}/v1beta1"
    by_name = {r["name"]: r for r in doc["resources"]}
    assert list(by_name) == ["menuitems", "pizzas", "pizzas/scale", "pizzas/status", "toppings"]
    # Served by a class of the group's own: its reads only, and no storage version to hash.
    assert by_name["menuitems"] == {
        "name": "menuitems",
        "singularName": "menuitem",
        "namespaced": True,
        "kind": "MenuItem",
        "verbs": ["get", "list", "watch"],
    }
    assert by_name["pizzas"] == {
        "name": "pizzas",
        "singularName": "pizza",
        "namespaced": True,
        "kind": "Pizza",
        "verbs": ALL_VERBS,
        "storageVersionHash": storage_version_hash(GROUP.group, "v1beta1", "Pizza"),
    }
    assert by_name["pizzas/status"] == {
        "name": "pizzas/status",
        "singularName": "",
        "namespaced": True,
        "kind": "Pizza",
        "verbs": ["get", "patch", "update"],
    }
    # /scale speaks autoscaling/v1 Scale, as kube lists a custom resource's scale subresource.
    assert by_name["pizzas/scale"] == {
        "name": "pizzas/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
    assert by_name["toppings"]["namespaced"] is False
    assert by_name["toppings"]["verbs"] == ALL_VERBS
    # The hash names the storage version, whichever version is listed.
    alpha = {r["name"]: r for r in api_resource_list(GROUP, "v1alpha1")["resources"]}
    assert alpha["toppings"]["storageVersionHash"] == by_name["toppings"]["storageVersionHash"]


def test_api_resource_list_for_fixture_group(example_group: GroupInfo) -> None:
    v2 = {r["name"]: r for r in api_resource_list(example_group, "v2")["resources"]}
    assert list(v2) == ["gadgets", "gadgets/status", "widgets"]
    assert v2["widgets"]["shortNames"] == ["wd"]
    assert v2["widgets"]["categories"] == ["all"]
    assert "shortNames" not in v2["gadgets"] and "categories" not in v2["gadgets"]
    assert v2["widgets"]["storageVersionHash"] == storage_version_hash("example.com", "v1", "Widget")
    # Gadget is not served in v1.
    v1 = api_resource_list(example_group, "v1")
    assert [r["name"] for r in v1["resources"]] == ["widgets"]
    assert all(set(RESOURCE_VERBS) <= set(r["verbs"]) for r in v1["resources"])


@pytest.mark.parametrize("version", ["v2", "v2beta1"])
def test_aggregated_discovery_shape(version: str, example_group: GroupInfo) -> None:
    api_version = f"apidiscovery.k8s.io/{version}"
    doc = aggregated_discovery([GROUP, example_group], api_version)
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == api_version
    assert doc["metadata"] == {}
    # Equal priority: ordered by name.
    assert [i["metadata"] for i in doc["items"]] == [{"name": "example.com"}, {"name": GROUP.group}]
    restaurant = doc["items"][1]
    assert [v["version"] for v in restaurant["versions"]] == ["v1beta1", "v1alpha1"]
    for entry in restaurant["versions"]:
        assert entry["freshness"] == "Current"
        resources = {r["resource"]: r for r in entry["resources"]}
        assert set(resources) == {"menuitems", "pizzas", "toppings"}
        assert resources["menuitems"]["verbs"] == ["get", "list", "watch"]
        assert "subresources" not in resources["menuitems"]
        pizzas = resources["pizzas"]
        assert pizzas["responseKind"] == {"group": GROUP.group, "version": entry["version"], "kind": "Pizza"}
        assert pizzas["scope"] == "Namespaced"
        assert pizzas["singularResource"] == "pizza"
        assert pizzas["verbs"] == ALL_VERBS
        assert pizzas["subresources"] == [
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"],
            },
            {
                "subresource": "status",
                "responseKind": {"group": GROUP.group, "version": entry["version"], "kind": "Pizza"},
                "verbs": ["get", "patch", "update"],
            },
        ]
        assert resources["toppings"]["scope"] == "Cluster"
        assert "subresources" not in resources["toppings"]
    example = doc["items"][0]
    widgets = example["versions"][0]["resources"][1]
    assert widgets["resource"] == "widgets"
    assert widgets["shortNames"] == ["wd"] and widgets["categories"] == ["all"]
    assert [r["resource"] for r in example["versions"][1]["resources"]] == ["widgets"]


def test_aggregated_discovery_rejects_unknown_version() -> None:
    with pytest.raises(ValueError):
        aggregated_discovery([GROUP], "apidiscovery.k8s.io/v1")


def test_aggregated_content_type() -> None:
    assert (
        aggregated_content_type("v2")
        == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
