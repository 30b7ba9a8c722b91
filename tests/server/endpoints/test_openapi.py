"""OpenAPI v2 and v3 documents: every served operation, kube's naming, and closed references."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from apis.restaurant.install import GROUP
from apis.runtime.kinds import GroupInfo, KindInfo
from server.endpoints.openapi import (
    definition_name,
    encode_document,
    openapi_v2,
    openapi_v3_group_version,
    openapi_v3_index,
)
from server.endpoints.openapi.operations import operation_id_and_tag
from server.endpoints.scope import JSON_PATCH, MERGE_PATCH
from tests.server.endpoints.example_group import EXAMPLE

# The documents list whatever patch types the server accepts (server/endpoints/scope.py PATCH_TYPES);
# most tests here use the two every server takes, and add strategic merge patch where it matters.
PATCH_TYPES: tuple[str, ...] = (JSON_PATCH, MERGE_PATCH)


@pytest.fixture
def example_group() -> GroupInfo:
    """The made-up group (a cluster-scoped kind in two versions, a namespaced one with status)."""
    return EXAMPLE


META = "io.k8s.apimachinery.pkg.apis.meta.v1."
METHODS = ("get", "put", "post", "delete", "patch")
WRITE_VERBS = ("create", "update", "patch")


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _v2_params(doc: dict[str, Any], params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for p in params:
        if "$ref" in p:
            out.append(doc["parameters"][p["$ref"].removeprefix("#/parameters/")])
        else:
            out.append(p)
    return out


def _verb_operations(group: str, version: str, kind: KindInfo) -> dict[str, tuple[str, str, str]]:
    """Where the server serves each kube verb of `kind`: verb -> (path, method, x-kubernetes-action)."""
    prefix = f"/apis/{group}/{version}"
    collection = f"namespaces/{{namespace}}/{kind.resource}" if kind.namespaced else kind.resource
    item = f"{collection}/{{name}}"
    return {
        "create": (f"{prefix}/{collection}", "post", "post"),
        "delete": (f"{prefix}/{item}", "delete", "delete"),
        "deletecollection": (f"{prefix}/{collection}", "delete", "deletecollection"),
        "get": (f"{prefix}/{item}", "get", "get"),
        "list": (f"{prefix}/{collection}", "get", "list"),
        "patch": (f"{prefix}/{item}", "patch", "patch"),
        "update": (f"{prefix}/{item}", "put", "put"),
        "watch": (f"{prefix}/watch/{item}", "get", "watch"),
        "watchlist": (f"{prefix}/watch/{collection}", "get", "watchlist"),
        "status-get": (f"{prefix}/{item}/status", "get", "get"),
        "status-update": (f"{prefix}/{item}/status", "put", "put"),
        "status-patch": (f"{prefix}/{item}/status", "patch", "patch"),
    }


def _expected(group: GroupInfo, version: str, kind: KindInfo) -> dict[str, tuple[str, str, str]]:
    ops = _verb_operations(group.group, version, kind)
    if "status" not in kind.subresources:
        ops = {k: v for k, v in ops.items() if not k.startswith("status-")}
    # Only the verbs the kind serves (a storage-less kind's reads): "watchlist" is the verb watch.
    return {
        k: v
        for k, v in ops.items()
        if k.startswith("status-") or ("watch" if k == "watchlist" else k) in kind.verbs
    }


def test_v2_paths_of_a_read_only_kind() -> None:
    """A kind served by a class of its own has no paths or operations for the verbs it does not serve."""
    doc = openapi_v2([GROUP], patch_types=PATCH_TYPES, version_info={"gitVersion": "v0.0.1"})
    for version in GROUP.versions:
        prefix = f"/apis/{GROUP.group}/{version}"
        menu = {
            path: sorted(set(ops) & set(METHODS))
            for path, ops in doc["paths"].items()
            if path.startswith(f"{prefix}/") and "/menuitems" in path
        }
        assert menu == {
            f"{prefix}/menuitems": ["get"],
            f"{prefix}/namespaces/{{namespace}}/menuitems": ["get"],
            f"{prefix}/namespaces/{{namespace}}/menuitems/{{name}}": ["get"],
            f"{prefix}/watch/menuitems": ["get"],
            f"{prefix}/watch/namespaces/{{namespace}}/menuitems": ["get"],
            f"{prefix}/watch/namespaces/{{namespace}}/menuitems/{{name}}": ["get"],
        }


@pytest.fixture(params=["restaurant", "example"])
def group(request: pytest.FixtureRequest, example_group: GroupInfo) -> GroupInfo:
    return GROUP if request.param == "restaurant" else example_group


def test_kube_operation_ids() -> None:
    # From kube's published spec: deletecollection splits at the shortest verb, ".k8s.io" is trimmed.
    assert operation_id_and_tag("deletecollectionAPIService", "apiregistration.k8s.io", "v1") == (
        "deleteApiregistrationV1CollectionAPIService",
        "apiregistration_v1",
    )
    assert (
        definition_name(GROUP.group, "v1beta1", "Pizza")
        == "info.programming-kubernetes.restaurant.v1beta1.Pizza"
    )


def test_v2_restaurant_operation_ids_and_definitions() -> None:
    doc = openapi_v2([GROUP], patch_types=PATCH_TYPES, version_info={"gitVersion": "v1.2.3"})
    assert doc["swagger"] == "2.0"
    assert doc["info"]["version"] == "v1.2.3"
    g = GROUP.group
    ids = {
        op["operationId"]
        for item in doc["paths"].values()
        for method, op in item.items()
        if method in METHODS
    }
    for expected in (
        "createRestaurantProgrammingKubernetesInfoV1beta1NamespacedPizza",
        "deleteRestaurantProgrammingKubernetesInfoV1beta1CollectionNamespacedPizza",
        "listRestaurantProgrammingKubernetesInfoV1beta1PizzaForAllNamespaces",
        "watchRestaurantProgrammingKubernetesInfoV1beta1NamespacedPizzaList",
        "watchRestaurantProgrammingKubernetesInfoV1beta1PizzaListForAllNamespaces",
        "readRestaurantProgrammingKubernetesInfoV1beta1NamespacedPizzaStatus",
        "patchRestaurantProgrammingKubernetesInfoV1alpha1Topping",
        "watchRestaurantProgrammingKubernetesInfoV1alpha1ToppingList",
    ):
        assert expected in ids
    for version in GROUP.versions:
        for kind in ("Pizza", "PizzaList", "Topping", "ToppingList"):
            definition = doc["definitions"][definition_name(g, version, kind)]
            assert definition["x-kubernetes-group-version-kind"] == [
                {"group": g, "kind": kind, "version": version}
            ]
    for name in (
        "ObjectMeta",
        "ListMeta",
        "Status",
        "StatusDetails",
        "StatusCause",
        "DeleteOptions",
        "WatchEvent",
    ):
        assert META + name in doc["definitions"]
    for name in ("Patch", "Preconditions", "OwnerReference", "ManagedFieldsEntry", "Time", "FieldsV1"):
        assert META + name in doc["definitions"]


def test_v2_operation_ids_are_unique(example_group: GroupInfo) -> None:
    doc = openapi_v2([GROUP, example_group], patch_types=PATCH_TYPES, version_info={})
    ids = [op["operationId"] for item in doc["paths"].values() for m, op in item.items() if m in METHODS]
    assert len(ids) == len(set(ids))


def test_v2_every_verb_has_an_operation(group: GroupInfo) -> None:
    doc = openapi_v2([group], patch_types=PATCH_TYPES, version_info={"gitVersion": "v0.0.1"})
    for version in group.versions:
        for kind in group.kinds:
            if version not in kind.versions:
                continue
            for verb, (path, method, action) in _expected(group, version, kind).items():
                op = doc["paths"][path][method]
                assert op["x-kubernetes-action"] == action, verb
                assert op["x-kubernetes-group-version-kind"] == {
                    "group": group.group,
                    "version": version,
                    "kind": kind.kind,
                }
                assert op["schemes"] == ["https"]
                params = {p["name"] for p in _v2_params(doc, op.get("parameters", []))}
                if verb.removeprefix("status-") in WRITE_VERBS:
                    # kubectl only validates server-side when the operation itself lists it.
                    assert "fieldValidation" in params, (path, method)
                    assert {"dryRun", "fieldManager", "body"} <= params
                if method == "patch":
                    assert op["consumes"] == list(PATCH_TYPES)
                    assert "force" in params
                if verb == "delete":
                    assert {"gracePeriodSeconds", "propagationPolicy", "orphanDependents", "dryRun"} <= params
                    body = next(p for p in _v2_params(doc, op["parameters"]) if p["in"] == "body")
                    assert body["schema"] == {"$ref": f"#/definitions/{META}DeleteOptions"}
                    assert not body.get("required")
            if kind.namespaced:
                all_ns = doc["paths"][f"/apis/{group.group}/{version}/{kind.resource}"]["get"]
                assert all_ns["x-kubernetes-action"] == "list"
                assert all_ns["operationId"].endswith(f"{kind.kind}ForAllNamespaces")


def test_v2_query_parameters(group: GroupInfo) -> None:
    doc = openapi_v2([group], patch_types=PATCH_TYPES, version_info={})
    kind = group.kinds[0]
    version = next(v for v in group.versions if v in kind.versions)
    ops = _expected(group, version, kind)
    path, method, _ = ops["list"]
    item = doc["paths"][path]
    list_params = {p["name"]: p for p in _v2_params(doc, item[method].get("parameters", []))}
    path_params = {p["name"]: p for p in _v2_params(doc, item.get("parameters", []))}
    for name in (
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "watch",
        "allowWatchBookmarks",
        "sendInitialEvents",
    ):
        assert list_params[name]["in"] == "query"
    assert list_params["limit"]["type"] == "integer" and list_params["watch"]["type"] == "boolean"
    # Parameters every operation of a path takes are lifted to the path, as kube-openapi does.
    assert "pretty" in path_params and "pretty" not in list_params
    deletecollection = {p["name"] for p in _v2_params(doc, item["delete"]["parameters"])}
    assert "labelSelector" in deletecollection and "watch" not in deletecollection


def test_v2_patch_consumes_exactly_patch_types() -> None:
    types = (*PATCH_TYPES, "application/strategic-merge-patch+json", "application/apply-patch+yaml")
    doc = openapi_v2([GROUP], patch_types=types, version_info={})
    patches = [item["patch"] for item in doc["paths"].values() if "patch" in item]
    assert len(patches) == 8  # two kinds, pizzas/status, pizzas/scale, two versions
    assert all(op["consumes"] == list(types) for op in patches)


def test_v2_references_resolve(group: GroupInfo) -> None:
    doc = openapi_v2([group], patch_types=PATCH_TYPES, version_info={})
    refs = set(_refs(doc))
    assert refs
    for ref in refs:
        section, _, name = ref.removeprefix("#/").partition("/")
        assert section in ("definitions", "parameters"), ref
        assert name in doc[section], ref


def test_v2_meta_kinds_tagged_for_every_group_version(example_group: GroupInfo) -> None:
    doc = openapi_v2([GROUP, example_group], patch_types=PATCH_TYPES, version_info={})
    for kind in ("DeleteOptions", "WatchEvent"):
        gvks = doc["definitions"][META + kind]["x-kubernetes-group-version-kind"]
        pairs = [(x["group"], x["version"]) for x in gvks]
        assert pairs == sorted(pairs)
        assert ("", "v1") in pairs
        for g in (GROUP, example_group):
            for v in g.versions:
                assert {"group": g.group, "kind": kind, "version": v} in gvks


def test_v2_path_templates_match_path_parameters(group: GroupInfo) -> None:
    doc = openapi_v2([group], patch_types=PATCH_TYPES, version_info={})
    for path, item in doc["paths"].items():
        templated = {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
        common = {p["name"] for p in _v2_params(doc, item.get("parameters", [])) if p["in"] == "path"}
        for method in METHODS:
            if method in item:
                own = {
                    p["name"]
                    for p in _v2_params(doc, item[method].get("parameters", []))
                    if p["in"] == "path"
                }
                assert common | own == templated, (path, method)


def _v3_docs(group: GroupInfo, patch_types: tuple[str, ...] = PATCH_TYPES) -> dict[str, dict[str, Any]]:
    return {v: openapi_v3_group_version(group, v, patch_types=patch_types) for v in group.versions}


def test_v3_every_verb_has_an_operation(group: GroupInfo) -> None:
    for version, doc in _v3_docs(group).items():
        assert doc["openapi"].startswith("3.0")
        assert all(p.startswith(f"/apis/{group.group}/{version}/") for p in doc["paths"])
        for kind in group.kinds:
            if version not in kind.versions or "patch" not in kind.verbs:
                continue
            gvk = {"group": group.group, "version": version, "kind": kind.kind}
            schema = doc["components"]["schemas"][definition_name(group.group, version, kind.kind)]
            assert schema["x-kubernetes-group-version-kind"] == [
                {"group": group.group, "version": version, "kind": kind.kind}
            ]
            for verb, (path, method, action) in _expected(group, version, kind).items():
                op = doc["paths"][path][method]
                assert op["x-kubernetes-action"] == action
                assert op["x-kubernetes-group-version-kind"] == gvk
                params = {p["name"] for p in op.get("parameters", [])}
                if verb.removeprefix("status-") in WRITE_VERBS:
                    assert "fieldValidation" in params
                    assert op["requestBody"]["required"] is True
                if method in ("post", "put"):
                    assert set(op["requestBody"]["content"]) == {"application/json", "application/yaml"}
                if action in ("list", "watch", "watchlist"):
                    assert "application/json;stream=watch" in op["responses"]["200"]["content"]


def test_v3_kubectl_finds_field_validation_on_every_patch(group: GroupInfo) -> None:
    # cli-runtime's supportsQueryParamV3 stops at the first PATCH carrying the GVK (map order is random),
    # so every such PATCH must list fieldValidation among its *own* parameters.
    for version, doc in _v3_docs(group).items():
        for kind in group.kinds:
            if version not in kind.versions or "patch" not in kind.verbs:
                continue
            gvk = {"group": group.group, "version": version, "kind": kind.kind}
            patches = [
                i["patch"]
                for i in doc["paths"].values()
                if i.get("patch", {}).get("x-kubernetes-group-version-kind") == gvk
            ]
            assert patches
            for op in patches:
                assert any(p["name"] == "fieldValidation" for p in op["parameters"])


def test_v3_patch_request_body_is_patch_types() -> None:
    types = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
    for doc in _v3_docs(GROUP, types).values():
        for item in doc["paths"].values():
            if "patch" in item:
                content = item["patch"]["requestBody"]["content"]
                assert list(content) == list(types)
                assert all(
                    c["schema"] == {"$ref": f"#/components/schemas/{META}Patch"} for c in content.values()
                )


def test_v3_references_resolve_and_use_no_sibling_refs(group: GroupInfo) -> None:
    for doc in _v3_docs(group).values():
        schemas = doc["components"]["schemas"]
        refs = set(_refs(doc))
        assert f"#/components/schemas/{META}ObjectMeta" in refs
        for ref in refs:
            assert ref.startswith("#/components/schemas/"), ref
            assert ref.removeprefix("#/components/schemas/") in schemas, ref

        def no_siblings(node: Any) -> None:
            if isinstance(node, dict):
                if "$ref" in node:
                    assert len(node) == 1, node
                for value in node.values():
                    no_siblings(value)
            elif isinstance(node, list):
                for value in node:
                    no_siblings(value)

        no_siblings(doc)


def test_v3_unknown_version_is_an_error() -> None:
    with pytest.raises(ValueError):
        openapi_v3_group_version(GROUP, "v9", patch_types=PATCH_TYPES)


def test_v3_index_hashes_the_served_bytes(example_group: GroupInfo) -> None:
    index = openapi_v3_index([GROUP, example_group], patch_types=PATCH_TYPES)
    expected_keys = [f"apis/{g.group}/{v}" for g in (GROUP, example_group) for v in g.versions]
    assert sorted(index["paths"]) == sorted(expected_keys)
    for g in (GROUP, example_group):
        for v in g.versions:
            body = encode_document(openapi_v3_group_version(g, v, patch_types=PATCH_TYPES))
            digest = hashlib.sha512(body).hexdigest().upper()
            assert index["paths"][f"apis/{g.group}/{v}"] == {
                "serverRelativeURL": f"/openapi/v3/apis/{g.group}/{v}?hash={digest}"
            }
            assert orjson.loads(body)["paths"]
    # A different patch_types is a different document, hence a different hash.
    other = openapi_v3_index([GROUP], patch_types=(*PATCH_TYPES, "application/apply-patch+yaml"))
    key = f"apis/{GROUP.group}/v1beta1"
    assert other["paths"][key] != index["paths"][key]


def test_scale_subresource_is_documented_as_autoscaling_v1_scale() -> None:
    """kube's CRD builder: /scale operations read and write io.k8s.api.autoscaling.v1.Scale."""
    doc = openapi_v2([GROUP], patch_types=PATCH_TYPES, version_info={})
    item = doc["paths"][f"/apis/{GROUP.group}/v1beta1/namespaces/{{namespace}}/pizzas/{{name}}/scale"]
    assert set(item) == {"get", "put", "patch", "parameters"}
    scale_ref = "#/definitions/io.k8s.api.autoscaling.v1.Scale"
    assert item["get"]["operationId"] == "readRestaurantProgrammingKubernetesInfoV1beta1NamespacedPizzaScale"
    assert item["get"]["responses"]["200"]["schema"] == {"$ref": scale_ref}
    shared = {"#/parameters/" + name: p for name, p in doc["parameters"].items()}
    body = next(p for p in (shared[r["$ref"]] for r in item["put"]["parameters"]) if p["in"] == "body")
    assert body["schema"] == {"$ref": scale_ref}
    for op in ("get", "put", "patch"):
        assert item[op]["x-kubernetes-group-version-kind"] == {
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
        }
    scale = doc["definitions"]["io.k8s.api.autoscaling.v1.Scale"]
    assert scale["x-kubernetes-group-version-kind"] == [
        {"group": "autoscaling", "kind": "Scale", "version": "v1"}
    ]
    assert doc["definitions"]["io.k8s.api.autoscaling.v1.ScaleStatus"]["required"] == ["replicas"]
    v3 = openapi_v3_group_version(GROUP, "v1alpha1", patch_types=PATCH_TYPES)
    assert "io.k8s.api.autoscaling.v1.Scale" in v3["components"]["schemas"]


@pytest.mark.parametrize(
    ("version", "extensions"),
    [
        ("v1alpha1", {"x-kubernetes-list-type": "atomic"}),
        ("v1beta1", {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
    ],
)
def test_toppings_list_type_is_published_in_v2_and_v3(version: str, extensions: dict[str, Any]) -> None:
    """Server-side apply clients (kubectl, client-go's apply configurations) merge as the published
    schema says: v1alpha1's repeated names are one atomic list, v1beta1's toppings a map by name."""
    name = definition_name(GROUP.group, version, "Pizza")
    v2 = openapi_v2([GROUP], patch_types=PATCH_TYPES, version_info={})["definitions"][name]
    v3 = openapi_v3_group_version(GROUP, version, patch_types=PATCH_TYPES)["components"]["schemas"][name]
    for schema in (v2, v3):
        toppings = schema["properties"]["spec"]["properties"]["toppings"]
        assert {k: toppings[k] for k in extensions} == extensions
