"""Graceful deletion of pizzas over HTTPS, on both storage backends: kube's rest.BeforeDelete rules
(a grace period marks the object, later deletes may shorten it, 0 removes it), the server removing
the object when the period is over, and a negative period refused.

Kinds without graceful deletion (toppings) ignore the grace period, as kube's custom resources do.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

GROUP = "restaurant.programming-kubernetes.info"
HOLD = "example.com/hold"
# How long a test waits for the server to remove an object whose period is over: the period is
# whole seconds (deletionTimestamp has no fraction), the rest is a loaded machine's slack.
REMOVAL_BOUND = 15.0


def _options(**fields: Any) -> dict[str, Any]:
    return {"kind": "DeleteOptions", "apiVersion": "v1", **fields}


def _seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


async def _pizza(api, name: str, **meta: Any) -> dict[str, Any]:
    """A pizza with one tomato (PizzaToppings admission wants its toppings to exist)."""
    r = await api.post(api.toppings_path(), api.topping("tomato", 1))
    assert r.status in (201, 409), r
    return await api.create_pizza(name, [{"name": "tomato", "quantity": 1}], **meta)


async def _watch_from(api, rv: str):
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "60"}
    return api.session.get(api.pizzas_path(), params=params)


async def test_a_grace_period_marks_the_pizza_which_stays_readable_and_watchable(any_api) -> None:
    api = any_api
    created = await _pizza(api, "margherita")
    path = api.pizzas_path(name="margherita")
    async with await _watch_from(api, created["metadata"]["resourceVersion"]) as stream:
        before = time.time()
        r = await api.delete(path, params={"gracePeriodSeconds": "30"})
        assert r.status == 200, r
        marked = r.body
        # kube answers a graceful delete with the object, as it stands now.
        assert (marked["kind"], marked["apiVersion"]) == ("Pizza", f"{GROUP}/v1beta1")
        meta = marked["metadata"]
        assert meta["deletionGracePeriodSeconds"] == 30
        # Whole seconds, rounded up: the pizza is kept at least the 30 s asked for.
        assert before + 30 <= _seconds(meta["deletionTimestamp"]) <= time.time() + 31
        assert meta["generation"] == created["metadata"]["generation"] + 1
        assert meta["uid"] == created["metadata"]["uid"]

        # Readable, listable, and one MODIFIED on the watch (one storage update).
        r = await api.get(path)
        assert (r.status, r.body) == (200, marked)
        listed = (await api.get(api.pizzas_path())).body["items"]
        assert [p["metadata"]["name"] for p in listed] == ["margherita"]
        assert listed[0] == marked
        (event,) = await api.read_events(stream, 1)
        assert (event["type"], event["object"]) == ("MODIFIED", marked)

        # v1alpha1 shows the same deletion.
        r = await api.get(api.pizzas_path("v1alpha1", name="margherita"))
        assert r.body["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]

        # A longer period, or none, changes nothing and answers the object.
        for params in ({"gracePeriodSeconds": "60"}, {"gracePeriodSeconds": "30"}, {}):
            r = await api.delete(path, params=params)
            assert (r.status, r.body) == (200, marked), params

        # A shorter one moves the deadline back by the difference; the generation stays.
        r = await api.delete(path, params={"gracePeriodSeconds": "10"})
        assert r.status == 200, r
        shorter = r.body["metadata"]
        assert shorter["deletionGracePeriodSeconds"] == 10
        assert _seconds(shorter["deletionTimestamp"]) == _seconds(meta["deletionTimestamp"]) - 20
        assert shorter["generation"] == meta["generation"]
        assert int(shorter["resourceVersion"]) > int(meta["resourceVersion"])

        # 0 (kubectl --grace-period=0 --force) removes it at once: kube writes the zero period,
        # then deletes, and answers a Status.
        r = await api.delete(path, params={"gracePeriodSeconds": "0"})
        assert r.status == 200, r
        assert r.body["kind"] == "Status" and r.body["status"] == "Success"
        assert r.body["details"] == {
            "name": "margherita",
            "group": GROUP,
            "kind": "pizzas",
            "uid": created["metadata"]["uid"],
        }
        assert (await api.get(path)).status == 404
        events = await api.read_events(stream, 3)
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    assert events[0]["object"]["metadata"]["deletionGracePeriodSeconds"] == 10
    assert events[1]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert events[2]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0


async def test_without_a_grace_period_deletion_stays_immediate(any_api) -> None:
    api = any_api
    created = await _pizza(api, "funghi")
    await api.create_toppings("basil")
    async with await _watch_from(api, created["metadata"]["resourceVersion"]) as stream:
        r = await api.delete(api.pizzas_path(name="funghi"))
        assert (r.status, r.body["kind"]) == (200, "Status"), r
        (event,) = await api.read_events(stream, 1)
        assert event["type"] == "DELETED"
    # A kind without graceful deletion ignores the period, as kube does for custom resources.
    r = await api.delete(api.toppings_path(name="basil"), params={"gracePeriodSeconds": "30"})
    assert (r.status, r.body["kind"]) == (200, "Status"), r
    assert (await api.get(api.toppings_path(name="basil"))).status == 404


async def test_a_negative_grace_period_is_invalid_and_writes_nothing(any_api) -> None:
    api = any_api
    created = await _pizza(api, "quattro")
    await api.create_toppings("olive")
    path = api.pizzas_path(name="quattro")
    message = (
        'DeleteOptions.meta.k8s.io "" is invalid: gracePeriodSeconds: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    attempts = [
        ("DELETE", path, {"params": {"gracePeriodSeconds": "-1"}}),
        ("DELETE", path, {"json": _options(gracePeriodSeconds=-1)}),
        ("DELETE", api.toppings_path(name="olive"), {"params": {"gracePeriodSeconds": "-1"}}),
        ("DELETE", api.pizzas_path(), {"params": {"gracePeriodSeconds": "-1"}}),
    ]
    for method, target, kw in attempts:
        r = await api.request(method, target, **kw)
        assert r.status == 422, (target, kw, r)
        assert r.body["kind"] == "Status" and r.body["reason"] == "Invalid"
        assert r.body["message"] == message
        assert r.body["details"] == {
            "group": "meta.k8s.io",
            "kind": "DeleteOptions",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: must be greater than or equal to 0",
                    "field": "gracePeriodSeconds",
                }
            ],
        }
    # Not an integer: Go's decoder refuses it (400).
    for bad in ("30", 1.5, True):
        r = await api.request("DELETE", path, json=_options(gracePeriodSeconds=bad))
        assert r.status == 400, (bad, r)
        assert "DeleteOptions.gracePeriodSeconds of type int64" in r.body["message"]
    r = await api.get(path)
    assert r.body == created
    assert (await api.get(api.toppings_path(name="olive"))).status == 200


async def test_the_server_removes_the_pizza_when_the_period_is_over(any_api) -> None:
    api = any_api
    created = await _pizza(api, "diavola")
    path = api.pizzas_path(name="diavola")
    async with await _watch_from(api, created["metadata"]["resourceVersion"]) as stream:
        asked = time.time()
        r = await api.delete(path, params={"gracePeriodSeconds": "2"})
        assert r.status == 200, r
        deadline = _seconds(r.body["metadata"]["deletionTimestamp"])
        assert (await api.get(path)).status == 200
        events = await api.read_events(stream, 3, timeout=REMOVAL_BOUND)
        removed_at = time.time()
    # MODIFIED (marked), then the finisher's delete with grace 0: MODIFIED (period 0), DELETED.
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"], events
    assert removed_at >= deadline >= asked + 2
    assert (await api.get(path)).status == 404


async def test_preconditions_and_dry_run(any_api) -> None:
    api = any_api
    created = await _pizza(api, "hawaii")
    uid, rv = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    path = api.pizzas_path(name="hawaii")

    r = await api.request("DELETE", path, json=_options(gracePeriodSeconds=30, preconditions={"uid": "nope"}))
    assert r.status == 409, r
    assert r.body["details"] == {"name": "hawaii", "group": GROUP, "kind": "Pizza"}
    r = await api.request(
        "DELETE", path, json=_options(gracePeriodSeconds=30, preconditions={"resourceVersion": "1"})
    )
    assert r.status == 409, r
    assert (await api.get(path)).body == created

    # Dry run: the would-be object, nothing written.
    r = await api.request("DELETE", path, json=_options(gracePeriodSeconds=30, dryRun=["All"]))
    assert r.status == 200, r
    assert r.body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert r.body["metadata"]["deletionTimestamp"]
    assert (await api.get(path)).body == created

    both = {"uid": uid, "resourceVersion": rv}
    r = await api.request("DELETE", path, json=_options(gracePeriodSeconds=30, preconditions=both))
    assert r.status == 200, r
    marked = r.body
    # A dry-run shortening answers the would-be object; a dry-run removal writes nothing either.
    r = await api.request("DELETE", path, json=_options(gracePeriodSeconds=5, dryRun=["All"]))
    assert (r.status, r.body["metadata"]["deletionGracePeriodSeconds"]) == (200, 5), r
    r = await api.request("DELETE", path, json=_options(gracePeriodSeconds=0, dryRun=["All"]))
    assert (r.status, r.body["metadata"]["deletionGracePeriodSeconds"]) == (200, 0), r
    assert (await api.get(path)).body == marked

    # A stale resourceVersion cannot shorten it; the current one can.
    stale = _options(gracePeriodSeconds=0, preconditions={"resourceVersion": rv})
    r = await api.request("DELETE", path, json=stale)
    assert r.status == 409, r
    now_rv = marked["metadata"]["resourceVersion"]
    current = _options(gracePeriodSeconds=0, preconditions={"uid": uid, "resourceVersion": now_rv})
    r = await api.request("DELETE", path, json=current)
    assert (r.status, r.body["kind"]) == (200, "Status"), r
    assert (await api.get(path)).status == 404


async def test_finalizers_hold_a_pizza_whose_period_is_over(any_api) -> None:
    api = any_api
    await _pizza(api, "calzone", finalizers=[HOLD])
    path = api.pizzas_path(name="calzone")
    r = await api.delete(path, params={"gracePeriodSeconds": "1"})
    assert r.status == 200, r
    assert r.body["metadata"]["deletionGracePeriodSeconds"] == 1

    # Over: the finisher's delete with grace 0 leaves it marked with period 0, held by the finalizer.
    deadline = time.monotonic() + REMOVAL_BOUND
    while (await api.get(path)).body["metadata"]["deletionGracePeriodSeconds"] != 0:
        assert time.monotonic() < deadline, "the period was never ended"
        await asyncio.sleep(0.2)
    held = (await api.get(path)).body
    assert held["metadata"]["finalizers"] == [HOLD]
    # Deleting again changes nothing; removing the finalizer removes the pizza.
    r = await api.delete(path, params={"gracePeriodSeconds": "0"})
    assert r.status == 200 and r.body["metadata"]["finalizers"] == [HOLD], r
    r = await api.patch(path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert r.status == 200, r
    assert (await api.get(path)).status == 404


async def test_a_finalizer_removed_during_the_period_does_not_cut_it_short(any_api) -> None:
    api = any_api
    await _pizza(api, "marinara", finalizers=[HOLD])
    path = api.pizzas_path(name="marinara")
    r = await api.delete(path, params={"gracePeriodSeconds": "30"})
    assert r.status == 200, r
    r = await api.patch(path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert r.status == 200, r
    assert r.body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert (await api.get(path)).status == 200
    r = await api.delete(path, params={"gracePeriodSeconds": "0"})
    assert (r.status, r.body["kind"]) == (200, "Status"), r
    assert (await api.get(path)).status == 404


async def test_deletecollection_applies_the_period_to_every_item(any_api) -> None:
    api = any_api
    for name in ("a", "b", "c"):
        await _pizza(api, name)
    r = await api.delete(api.pizzas_path(), params={"gracePeriodSeconds": "30"})
    assert r.status == 200, r
    items = (await api.get(api.pizzas_path())).body["items"]
    assert [p["metadata"]["deletionGracePeriodSeconds"] for p in items] == [30, 30, 30]
    r = await api.delete(api.pizzas_path(), params={"gracePeriodSeconds": "0"})
    assert r.status == 200, r
    assert (await api.get(api.pizzas_path())).body["items"] == []
