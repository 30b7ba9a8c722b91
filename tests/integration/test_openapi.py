"""OpenAPI v2 and v3 as kubectl (explain, apply, client-side validation) and the aggregator read them."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qs, urlsplit

GROUP = "restaurant.programming-kubernetes.info"
PREFIX = "info.programming-kubernetes.restaurant"
PATCH_TYPES = {
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
}


def _param_names(doc: dict, operation: dict, path_item: dict) -> set[str]:
    """Parameter names of an operation, following $refs into the document's shared parameters."""
    names = set()
    for param in [*operation.get("parameters", []), *path_item.get("parameters", [])]:
        if "$ref" in param:
            node = doc
            for step in param["$ref"].removeprefix("#/").split("/"):
                node = node[step]
            param = node
        names.add(param["name"])
    return names


async def test_openapi_v2_definitions_and_gvk(api) -> None:
    r = await api.get("/openapi/v2")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("application/json")
    doc = r.body
    assert doc["swagger"] == "2.0"
    for version in ("v1alpha1", "v1beta1"):
        for kind in ("Pizza", "Topping"):
            definition = doc["definitions"][f"{PREFIX}.{version}.{kind}"]
            assert definition["x-kubernetes-group-version-kind"] == [
                {"group": GROUP, "version": version, "kind": kind}
            ]
            assert {"apiVersion", "kind", "metadata", "spec"} <= set(definition["properties"])
    beta_pizza = doc["definitions"][f"{PREFIX}.v1beta1.Pizza"]["properties"]["spec"]
    toppings = beta_pizza["properties"]["toppings"]
    assert toppings["items"]["properties"]["quantity"]["type"] == "integer"
    assert (
        doc["definitions"][f"{PREFIX}.v1alpha1.Topping"]["properties"]["spec"]["properties"]["cost"]["type"]
        == "number"
    )


async def test_openapi_v2_operations(api) -> None:
    doc = (await api.get("/openapi/v2")).body
    object_paths = [
        f"/apis/{GROUP}/{v}/{p}"
        for v in ("v1alpha1", "v1beta1")
        for p in (
            "toppings/{name}",
            "namespaces/{namespace}/pizzas/{name}",
            "namespaces/{namespace}/pizzas/{name}/status",
        )
    ]
    for path in object_paths:
        item = doc["paths"][path]
        patch = item["patch"]
        assert set(patch["consumes"]) == PATCH_TYPES, path
        assert len(patch["consumes"]) == len(PATCH_TYPES)
        assert "fieldValidation" in _param_names(doc, patch, item), path
        assert {"fieldValidation", "dryRun"} <= _param_names(doc, item["put"], item), path
    for v in ("v1alpha1", "v1beta1"):
        for collection in ("toppings", "namespaces/{namespace}/pizzas"):
            item = doc["paths"][f"/apis/{GROUP}/{v}/{collection}"]
            assert {"fieldValidation", "dryRun"} <= _param_names(doc, item["post"], item)
            assert {"labelSelector", "fieldSelector", "limit", "continue", "watch"} <= _param_names(
                doc, item["get"], item
            )
            gvk = item["post"]["x-kubernetes-group-version-kind"]
            assert gvk["group"] == GROUP and gvk["version"] == v
            assert item["post"]["x-kubernetes-action"] == "post"


async def test_openapi_v3_index_and_documents(api) -> None:
    r = await api.get("/openapi/v3")
    assert r.status == 200
    # Every installed group has its documents (wardle.example.com too); this test is about restaurant's.
    index = {key: entry for key, entry in r.body["paths"].items() if key.startswith(f"apis/{GROUP}/")}
    assert set(index) == {f"apis/{GROUP}/v1alpha1", f"apis/{GROUP}/v1beta1"}
    for key, entry in index.items():
        url = entry["serverRelativeURL"]
        parts = urlsplit(url)
        assert parts.path == f"/openapi/v3/{key}"
        [expected_hash] = parse_qs(parts.query)["hash"]
        doc_reply = await api.get(url)
        assert doc_reply.status == 200
        assert doc_reply.headers["Content-Type"].startswith("application/json")
        assert hashlib.sha512(doc_reply.raw).hexdigest().upper() == expected_hash
        # Without the hash the same bytes are served.
        plain = await api.get(parts.path)
        assert plain.raw == doc_reply.raw
        doc = doc_reply.body
        assert doc["openapi"].startswith("3.")
        version = key.rsplit("/", 1)[1]
        schemas = doc["components"]["schemas"]
        for kind in ("Pizza", "Topping"):
            assert schemas[f"{PREFIX}.{version}.{kind}"]["x-kubernetes-group-version-kind"] == [
                {"group": GROUP, "version": version, "kind": kind}
            ]
        patch = doc["paths"][f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/pizzas/{{name}}"]["patch"]
        assert set(patch["requestBody"]["content"]) == PATCH_TYPES
        assert "fieldValidation" in _param_names(doc, patch, {})
        other = "v1alpha1" if version == "v1beta1" else "v1beta1"
        assert not any(f".{other}." in name for name in schemas)


async def test_openapi_v3_unknown_group_version_is_404(api) -> None:
    r = await api.get(f"/openapi/v3/apis/{GROUP}/v9")
    assert r.status == 404
    assert r.body["reason"] == "NotFound"
