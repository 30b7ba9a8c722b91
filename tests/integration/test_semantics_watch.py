"""WATCH semantics in depth, on both backends: selector transitions, ordering, resumption, bookmarks,
watch-list and the error paths.

Complements test_watch.py. Every stream read is bounded (Api.read_events / read_to_end time out).
"""

from __future__ import annotations

import asyncio
import time

from tests.fixtures.objects import list_resource_version

GROUP = "restaurant.programming-kubernetes.info"
MERGE = "application/merge-patch+json"
WATCH_LIST = {
    "watch": "true",
    "sendInitialEvents": "true",
    "resourceVersionMatch": "NotOlderThan",
    "allowWatchBookmarks": "true",
    "timeoutSeconds": "30",
}


def _summary(events: list) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_objects_moving_in_and_out_of_the_selector(any_api) -> None:
    """kube's rule: MODIFIED that leaves the selector → DELETED carrying the last state that matched (at
    the revision of the change); one that enters → ADDED; DELETED carries the final state."""
    api = any_api
    rv = await list_resource_version(api, api.toppings_path())
    # Costs change by at most double per update: the transition rule on spec.cost.
    params = {"watch": "true", "resourceVersion": rv, "labelSelector": "hot=yes", "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert stream.status == 200
        await api.post(api.toppings_path(), api.topping("mild", 1, labels={"hot": "no"}))
        await api.post(api.toppings_path(), api.topping("chili", 2, labels={"hot": "yes"}))
        left = await api.patch(
            api.toppings_path("v1beta1", "chili"),
            {"metadata": {"labels": {"hot": "no"}}, "spec": {"cost": 3}},
            MERGE,
        )
        await api.patch(api.toppings_path("v1beta1", "chili"), {"spec": {"cost": 4}}, MERGE)  # unseen
        await api.patch(api.toppings_path("v1beta1", "mild"), {"metadata": {"labels": {"hot": "yes"}}}, MERGE)
        modified = await api.patch(api.toppings_path("v1beta1", "mild"), {"spec": {"cost": 2}}, MERGE)
        deleted = await api.delete(api.toppings_path("v1beta1", "mild"))
        assert deleted.status == 200
        events = await api.read_events(stream, 5)
    assert _summary(events) == [
        ("ADDED", "chili"),
        ("DELETED", "chili"),
        ("ADDED", "mild"),
        ("MODIFIED", "mild"),
        ("DELETED", "mild"),
    ]
    leaving = events[1]["object"]
    assert leaving["metadata"]["labels"] == {"hot": "yes"}
    assert leaving["spec"] == {"cost": 2}
    assert leaving["metadata"]["resourceVersion"] == left.body["metadata"]["resourceVersion"]
    assert events[3]["object"]["metadata"]["resourceVersion"] == modified.body["metadata"]["resourceVersion"]
    final = events[4]["object"]
    assert final["spec"] == {"cost": 2} and final["metadata"]["labels"] == {"hot": "yes"}
    assert int(final["metadata"]["resourceVersion"]) > int(modified.body["metadata"]["resourceVersion"])


async def test_field_selector_watch_follows_one_namespace(any_api) -> None:
    api = any_api
    rv = (await api.get(f"/apis/{GROUP}/v1beta1/pizzas")).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with api.session.get(
        f"/apis/{GROUP}/v1beta1/pizzas", params={**params, "fieldSelector": "metadata.namespace=b"}
    ) as stream:
        await api.post(api.pizzas_path(namespace="a"), api.pizza("pa", []))
        await api.post(api.pizzas_path(namespace="b"), api.pizza("pb", []))
        await api.delete(api.pizzas_path("v1beta1", "pa", namespace="a"))
        await api.delete(api.pizzas_path("v1beta1", "pb", namespace="b"))
        events = await api.read_events(stream, 2)
    assert [(e["type"], e["object"]["metadata"]["namespace"]) for e in events] == [
        ("ADDED", "b"),
        ("DELETED", "b"),
    ]


async def test_events_in_revision_order_exactly_once(any_api) -> None:
    """Concurrent writers; the watcher gets one event per write, in strictly increasing revision."""
    api = any_api
    rv = await list_resource_version(api, api.toppings_path())
    writes: list[str] = []

    async def churn(prefix: str) -> None:
        for i in range(4):
            name = f"{prefix}{i}"
            r = await api.post(api.toppings_path(), api.topping(name))
            writes.append(r.body["metadata"]["resourceVersion"])
            r = await api.patch(api.toppings_path("v1beta1", name), {"spec": {"cost": 2}}, MERGE)
            writes.append(r.body["metadata"]["resourceVersion"])
            if i % 2:
                assert (await api.delete(api.toppings_path("v1beta1", name))).status == 200

    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        await asyncio.gather(*(churn(p) for p in ("a", "b", "c", "d")))
        expected = 4 * (4 * 2 + 2)
        events = await api.read_events(stream, expected)
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert len(events) == expected
    assert revisions == sorted(set(revisions)), "revision order, no duplicates"
    assert {int(w) for w in writes} <= set(revisions)
    per_object: dict[str, list[str]] = {}
    for e in events:
        per_object.setdefault(e["object"]["metadata"]["name"], []).append(e["type"])
    for name, types in per_object.items():
        want = ["ADDED", "MODIFIED", "DELETED"] if int(name[1]) % 2 else ["ADDED", "MODIFIED"]
        assert types == want, name


async def test_resume_from_any_retained_revision(any_api) -> None:
    """A watch from the revision of any event replays exactly the events after it."""
    api = any_api
    rv = await list_resource_version(api, api.toppings_path())
    for name in ("a", "b"):
        await api.create_toppings(name)
        await api.patch(api.toppings_path("v1beta1", name), {"spec": {"cost": 2}}, MERGE)
    await api.delete(api.toppings_path("v1beta1", "a"))
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        everything = await api.read_events(stream, 5)
    assert _summary(everything) == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("DELETED", "a"),
    ]
    for i, event in enumerate(everything):
        resume = event["object"]["metadata"]["resourceVersion"]
        async with api.session.get(
            api.toppings_path(), params={**params, "resourceVersion": resume}
        ) as stream:
            rest = await api.read_events(stream, len(everything) - i - 1, timeout=5)
            if i == len(everything) - 1:
                await api.create_toppings("probe")  # nothing was pending: the next event is new
                rest = await api.read_events(stream, 1)
                assert _summary(rest) == [("ADDED", "probe")]
                await api.delete(api.toppings_path("v1beta1", "probe"))
                continue
        assert rest == everything[i + 1 :]


async def test_bookmark_without_activity_reports_the_start_revision(any_api) -> None:
    """No event at all: the bookmark shortly before the deadline still lets the client resume."""
    api = any_api
    await api.create_toppings("a")
    rv = await list_resource_version(api, api.toppings_path())
    params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3"}
    started = time.monotonic()
    async with api.session.get(api.toppings_path(), params=params) as stream:
        events = await api.read_to_end(stream, timeout=10)
    assert 2.5 <= time.monotonic() - started < 8
    assert [e["type"] for e in events] == ["BOOKMARK"]
    bookmark = events[0]["object"]
    assert (bookmark["kind"], bookmark["apiVersion"]) == ("Topping", f"{GROUP}/v1beta1")
    assert bookmark["metadata"] == {"resourceVersion": rv}


async def test_bookmark_moves_past_events_the_selector_filtered_out(any_api) -> None:
    api = any_api
    rv = await list_resource_version(api, api.toppings_path())
    params = {
        "watch": "true",
        "resourceVersion": rv,
        "allowWatchBookmarks": "true",
        "labelSelector": "never=matches",
        "timeoutSeconds": "3",
    }
    async with api.session.get(api.toppings_path(), params=params) as stream:
        await api.create_toppings("a", "b")
        last = await api.patch(api.toppings_path("v1beta1", "b"), {"spec": {"cost": 2}}, MERGE)
        events = await api.read_to_end(stream, timeout=10)
    assert [e["type"] for e in events] == ["BOOKMARK"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == last.body["metadata"]["resourceVersion"]


async def test_no_bookmarks_unless_asked(any_api) -> None:
    api = any_api
    rv = await list_resource_version(api, api.toppings_path())
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "3"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        await api.create_toppings("a")
        events = await api.read_to_end(stream, timeout=10)
    assert [e["type"] for e in events] == ["ADDED"]


async def test_watch_list_initial_events_then_live(any_api) -> None:
    """sendInitialEvents=true: ADDED for every object that matches, a bookmark annotated
    k8s.io/initial-events-end at the state's revision, then changes after it."""
    api = any_api
    await api.post(api.toppings_path(), api.topping("in1", labels={"pick": "me"}))
    await api.post(api.toppings_path(), api.topping("out", labels={"pick": "no"}))
    await api.post(api.toppings_path(), api.topping("in2", labels={"pick": "me"}))
    rv = await list_resource_version(api, api.toppings_path())
    expected = ["in1", "in2"]
    for i, start in enumerate(({}, {"resourceVersion": "0"}, {"resourceVersion": rv})):
        params = {**WATCH_LIST, "labelSelector": "pick=me", **start}
        async with api.session.get(api.toppings_path(), params=params) as stream:
            assert stream.status == 200
            initial = await api.read_events(stream, len(expected) + 1)
            await api.post(api.toppings_path(), api.topping(f"live{i}", labels={"pick": "me"}))
            [live] = await api.read_events(stream, 1)
        assert _summary(initial) == [("ADDED", n) for n in expected] + [("BOOKMARK", "")]
        end = initial[-1]["object"]["metadata"]
        assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert int(end["resourceVersion"]) >= int(rv)
        assert (live["type"], live["object"]["metadata"]["name"]) == ("ADDED", f"live{i}")
        assert int(live["object"]["metadata"]["resourceVersion"]) > int(end["resourceVersion"])
        expected = sorted([*expected, f"live{i}"])


async def test_watch_from_a_future_revision_is_an_error_event(any_api) -> None:
    """A revision the store has not reached: HTTP 200, then one ERROR event carrying kube's
    "Too large resource version" Timeout (what client-go's reflector relists on) — for a plain watch
    and for a watch-list alike (cacher: newErrWatcher)."""
    api = any_api
    future = str(int(await list_resource_version(api, api.toppings_path())) + 1000)
    plain = {"watch": "true", "resourceVersion": future, "timeoutSeconds": "30"}
    for params in (plain, {**WATCH_LIST, "resourceVersion": future}):
        async with api.session.get(api.toppings_path(), params=params) as stream:
            assert stream.status == 200
            events = await api.read_to_end(stream)
        assert [e["type"] for e in events] == ["ERROR"], events
        status = events[0]["object"]
        assert (status["kind"], status["code"], status["reason"]) == ("Status", 504, "Timeout")
        assert status["message"].startswith(f"Too large resource version: {future}")


async def test_legacy_watch_from_zero_replays_state_without_bookmark(any_api) -> None:
    api = any_api
    await api.create_toppings("a", "b")
    params = {"watch": "true", "resourceVersion": "0", "allowWatchBookmarks": "true", "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        initial = await api.read_events(stream, 2)
        await api.patch(api.toppings_path("v1beta1", "a"), {"spec": {"cost": 2}}, MERGE)
        [live] = await api.read_events(stream, 1)
    assert _summary(initial) == [("ADDED", "a"), ("ADDED", "b")]
    assert (live["type"], live["object"]["spec"]) == ("MODIFIED", {"cost": 2})


async def test_watch_too_old_with_selector_is_an_error_event(storage_api) -> None:
    """The 410 arrives as the one ERROR event of an open stream even when a selector is set."""
    api = storage_api
    await api.create_toppings("a")
    old = await list_resource_version(api, api.toppings_path())
    for cost in (2, 3):
        await api.patch(api.toppings_path("v1beta1", "a"), {"spec": {"cost": cost}}, MERGE)
    await api.extra["storage"].compact(int(await list_resource_version(api, api.toppings_path())))
    params = {
        "watch": "true",
        "resourceVersion": old,
        "labelSelector": "x",
        "allowWatchBookmarks": "1",
        "timeoutSeconds": "30",
    }
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert stream.status == 200
        events = await api.read_to_end(stream)
    assert [e["type"] for e in events] == ["ERROR"]
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")
