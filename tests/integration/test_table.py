"""Server-side printing: meta.k8s.io Table and PartialObjectMetadata(List), as kubectl asks for them."""

from __future__ import annotations

import re

import pytest

GROUP = "restaurant.programming-kubernetes.info"
KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def _menu(api) -> None:
    await api.create_toppings("ham", "cheese")
    r = await api.post(api.toppings_path(), api.topping("truffle", 12.5))
    assert r.status == 201
    await api.create_pizza("hawaii", [{"name": "ham", "quantity": 2}, {"name": "cheese"}])
    await api.create_pizza("bare", [])


async def test_pizza_table_with_kubectl_accept(api) -> None:
    await _menu(api)
    r = await api.get(api.pizzas_path(), headers={"Accept": KUBECTL_ACCEPT}, params={"limit": "500"})
    assert r.status == 200, r
    assert r.headers["Content-Type"] == TABLE_V1
    table = r.body
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Toppings", "Cost", "Age"]
    assert [c["type"] for c in table["columnDefinitions"]] == ["string", "string", "number", "date"]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["metadata"]["resourceVersion"]
    rows = {row["cells"][0]: row for row in table["rows"]}
    assert set(rows) == {"hawaii", "bare"}
    assert rows["hawaii"]["cells"][1:3] == ["2x ham, cheese", None]
    assert rows["bare"]["cells"][1:3] == [None, None]
    assert re.fullmatch(r"\d+s", rows["hawaii"]["cells"][3])
    # includeObject defaults to Metadata.
    obj = rows["hawaii"]["object"]
    assert (obj["kind"], obj["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert obj["metadata"]["name"] == "hawaii" and obj["metadata"]["namespace"] == "default"
    assert "spec" not in obj


async def test_topping_table_and_single_object(api) -> None:
    await _menu(api)
    r = await api.get(api.toppings_path(), headers={"Accept": KUBECTL_ACCEPT})
    table = r.body
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Cost", "Age"]
    assert [row["cells"][:2] for row in table["rows"]] == [["cheese", 1], ["ham", 1], ["truffle", 12.5]]
    r = await api.get(api.toppings_path("v1beta1", "truffle"), headers={"Accept": KUBECTL_ACCEPT})
    assert r.status == 200
    assert r.headers["Content-Type"] == TABLE_V1
    assert [row["cells"][:2] for row in r.body["rows"]] == [["truffle", 12.5]]
    current = (await api.get(api.toppings_path("v1beta1", "truffle"))).body
    assert r.body["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]


async def test_table_v1beta1_and_status_cost(api) -> None:
    await _menu(api)
    current = (await api.get(api.pizzas_path("v1beta1", "hawaii"))).body
    r = await api.put(api.pizzas_path("v1beta1", "hawaii") + "/status", {**current, "status": {"cost": 4.5}})
    assert r.status == 200, r
    r = await api.get(
        api.pizzas_path("v1alpha1", "hawaii"),
        headers={"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"},
    )
    assert r.status == 200
    assert r.headers["Content-Type"] == "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
    assert r.body["apiVersion"] == "meta.k8s.io/v1beta1"
    assert r.body["rows"][0]["cells"][:3] == ["hawaii", "2x ham, cheese", 4.5]
    assert r.body["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
async def test_include_object(api, version: str) -> None:
    await _menu(api)
    path = api.pizzas_path(version)
    r = await api.get(path, headers={"Accept": TABLE_V1}, params={"includeObject": "None"})
    assert [row["object"] for row in r.body["rows"]] == [None, None]
    r = await api.get(path, headers={"Accept": TABLE_V1}, params={"includeObject": "Metadata"})
    assert {row["object"]["kind"] for row in r.body["rows"]} == {"PartialObjectMetadata"}
    r = await api.get(path, headers={"Accept": TABLE_V1}, params={"includeObject": "Object"})
    objects = {row["object"]["metadata"]["name"]: row["object"] for row in r.body["rows"]}
    assert objects["hawaii"]["apiVersion"] == f"{GROUP}/{version}"
    assert objects["hawaii"]["kind"] == "Pizza"
    expected = (
        ["ham", "ham", "cheese"]
        if version == "v1alpha1"
        else [{"name": "ham", "quantity": 2}, {"name": "cheese", "quantity": 1}]
    )
    assert objects["hawaii"]["spec"]["toppings"] == expected


async def test_include_object_validation(api) -> None:
    await _menu(api)
    r = await api.get(api.pizzas_path(), headers={"Accept": TABLE_V1}, params={"includeObject": "Bogus"})
    assert r.status == 400, r
    assert r.body["message"] == (
        'Unable to convert to Table as requested: includeObject: Unsupported value: "Bogus": '
        'supported values: "Metadata", "None", "Object"'
    )
    # kube reads TableOptions only for Table requests: elsewhere the parameter is ignored.
    r = await api.get(api.pizzas_path(), params={"includeObject": "Bogus"})
    assert r.status == 200, r
    assert r.body["kind"] == "PizzaList"


async def test_partial_object_metadata(api) -> None:
    await _menu(api)
    accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    r = await api.get(api.pizzas_path(), headers={"Accept": accept})
    assert r.status == 200, r
    assert r.headers["Content-Type"] == accept
    body = r.body
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["bare", "hawaii"]
    assert all(i["kind"] == "PartialObjectMetadata" and "spec" not in i for i in body["items"])
    assert body["metadata"]["resourceVersion"]

    accept = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
    r = await api.get(api.pizzas_path("v1beta1", "hawaii"), headers={"Accept": accept})
    assert r.status == 200, r
    assert r.body["kind"] == "PartialObjectMetadata"
    assert r.body["metadata"]["name"] == "hawaii"
    assert "spec" not in r.body


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;as=Unknown;v=v1;g=meta.k8s.io",
        "application/json;as=Table;v=v2;g=meta.k8s.io",
        "application/json;as=Table;v=v1;g=other.io",
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",  # on a list
    ],
)
async def test_unsupported_as_is_406(api, accept: str) -> None:
    r = await api.get(api.pizzas_path(), headers={"Accept": accept})
    assert r.status == 406, r
    assert r.body["reason"] == "NotAcceptable"
    assert r.body["code"] == 406


async def test_table_paging(api) -> None:
    await api.create_toppings("a", "b", "c")
    r = await api.get(api.toppings_path(), headers={"Accept": KUBECTL_ACCEPT}, params={"limit": "2"})
    assert [row["cells"][0] for row in r.body["rows"]] == ["a", "b"]
    assert r.body["metadata"]["remainingItemCount"] == 1
    token = r.body["metadata"]["continue"]
    r = await api.get(
        api.toppings_path(), headers={"Accept": KUBECTL_ACCEPT}, params={"limit": "2", "continue": token}
    )
    assert [row["cells"][0] for row in r.body["rows"]] == ["c"]
    assert "continue" not in r.body["metadata"]


async def test_empty_table(api) -> None:
    r = await api.get(api.pizzas_path(), headers={"Accept": KUBECTL_ACCEPT})
    assert r.status == 200
    assert r.body["rows"] == []
    assert [c["name"] for c in r.body["columnDefinitions"]] == ["Name", "Toppings", "Cost", "Age"]
