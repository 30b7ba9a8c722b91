"""Deletion in depth, on both backends: preconditions, finalizers, propagation policies, deletecollection.

Complements test_crud.py. The rules are kube's generic Store for kinds without graceful deletion
(custom resources): a finalizer turns a DELETE into an update setting deletionTimestamp and
deletionGracePeriodSeconds 0 (generation +1), and the update that removes the last finalizer deletes
the object instead of writing it.
"""

from __future__ import annotations

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"
HOLD = "example.com/hold"


def _options(**fields) -> dict:
    return {"kind": "DeleteOptions", "apiVersion": "v1", **fields}


async def _create(api, name: str, **meta) -> dict:
    r = await api.post(api.toppings_path(), api.topping(name, **meta))
    assert r.status == 201, r
    return r.body


async def test_preconditions_fail_in_kubes_words(any_api) -> None:
    api = any_api
    created = await _create(api, "onion")
    uid, rv = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    path = api.toppings_path("v1beta1", "onion")

    r = await api.request("DELETE", path, json=_options(preconditions={"uid": "nope"}))
    assert r.status == 409, r
    assert r.body["reason"] == "Conflict"
    assert r.body["message"] == (
        f'Operation cannot be fulfilled on Topping.{GROUP} "onion": the UID in the precondition (nope) does '
        f"not match the UID in record ({uid}). The object might have been deleted and then recreated"
    )
    # kube's BeforeDelete builds the GroupResource from the kind.
    assert r.body["details"] == {"name": "onion", "group": GROUP, "kind": "Topping"}

    r = await api.request("DELETE", path, json=_options(preconditions={"resourceVersion": "1"}))
    assert r.status == 409, r
    assert r.body["message"].endswith(
        f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). "
        "The object might have been modified"
    )
    assert (await api.get(path)).status == 200

    r = await api.request("DELETE", path, json=_options(preconditions={"uid": uid, "resourceVersion": rv}))
    assert r.status == 200, r
    assert r.body["status"] == "Success"
    assert r.body["details"] == {"name": "onion", "group": GROUP, "kind": "toppings", "uid": uid}
    assert (await api.get(path)).status == 404

    # A second delete: the object is gone.
    r = await api.delete(path)
    assert r.status == 404, r
    assert r.body["details"] == {"name": "onion", "group": GROUP, "kind": "toppings"}


async def test_finalizer_lifecycle_and_its_watch_events(any_api) -> None:
    api = any_api
    created = await _create(api, "garlic", finalizers=[HOLD])
    path = api.toppings_path("v1beta1", "garlic")
    params = {
        "watch": "true",
        "resourceVersion": created["metadata"]["resourceVersion"],
        "timeoutSeconds": "30",
    }
    async with api.session.get(api.toppings_path(), params=params) as stream:
        r = await api.delete(path)
        assert r.status == 200, r
        marked = r.body
        assert marked["kind"] == "Topping"
        assert marked["metadata"]["deletionTimestamp"]
        assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
        assert marked["metadata"]["finalizers"] == [HOLD]
        assert marked["metadata"]["generation"] == created["metadata"]["generation"] + 1

        # Deleting again changes nothing (no write, same resourceVersion and timestamp).
        r = await api.delete(path)
        assert r.status == 200, r
        assert r.body["metadata"] == marked["metadata"]

        # Other updates still work while the object is held.
        r = await api.patch(path, {"metadata": {"labels": {"state": "going"}}}, MERGE)
        assert r.status == 200, r
        labelled = r.body
        assert labelled["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]

        # The update that removes the last finalizer deletes the object: 200 with the updated object ...
        r = await api.put(path, {**labelled, "metadata": {**labelled["metadata"], "finalizers": []}})
        assert r.status == 200, r
        assert not r.body["metadata"].get("finalizers")
        assert r.body["metadata"]["resourceVersion"] == labelled["metadata"]["resourceVersion"]
        assert (await api.get(path)).status == 404
        events = await api.read_events(stream, 3)
    # ... and watchers see no MODIFIED for it (the second DELETE wrote nothing either), only one DELETED
    # carrying the last stored state.
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    deleted = events[-1]["object"]
    assert deleted["metadata"]["finalizers"] == [HOLD]
    assert deleted["metadata"]["labels"] == {"state": "going"}
    assert int(deleted["metadata"]["resourceVersion"]) > int(labelled["metadata"]["resourceVersion"])


async def test_create_over_an_object_being_deleted_says_so(any_api) -> None:
    api = any_api
    await _create(api, "leek", finalizers=[HOLD])
    assert (await api.delete(api.toppings_path("v1beta1", "leek"))).status == 200
    r = await api.post(api.toppings_path(), api.topping("leek"))
    assert r.status == 409, r
    assert r.body["reason"] == "AlreadyExists"
    assert r.body["message"] == f'object is being deleted: toppings.{GROUP} "leek" already exists'
    # No new finalizers while deleting; removing the last one deletes.
    r = await api.patch(
        api.toppings_path("v1beta1", "leek"), {"metadata": {"finalizers": [HOLD, "x.io/y"]}}, MERGE
    )
    assert r.status == 422, r
    r = await api.patch(api.toppings_path("v1beta1", "leek"), {"metadata": {"finalizers": None}}, MERGE)
    assert r.status == 200, r
    assert (await api.post(api.toppings_path(), api.topping("leek"))).status == 201


async def test_propagation_policies_record_gc_finalizers(any_api) -> None:
    api = any_api
    for name in ("orphan-me", "fg-me", "bg-me", "legacy-orphan", "legacy-cascade"):
        await _create(api, name)

    r = await api.request(
        "DELETE", api.toppings_path("v1beta1", "orphan-me"), json=_options(propagationPolicy="Orphan")
    )
    assert r.status == 200, r
    assert r.body["metadata"]["finalizers"] == ["orphan"]
    assert r.body["metadata"]["deletionTimestamp"]

    r = await api.delete(api.toppings_path("v1beta1", "fg-me"), params={"propagationPolicy": "Foreground"})
    assert r.status == 200, r
    assert r.body["metadata"]["finalizers"] == ["foregroundDeletion"]

    r = await api.request(
        "DELETE", api.toppings_path("v1beta1", "bg-me"), json=_options(propagationPolicy="Background")
    )
    assert (r.status, r.body["kind"]) == (200, "Status")

    r = await api.request(
        "DELETE", api.toppings_path("v1beta1", "legacy-orphan"), json=_options(orphanDependents=True)
    )
    assert r.body["metadata"]["finalizers"] == ["orphan"]
    # orphanDependents=false on an object that stays: kube's 202 Accepted.
    await _create(api, "held", finalizers=[HOLD])
    r = await api.delete(api.toppings_path("v1beta1", "held"), params={"orphanDependents": "false"})
    assert r.status == 202, r
    assert r.body["metadata"]["finalizers"] == [HOLD]
    r = await api.delete(api.toppings_path("v1beta1", "legacy-cascade"), params={"orphanDependents": "false"})
    assert (r.status, r.body["kind"]) == (200, "Status")

    # The GC finalizers hold the object until the garbage collector (here: the test) removes them.
    for name in ("orphan-me", "fg-me", "legacy-orphan"):
        assert (await api.get(api.toppings_path("v1beta1", name))).status == 200
        r = await api.patch(api.toppings_path("v1beta1", name), {"metadata": {"finalizers": None}}, MERGE)
        assert r.status == 200, r
        assert (await api.get(api.toppings_path("v1beta1", name))).status == 404


async def test_gc_finalizers_already_on_the_object(any_api) -> None:
    api = any_api
    # An "orphan" finalizer alone is dropped by Background: nothing holds the object, it goes at once.
    await _create(api, "only-orphan", finalizers=["orphan"])
    r = await api.request(
        "DELETE", api.toppings_path("v1beta1", "only-orphan"), json=_options(propagationPolicy="Background")
    )
    assert (r.status, r.body["kind"]) == (200, "Status"), r
    assert (await api.get(api.toppings_path("v1beta1", "only-orphan"))).status == 404
    # Without a policy the object's own GC finalizers are kept, in their stored order.
    await _create(api, "kept", finalizers=["foregroundDeletion", HOLD])
    r = await api.delete(api.toppings_path("v1beta1", "kept"))
    assert r.status == 200, r
    assert r.body["metadata"]["finalizers"] == ["foregroundDeletion", HOLD]
    # A later delete with another policy swaps the GC finalizer (custom resources have no
    # graceful-deletion strategy, so finalizers can still change while deleting).
    r = await api.request(
        "DELETE", api.toppings_path("v1beta1", "kept"), json=_options(propagationPolicy="Orphan")
    )
    assert r.status == 200, r
    assert r.body["metadata"]["finalizers"] == [HOLD, "orphan"]
    assert r.body["metadata"]["deletionTimestamp"]


async def test_delete_options_are_validated(any_api) -> None:
    api = any_api
    await _create(api, "basil")
    path = api.toppings_path("v1beta1", "basil")
    r = await api.request(
        "DELETE", path, json=_options(orphanDependents=True, propagationPolicy="Foreground")
    )
    assert r.status == 422, r
    assert r.body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Foreground": '
        "orphanDependents and deletionPropagation cannot be both set"
    )
    r = await api.delete(path, params={"propagationPolicy": "Sideways"})
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "propagationPolicy"
    r = await api.request("DELETE", path, json=_options(dryRun=["Everything"]))
    assert r.status == 422, r
    assert r.body["details"]["causes"][0]["field"] == "dryRun"
    r = await api.delete(path, params={"gracePeriodSeconds": "soon"})
    assert r.status == 400, r
    for malformed in ({"dryRun": "All"}, {"preconditions": ["uid"]}):
        r = await api.request("DELETE", path, json=_options(**malformed))
        assert r.status == 400, r
    assert (await api.get(path)).status == 200


async def test_single_delete_reads_the_body_or_else_the_query(any_api) -> None:
    """kube's DELETE handler decodes DeleteOptions from the body when there is one and only otherwise
    from the query; deletecollection reads the body and lets the query override it."""
    api = any_api
    await _create(api, "a")
    await _create(api, "b")
    r = await api.request(
        "DELETE",
        api.toppings_path("v1beta1", "a"),
        json=_options(propagationPolicy="Orphan"),
        params={"propagationPolicy": "Foreground"},
    )
    assert r.body["metadata"]["finalizers"] == ["orphan"]
    r = await api.request(
        "DELETE",
        api.toppings_path(),
        json=_options(propagationPolicy="Orphan"),
        params={"propagationPolicy": "Foreground", "fieldSelector": "metadata.name=b"},
    )
    assert r.status == 200, r
    assert (await api.get(api.toppings_path("v1beta1", "b"))).body["metadata"]["finalizers"] == [
        "foregroundDeletion"
    ]


async def test_deletecollection_with_selectors(any_api) -> None:
    api = any_api
    await _create(api, "red1", labels={"color": "red"})
    await _create(api, "red2", labels={"color": "red"}, finalizers=[HOLD])
    await _create(api, "red3", labels={"color": "red"})
    await _create(api, "green", labels={"color": "green"})
    for ns, name in (("n1", "p1"), ("n1", "p2"), ("n2", "p1")):
        assert (await api.post(api.pizzas_path(namespace=ns), api.pizza(name, []))).status == 201

    r = await api.delete(
        api.toppings_path(), params={"labelSelector": "color=red", "fieldSelector": "metadata.name!=red3"}
    )
    assert r.status == 200, r
    assert r.body["kind"] == "ToppingList"
    # The answer is the list as it was read (kube returns the listed items, not their deleted state).
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["red1", "red2"]
    assert not any(i["metadata"].get("deletionTimestamp") for i in r.body["items"])
    left = (await api.get(api.toppings_path())).body["items"]
    assert [(i["metadata"]["name"], bool(i["metadata"].get("deletionTimestamp"))) for i in left] == [
        ("green", False),
        ("red2", True),
        ("red3", False),
    ]
    # With a limit, one page is deleted and the continue token comes back.
    r = await api.delete(api.pizzas_path(namespace="n1"), params={"limit": "1"})
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["p1"]
    assert r.body["metadata"]["continue"]
    names = [
        (i["metadata"]["namespace"], i["metadata"]["name"])
        for i in (await api.get(f"/apis/{GROUP}/v1beta1/pizzas")).body["items"]
    ]
    assert names == [("n1", "p2"), ("n2", "p1")]
    # Namespaced: only the URL's namespace.
    r = await api.delete(api.pizzas_path(namespace="n2"))
    assert [i["metadata"]["name"] for i in r.body["items"]] == ["p1"]
    assert (await api.get(api.pizzas_path("v1beta1", "p2", namespace="n1"))).status == 200
    # Bad selectors are 400s and delete nothing.
    r = await api.delete(api.toppings_path(), params={"fieldSelector": "spec.cost=1"})
    assert r.status == 400, r
    assert len((await api.get(api.toppings_path())).body["items"]) == 3
