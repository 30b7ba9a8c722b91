"""Corners of the request path: concurrency, patch preconditions, odd bodies and parameters."""

from __future__ import annotations

import asyncio

import orjson
import pytest

GROUP = "restaurant.programming-kubernetes.info"


async def test_concurrent_patches_are_not_lost(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    path = api.toppings_path("v1beta1", "ham")

    async def label(i: int) -> int:
        r = await api.patch(path, {"metadata": {"labels": {f"l{i}": "x"}}}, "application/merge-patch+json")
        return r.status

    statuses = await asyncio.gather(*(label(i) for i in range(12)))
    assert statuses == [200] * 12
    labels = (await api.get(path)).body["metadata"]["labels"]
    assert labels == {f"l{i}": "x" for i in range(12)}


async def test_concurrent_creates_one_wins(any_api) -> None:
    api = any_api
    replies = await asyncio.gather(*(api.post(api.toppings_path(), api.topping("race", i)) for i in range(8)))
    codes = sorted(r.status for r in replies)
    assert codes == [201] + [409] * 7
    assert all(r.body["reason"] == "AlreadyExists" for r in replies if r.status == 409)


async def test_concurrent_puts_with_same_resource_version(api) -> None:
    await api.create_toppings("ham")
    current = (await api.get(api.toppings_path("v1beta1", "ham"))).body
    replies = await asyncio.gather(
        *(
            api.put(api.toppings_path("v1beta1", "ham"), {**current, "spec": {"cost": 1 + i / 10}})
            for i in range(2, 8)
        )
    )
    assert sorted(r.status for r in replies) == [200] + [409] * 5
    [winner] = [r for r in replies if r.status == 200]
    assert (await api.get(api.toppings_path("v1beta1", "ham"))).body["spec"] == winner.body["spec"]


async def test_patch_with_resource_version_is_a_precondition(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    current = (await api.get(api.toppings_path("v1beta1", "ham"))).body
    path = api.toppings_path("v1beta1", "ham")
    r = await api.patch(
        path, {"metadata": {"resourceVersion": "1"}, "spec": {"cost": 2}}, "application/merge-patch+json"
    )
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"
    rv = current["metadata"]["resourceVersion"]
    r = await api.patch(
        path, {"metadata": {"resourceVersion": rv}, "spec": {"cost": 2}}, "application/merge-patch+json"
    )
    assert r.status == 200, r
    assert r.body["spec"] == {"cost": 2}


async def test_patch_strict_duplicate_fields_is_422(api) -> None:
    await api.create_toppings("ham")
    r = await api.patch(
        api.toppings_path("v1beta1", "ham"),
        b'{"spec":{"cost":2,"cost":3}}',
        "application/merge-patch+json",
        params={"fieldValidation": "Strict"},
    )
    assert r.status == 422, r
    [cause] = r.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert 'duplicate field "spec.cost"' in cause["message"]
    assert (await api.get(api.toppings_path("v1beta1", "ham"))).body["spec"] == {"cost": 1}


async def test_patch_warn_unknown_field(api) -> None:
    await api.create_toppings("ham")
    r = await api.patch(
        api.toppings_path("v1beta1", "ham"), {"spec": {"bogus": 1}}, "application/merge-patch+json"
    )
    assert r.status == 200, r
    assert r.headers.getall("Warning") == ['299 - "unknown field \\"spec.bogus\\""']
    assert r.body["spec"] == {"cost": 1}


async def test_big_patch_is_413(api) -> None:
    await api.create_toppings("ham")
    body = {"metadata": {"annotations": {"a": "x" * (3 * 1024 * 1024 + 1)}}}
    r = await api.patch(api.toppings_path("v1beta1", "ham"), body, "application/merge-patch+json")
    assert r.status == 413, r
    assert "annotations" not in (await api.get(api.toppings_path("v1beta1", "ham"))).body["metadata"]


async def test_huge_annotations_within_limit_are_invalid(api) -> None:
    """kube caps annotations at 256 KiB in total: 422, not a storage error."""
    body = api.topping("big", annotations={"a": "x" * (300 * 1024)})
    r = await api.post(api.toppings_path(), body)
    assert r.status == 422, r
    assert [c["field"] for c in r.body["details"]["causes"]] == ["metadata.annotations"]


async def test_delete_with_malformed_body_is_400(api) -> None:
    await api.create_toppings("ham")
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "ham"),
        data=b"{nope",
        headers={"Content-Type": "application/json"},
    )
    assert r.status == 400, r
    assert (await api.get(api.toppings_path("v1beta1", "ham"))).status == 200
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "ham"),
        json={"kind": "DeleteOptions", "propagationPolicy": "Sideways"},
    )
    assert r.status == 422, r
    assert (await api.get(api.toppings_path("v1beta1", "ham"))).status == 200


async def test_delete_in_wrong_namespace_is_404(api) -> None:
    created = await api.create_pizza("p", [])
    r = await api.delete(api.pizzas_path("v1beta1", "p", namespace="elsewhere"))
    assert r.status == 404, r
    assert (await api.get(api.pizzas_path("v1beta1", "p"))).body["metadata"]["uid"] == created["metadata"][
        "uid"
    ]


async def test_name_wins_over_generate_name(api) -> None:
    body = api.topping("fixed")
    body["metadata"]["generateName"] = "gen-"
    r = await api.post(api.toppings_path(), body)
    assert r.status == 201, r
    assert r.body["metadata"]["name"] == "fixed"


async def test_pretty_output(api) -> None:
    await api.create_toppings("ham")
    r = await api.get(api.toppings_path("v1beta1", "ham"), params={"pretty": "true"})
    assert r.status == 200
    assert r.text.startswith("{\n  ")
    assert orjson.loads(r.raw)["metadata"]["name"] == "ham"


async def test_numbers_keep_their_type(api) -> None:
    """cost 2 stays 2 (not 2.0): a client applying the same manifest twice sees no change."""
    r = await api.post(api.toppings_path(), api.topping("int", 2))
    assert b'"cost":2}' in r.raw
    r = await api.post(api.toppings_path(), api.topping("float", 0.1))
    assert b'"cost":0.1}' in r.raw
    assert b'"cost":2}' in (await api.get(api.toppings_path("v1alpha1", "int"))).raw


async def test_watch_metrics_and_verbs(api) -> None:
    async with api.session.get(
        api.toppings_path(), params={"watch": "true", "timeoutSeconds": "1"}
    ) as stream:
        await api.read_to_end(stream, timeout=8)
    await api.post(api.toppings_path(), api.topping("m"), params={"dryRun": "All"})
    text = (await api.get("/metrics")).text
    assert (
        'apiserver_request_total{code="200",component="apiserver",dry_run="",group="' + GROUP + '",'
        'resource="toppings",scope="cluster",subresource="",verb="WATCH",version="v1beta1"} 1.0'
    ) in text
    assert (
        'apiserver_request_total{code="201",component="apiserver",dry_run="All",group="' + GROUP + '",'
        'resource="toppings",scope="resource",subresource="",verb="POST",version="v1beta1"} 1.0'
    ) in text


@pytest.mark.parametrize("name", ["a.b", "a-b-c", "x" * 253, "0start"])
async def test_valid_dns_subdomain_names(api, name: str) -> None:
    r = await api.post(api.toppings_path(), api.topping(name))
    assert r.status == 201, r
    assert (await api.get(api.toppings_path("v1beta1", name))).body["metadata"]["name"] == name


async def test_unicode_in_annotations_round_trips(api) -> None:
    r = await api.post(api.toppings_path(), api.topping("uni", annotations={"note": "🍕 Käse\u2028ok"}))
    assert r.status == 201, r
    got = (await api.get(api.toppings_path("v1beta1", "uni"))).body
    assert got["metadata"]["annotations"] == {"note": "🍕 Käse\u2028ok"}


async def test_list_limit_larger_than_collection(any_api) -> None:
    api = any_api
    await api.create_toppings("a", "b")
    r = await api.get(api.toppings_path(), params={"limit": "100"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["a", "b"]
    assert "continue" not in r.body["metadata"]
    r = await api.get(api.toppings_path(), params={"limit": "-3"})
    assert r.status == 200
    assert len(r.body["items"]) == 2


async def test_patch_cannot_move_a_pizza_to_another_namespace(any_api) -> None:
    api = any_api
    created = await api.create_pizza("p", [])
    path = api.pizzas_path("v1beta1", "p")
    r = await api.patch(path, {"metadata": {"namespace": "other"}}, "application/merge-patch+json")
    assert r.status == 400, r
    assert (
        r.body["message"]
        == "the namespace of the provided object does not match the namespace sent on the request"
    )
    r = await api.patch(
        path,
        [{"op": "replace", "path": "/metadata/namespace", "value": "other"}],
        "application/json-patch+json",
    )
    assert r.status == 400, r
    assert (await api.get(path)).body == created
    assert (await api.get(api.pizzas_path(namespace="other"))).body["items"] == []


async def test_namespace_on_a_cluster_scoped_object_is_dropped(api) -> None:
    """kube's rest.BeforeCreate/BeforeUpdate clear metadata.namespace of cluster-scoped objects."""
    r = await api.post(api.toppings_path(), api.topping("ham", namespace="kitchen"))
    assert r.status == 201, r
    assert "namespace" not in r.body["metadata"]
    r = await api.patch(
        api.toppings_path("v1beta1", "ham"),
        {"metadata": {"namespace": "x"}, "spec": {"cost": 2}},
        "application/merge-patch+json",
    )
    assert r.status == 200, r
    assert "namespace" not in r.body["metadata"]
    assert r.body["spec"] == {"cost": 2}
