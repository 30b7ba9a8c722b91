"""WATCH over HTTPS: event order and content, timeouts, selectors, expired resourceVersions, Tables.

Every read from a stream is bounded (Api.read_events / read_to_end time out), so a server that stops
sending fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import time

GROUP = "restaurant.programming-kubernetes.info"
TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


async def test_watch_from_list_resource_version(any_api) -> None:
    api = any_api
    await api.create_toppings("before")
    listed = (await api.get(api.toppings_path())).body
    rv = listed["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert stream.status == 200
        assert stream.headers["Content-Type"] == "application/json"
        await api.create_toppings("t")
        r = await api.patch(
            api.toppings_path("v1beta1", "t"), {"spec": {"cost": 2}}, "application/merge-patch+json"
        )
        modified_rv = r.body["metadata"]["resourceVersion"]
        assert (await api.delete(api.toppings_path("v1beta1", "t"))).status == 200
        events = await api.read_events(stream, 3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    added, modified, deleted = (e["object"] for e in events)
    for obj in (added, modified, deleted):
        assert obj["apiVersion"] == f"{GROUP}/v1beta1"
        assert obj["kind"] == "Topping"
        assert obj["metadata"]["name"] == "t"
    assert added["spec"] == {"cost": 1}
    assert modified["spec"] == {"cost": 2}
    assert modified["metadata"]["resourceVersion"] == modified_rv
    # DELETED carries the last state, at the revision of the deletion.
    assert deleted["spec"] == {"cost": 2}
    assert int(deleted["metadata"]["resourceVersion"]) > int(modified_rv)
    assert added["metadata"]["uid"] == deleted["metadata"]["uid"]


async def test_watch_in_v1alpha1_converts_events(api) -> None:
    await api.create_toppings("ham")
    rv = (await api.get(api.pizzas_path("v1alpha1"))).body["metadata"]["resourceVersion"]
    params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with api.session.get(api.pizzas_path("v1alpha1"), params=params) as stream:
        await api.create_pizza("p", [{"name": "ham", "quantity": 2}])
        [event] = await api.read_events(stream, 1)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == f"{GROUP}/v1alpha1"
    assert event["object"]["spec"]["toppings"] == ["ham", "ham"]


async def test_watch_without_resource_version_starts_with_current_state(api) -> None:
    await api.create_toppings("a", "b")
    async with api.session.get(
        api.toppings_path(), params={"watch": "true", "timeoutSeconds": "30"}
    ) as stream:
        initial = await api.read_events(stream, 2)
        await api.create_toppings("c")
        [later] = await api.read_events(stream, 1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in initial] == [("ADDED", "a"), ("ADDED", "b")]
    assert (later["type"], later["object"]["metadata"]["name"]) == ("ADDED", "c")


async def test_timeout_seconds_ends_the_stream(any_api) -> None:
    api = any_api
    await api.create_toppings("a")
    rv = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    started = time.monotonic()
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert stream.status == 200
        events = await api.read_to_end(stream, timeout=8)
    elapsed = time.monotonic() - started
    assert events == []
    assert 0.8 <= elapsed < 6


async def test_watch_single_object_by_name(api) -> None:
    await api.create_toppings("a", "b")
    rv = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    params = {
        "watch": "true",
        "resourceVersion": rv,
        "fieldSelector": "metadata.name=b",
        "timeoutSeconds": "30",
    }
    async with api.session.get(api.toppings_path(), params=params) as stream:
        await api.patch(
            api.toppings_path("v1beta1", "a"), {"spec": {"cost": 1.5}}, "application/merge-patch+json"
        )
        await api.patch(
            api.toppings_path("v1beta1", "b"), {"spec": {"cost": 2}}, "application/merge-patch+json"
        )
        [event] = await api.read_events(stream, 1)
    assert (event["type"], event["object"]["metadata"]["name"], event["object"]["spec"]) == (
        "MODIFIED",
        "b",
        {"cost": 2},
    )
    # The legacy /watch/ path prefix works, too.
    async with api.session.get(
        f"/apis/{GROUP}/v1beta1/watch/toppings/a", params={"resourceVersion": rv, "timeoutSeconds": "30"}
    ) as stream:
        assert stream.status == 200
        [event] = await api.read_events(stream, 1)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("MODIFIED", "a")


async def test_watch_with_label_selector(any_api) -> None:
    api = any_api
    rv = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "labelSelector": "hot=yes", "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert (await api.post(api.toppings_path(), api.topping("mild", labels={"hot": "no"}))).status == 201
        assert (
            await api.post(api.toppings_path(), api.topping("chili", labels={"hot": "yes"}))
        ).status == 201
        # Leaving the selector is a DELETED for this watcher; entering it is an ADDED.
        r = await api.patch(
            api.toppings_path("v1beta1", "chili"),
            {"metadata": {"labels": {"hot": "no"}}},
            "application/merge-patch+json",
        )
        assert r.status == 200
        r = await api.patch(
            api.toppings_path("v1beta1", "mild"),
            {"metadata": {"labels": {"hot": "yes"}}},
            "application/merge-patch+json",
        )
        assert r.status == 200
        events = await api.read_events(stream, 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "chili"),
        ("DELETED", "chili"),
        ("ADDED", "mild"),
    ]
    # kube (etcd3 watcher and cacher) sends the last state that matched, at the change's revision.
    assert events[1]["object"]["metadata"]["labels"] == {"hot": "yes"}


async def test_namespaced_watch_sees_only_its_namespace(api) -> None:
    rv = (await api.get(f"/apis/{GROUP}/v1beta1/pizzas")).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with (
        api.session.get(api.pizzas_path(namespace="b"), params=params) as in_b,
        api.session.get(f"/apis/{GROUP}/v1beta1/pizzas", params=params) as everywhere,
    ):
        assert (await api.post(api.pizzas_path(namespace="a"), api.pizza("pa", []))).status == 201
        assert (await api.post(api.pizzas_path(namespace="b"), api.pizza("pb", []))).status == 201
        [only_b] = await api.read_events(in_b, 1)
        both = await api.read_events(everywhere, 2)
    assert (only_b["object"]["metadata"]["namespace"], only_b["object"]["metadata"]["name"]) == ("b", "pb")
    assert [e["object"]["metadata"]["name"] for e in both] == ["pa", "pb"]


async def test_watch_from_compacted_resource_version_is_expired(storage_api) -> None:
    api = storage_api
    storage = api.extra["storage"]
    await api.create_toppings("a")
    old_rv = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    for cost in (2, 3, 4):
        r = await api.patch(
            api.toppings_path("v1beta1", "a"), {"spec": {"cost": cost}}, "application/merge-patch+json"
        )
        assert r.status == 200
    current = int((await api.get(api.toppings_path())).body["metadata"]["resourceVersion"])
    await storage.compact(current)
    params = {"watch": "true", "resourceVersion": old_rv, "timeoutSeconds": "30"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        assert stream.status == 200
        events = await api.read_to_end(stream)
    assert len(events) == 1, events
    [event] = events
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["apiVersion"], status["status"]) == ("Status", "v1", "Failure")
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {old_rv} (")
    # A list at the compacted revision is 410 too; the newest state still lists fine.
    r = await api.get(
        api.toppings_path(), params={"resourceVersion": old_rv, "resourceVersionMatch": "Exact"}
    )
    assert r.status == 410, r
    assert r.body["reason"] == "Expired"
    r = await api.get(api.toppings_path())
    assert r.body["items"][0]["spec"] == {"cost": 4}


async def test_watch_table(api) -> None:
    await api.create_toppings("ham")
    rv = (await api.get(api.pizzas_path())).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}
    async with api.session.get(api.pizzas_path(), params=params, headers={"Accept": TABLE_ACCEPT}) as stream:
        assert stream.status == 200
        assert stream.headers["Content-Type"] == "application/json;as=Table;v=v1;g=meta.k8s.io"
        await api.create_pizza("p1", [{"name": "ham", "quantity": 2}])
        await api.create_pizza("p2", [{"name": "ham"}])
        events = await api.read_events(stream, 2)
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]
    first, second = (e["object"] for e in events)
    for table in (first, second):
        assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        assert len(table["rows"]) == 1
    assert [c["name"] for c in first["columnDefinitions"]] == ["Name", "Toppings", "Cost", "Age"]
    # Only the first event carries the headers (kube sets NoHeaders after it).
    assert second["columnDefinitions"] is None
    assert first["rows"][0]["cells"][:3] == ["p1", "2x ham", None]
    assert second["rows"][0]["cells"][:3] == ["p2", "ham", None]
    assert first["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert first["rows"][0]["object"]["metadata"]["name"] == "p1"


async def test_watch_bookmarks_when_asked(api) -> None:
    await api.create_toppings("a")
    rv = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "3", "allowWatchBookmarks": "true"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        await api.create_toppings("b")
        events = await api.read_to_end(stream, timeout=10)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    bookmark = events[1]["object"]
    assert bookmark["kind"] == "Topping"
    assert bookmark["metadata"]["resourceVersion"] == events[0]["object"]["metadata"]["resourceVersion"]


async def test_send_initial_events(api) -> None:
    await api.create_toppings("a", "b")
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "30",
    }
    async with api.session.get(api.toppings_path(), params=params) as stream:
        events = await api.read_events(stream, 3)
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("BOOKMARK", None),
    ]
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watch_ends_cleanly_when_client_goes_away(api) -> None:
    """Dropping a watch mid-stream must not disturb the server; new requests still work."""
    for _ in range(3):
        async with api.session.get(
            api.toppings_path(), params={"watch": "true", "timeoutSeconds": "30"}
        ) as stream:
            assert stream.status == 200
            await asyncio.sleep(0.05)
    await api.create_toppings("after")
    assert (await api.get(api.toppings_path("v1beta1", "after"))).status == 200


WATCH_DONE = (
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="' + GROUP + '",'
    'resource="toppings",scope="cluster",subresource="",verb="WATCH",version="v1beta1"} 1.0'
)


async def _finished_watches(server) -> bool:
    async with server.session() as s, s.get("/metrics") as r:
        return WATCH_DONE in (await r.text()).splitlines()


async def test_a_watch_whose_client_leaves_ends_on_the_server(embedded_server) -> None:
    """aiohttp does not cancel the handler of a client that left: the stream must notice on its own
    (the metrics filter counts a watch when its handler returns), or it holds a cache watcher until
    its timeout. The watch asks for no bookmarks and a long timeout, so nothing else would end it."""
    params = {"watch": "true", "timeoutSeconds": "3000"}
    path = f"/apis/{GROUP}/v1beta1/toppings"
    session = embedded_server.session()
    stream = await session.get(path, params=params)
    assert stream.status == 200
    assert not await _finished_watches(embedded_server)
    await session.close()  # the connection goes, without a word to the server
    for _ in range(100):
        if await _finished_watches(embedded_server):
            break
        await asyncio.sleep(0.1)
    assert await _finished_watches(embedded_server)


async def test_open_watches_end_cleanly_when_the_server_stops(tmp_path) -> None:
    """Shutdown wakes every open stream, which ends its chunked body: the client reads a complete
    response rather than a connection cut after aiohttp's shutdown timeout."""
    from tests.fixtures.server import running_server

    async with running_server(tmp_path / "data") as server, server.session() as s:
        streams = [
            await s.get(f"/apis/{GROUP}/v1beta1/toppings", params={"watch": "true", "timeoutSeconds": "3000"})
            for _ in range(3)
        ]
        assert [r.status for r in streams] == [200, 200, 200]
        server.extra["stop"].set()  # what SIGTERM does
        bodies = [await asyncio.wait_for(r.read(), 20) for r in streams]
    assert bodies == [b"", b"", b""]
