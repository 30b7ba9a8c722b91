"""System-owned metadata, generation, generateName, kept user metadata, and the /status subresource."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


async def test_create_sets_system_fields(any_api) -> None:
    api = any_api
    body = api.topping(
        "sys",
        uid="00000000-0000-0000-0000-000000000000",
        resourceVersion="12345",
        creationTimestamp="2000-01-01T00:00:00Z",
        generation=42,
        deletionTimestamp="2000-01-01T00:00:00Z",
    )
    r = await api.post(api.toppings_path(), body)
    assert r.status == 201, r
    meta = r.body["metadata"]
    assert meta["uid"] != "00000000-0000-0000-0000-000000000000"
    uuid.UUID(meta["uid"])
    assert RFC3339.fullmatch(meta["creationTimestamp"])
    created = datetime.strptime(meta["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - created).total_seconds()) < 60
    assert meta["generation"] == 1
    assert meta["resourceVersion"] != "12345"
    assert "deletionTimestamp" not in meta
    assert (await api.get(api.toppings_path("v1beta1", "sys"))).body["metadata"] == meta


async def test_generation_moves_on_spec_change_only(any_api) -> None:
    api = any_api
    await api.create_toppings("ham", "corn")
    created = await api.create_pizza("g", [{"name": "ham"}])
    assert created["metadata"]["generation"] == 1

    r = await api.patch(
        api.pizzas_path("v1beta1", "g"), {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json"
    )
    assert r.status == 200, r
    assert r.body["metadata"]["generation"] == 1
    assert r.body["metadata"]["labels"] == {"x": "y"}
    assert r.body["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

    r = await api.patch(
        api.pizzas_path("v1beta1", "g"),
        {"spec": {"toppings": [{"name": "corn"}]}},
        "application/merge-patch+json",
    )
    assert r.status == 200, r
    assert r.body["metadata"]["generation"] == 2

    current = r.body
    current["spec"]["toppings"][0]["quantity"] = 2
    r = await api.put(api.pizzas_path("v1beta1", "g"), current)
    assert r.status == 200, r
    assert r.body["metadata"]["generation"] == 3

    # A no-op update keeps generation.
    r = await api.put(api.pizzas_path("v1beta1", "g"), r.body)
    assert r.status == 200, r
    assert r.body["metadata"]["generation"] == 3
    assert r.body["metadata"]["uid"] == created["metadata"]["uid"]
    assert r.body["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


async def test_update_cannot_change_system_fields(api) -> None:
    await api.create_toppings("ham")
    created = await api.create_pizza("sys", [{"name": "ham"}])
    changed = {
        **created,
        "metadata": {**created["metadata"], "creationTimestamp": "2000-01-01T00:00:00Z", "generation": 99},
    }
    r = await api.put(api.pizzas_path("v1beta1", "sys"), changed)
    assert r.status == 200, r
    assert r.body["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert r.body["metadata"]["generation"] == 1
    changed = {**r.body, "metadata": {**r.body["metadata"], "uid": "6d1f7bd7-0000-4000-8000-000000000000"}}
    r = await api.put(api.pizzas_path("v1beta1", "sys"), changed)
    assert r.status in (409, 422), r
    assert (await api.get(api.pizzas_path("v1beta1", "sys"))).body["metadata"]["uid"] == created["metadata"][
        "uid"
    ]


async def test_generate_name(any_api) -> None:
    api = any_api
    body = api.topping("x")
    body["metadata"] = {"generateName": "extra-"}
    names = set()
    for _ in range(3):
        r = await api.post(api.toppings_path(), body)
        assert r.status == 201, r
        name = r.body["metadata"]["name"]
        assert re.fullmatch(r"extra-[bcdfghjklmnpqrstvwxz2456789]{5}", name), name
        assert r.body["metadata"]["generateName"] == "extra-"
        names.add(name)
    assert len(names) == 3
    listed = (await api.get(api.toppings_path())).body
    assert {i["metadata"]["name"] for i in listed["items"]} == names


async def test_user_metadata_is_kept(any_api) -> None:
    api = any_api
    await api.create_toppings("ham")
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "menu",
        "uid": "0c4f3f7a-1d8e-4d3b-9a5d-2d2d7c0b1e11",
    }
    meta = {
        "labels": {"app": "kitchen", "size": "large"},
        "annotations": {"note": "extra crispy", "example.com/x": "1"},
        "finalizers": ["example.com/bake"],
        "ownerReferences": [owner],
    }
    created = await api.create_pizza("kept", [{"name": "ham"}], **meta)
    for version in ("v1alpha1", "v1beta1"):
        got = (await api.get(api.pizzas_path(version, "kept"))).body["metadata"]
        assert got["labels"] == meta["labels"]
        # v1alpha1 adds the order number's annotation (it has no spec.orderNumber).
        got["annotations"].pop(f"{api.GROUP}/spec.orderNumber", None)
        assert got["annotations"] == meta["annotations"]
        assert got["finalizers"] == meta["finalizers"]
        assert got["ownerReferences"] == [owner]
    # Clean up the finalizer so the object can go.
    r = await api.patch(
        api.pizzas_path("v1beta1", "kept"), {"metadata": {"finalizers": None}}, "application/merge-patch+json"
    )
    assert r.status == 200, r
    assert r.body["metadata"]["uid"] == created["metadata"]["uid"]
    assert "finalizers" not in r.body["metadata"]


async def test_status_is_reset_on_create(api) -> None:
    await api.create_toppings("ham")
    body = api.pizza("st", [{"name": "ham"}])
    body["status"] = {"cost": 100}
    r = await api.post(api.pizzas_path(), body)
    assert r.status == 201, r
    assert r.body.get("status", {}).get("cost") is None
    assert (await api.get(api.pizzas_path("v1beta1", "st"))).body.get("status", {}).get("cost") is None


async def test_main_resource_ignores_status_changes(api) -> None:
    await api.create_toppings("ham")
    created = await api.create_pizza("st", [{"name": "ham"}])
    r = await api.put(api.pizzas_path("v1beta1", "st"), {**created, "status": {"cost": 5}})
    assert r.status == 200, r
    assert r.body.get("status", {}).get("cost") is None


async def test_status_subresource(any_api) -> None:
    api = any_api
    await api.create_toppings("ham", "corn")
    created = await api.create_pizza("st", [{"name": "ham"}], labels={"a": "1"})
    path = api.pizzas_path("v1beta1", "st") + "/status"

    r = await api.get(path)
    assert r.status == 200
    assert r.body["metadata"]["name"] == "st" and r.body["kind"] == "Pizza"

    # A status write that also tries to change spec and labels changes status only.
    attempt = {
        **created,
        "metadata": {**created["metadata"], "labels": {"a": "2"}},
        "spec": {"toppings": [{"name": "corn", "quantity": 5}]},
        "status": {"cost": 12.5},
    }
    r = await api.put(path, attempt)
    assert r.status == 200, r
    assert r.body["status"] == {"cost": 12.5}
    assert r.body["spec"] == created["spec"]
    assert r.body["metadata"]["labels"] == {"a": "1"}
    assert r.body["metadata"]["generation"] == 1
    assert int(r.body["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])

    r = await api.patch(path, {"status": {"cost": 13}}, "application/merge-patch+json")
    assert r.status == 200, r
    assert r.body["status"] == {"cost": 13}
    assert r.body["metadata"]["generation"] == 1

    r = await api.patch(path, {"status": {"cost": -1}}, "application/merge-patch+json")
    assert r.status == 422, r
    assert [c["field"] for c in r.body["details"]["causes"]] == ["status.cost"]

    # Stale resourceVersion on /status is a conflict, too.
    r = await api.put(path, {**created, "status": {"cost": 1}})
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"

    final = (await api.get(api.pizzas_path("v1beta1", "st"))).body
    assert final["status"] == {"cost": 13}
    assert final["spec"] == created["spec"]


async def test_status_of_missing_object_is_404(api) -> None:
    r = await api.get(api.pizzas_path("v1beta1", "ghost") + "/status")
    assert r.status == 404
    assert r.body["details"] == {"name": "ghost", "group": GROUP, "kind": "pizzas"}
    r = await api.patch(
        api.pizzas_path("v1beta1", "ghost") + "/status",
        {"status": {"cost": 1}},
        "application/merge-patch+json",
    )
    assert r.status == 404


async def test_emptied_labels_and_annotations_read_back_absent(api) -> None:
    # kube's ObjectMeta serializes these with omitempty: `kubectl label x k-` leaves no `labels: {}`.
    await api.create_toppings("bare")
    path = api.toppings_path("v1beta1", "bare")
    r = await api.patch(path, {"metadata": {"labels": {"k": "v"}, "annotations": {"a": "b"}}}, MERGE)
    assert r.body["metadata"]["labels"] == {"k": "v"}
    r = await api.patch(path, {"metadata": {"labels": {"k": None}, "annotations": {"a": None}}}, MERGE)
    assert r.status == 200, r
    assert "labels" not in r.body["metadata"] and "annotations" not in r.body["metadata"]
    assert "labels" not in (await api.get(path)).body["metadata"]
