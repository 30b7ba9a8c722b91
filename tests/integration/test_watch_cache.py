"""The watch cache over real HTTPS: the same answers as reading through, fan-out without loss or
repeat, and bookmarks that advance with the group's writes."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import orjson

from tests.fixtures.server import running_server
from tests.integration.conftest import Api


@contextlib.asynccontextmanager
async def two_servers(etcd_url: str, data_dir: Path) -> AsyncIterator[tuple[Api, Api]]:
    """One server with the cache and one reading through, on the same etcd keys."""
    prefix = f"/registry/cache-test/{os.getpid()}/{id(data_dir)}"
    flags = ["--etcd-servers", etcd_url, "--etcd-prefix", prefix]
    async with (
        running_server(data_dir / "cached", *flags) as cached,
        running_server(data_dir / "direct", *flags, "--watch-cache=false") as direct,
        cached.session() as cached_session,
        direct.session() as direct_session,
    ):
        yield Api(cached, cached_session), Api(direct, direct_session)


async def raw(api: Api, path: str, **params: str) -> tuple[int, bytes]:
    async with api.session.get(path, params=params) as response:
        return response.status, await response.read()


async def test_cached_and_read_through_answers_are_the_same_bytes(etcd_server, tmp_path: Path) -> None:
    async with two_servers(etcd_server.client_url, tmp_path) as (cached, direct):
        await direct.create_toppings("tomato", "mozzarella", "basil")
        for name, toppings in (("margherita", ["tomato", "mozzarella"]), ("pesto", ["basil"])):
            r = await direct.post(
                direct.pizzas_path(), direct.pizza(name, [{"name": t, "quantity": 2} for t in toppings])
            )
            assert r.status == 201, r
        # A write made by the other server is seen by a consistent read at once.
        for version in ("v1alpha1", "v1beta1"):
            for path, params in (
                (cached.pizzas_path(version, "margherita"), {}),
                (cached.pizzas_path(version), {}),
                (cached.pizzas_path(version), {"limit": "1"}),
                (cached.pizzas_path(version), {"labelSelector": "missing!=x"}),
                (cached.toppings_path(version), {"fieldSelector": "metadata.name=basil"}),
                (cached.toppings_path(version, "tomato"), {"pretty": "true"}),
            ):
                a, b = await raw(cached, path, **params), await raw(direct, path, **params)
                assert a == b, (path, params)
        # The cache's continue token is the storage's: the other server goes on from it.
        first = orjson.loads((await raw(cached, cached.pizzas_path(), limit="1"))[1])
        rest = await direct.get(direct.pizzas_path(), params={"continue": first["metadata"]["continue"]})
        assert [p["metadata"]["name"] for p in rest.body["items"]] == ["pesto"]
        missing = await cached.get(cached.pizzas_path(name="calzone"))
        assert missing.status == 404 and missing.body["reason"] == "NotFound"


async def test_every_watcher_gets_every_event_once_in_order(api: Api) -> None:
    await api.create_toppings("tomato")
    rv = (await api.get(api.pizzas_path())).body["metadata"]["resourceVersion"]
    params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "30"}
    streams = [await api.session.get(api.pizzas_path(), params=params) for _ in range(20)]
    try:
        created = []
        for i in range(30):
            r = await api.post(api.pizzas_path(), api.pizza(f"p{i}", [{"name": "tomato", "quantity": 1}]))
            assert r.status == 201, r
            created.append((f"p{i}", r.body["metadata"]["resourceVersion"]))
        for stream in streams:
            assert stream.status == 200
            events = await api.read_events(stream, len(created))
            seen = [
                (e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"]) for e in events
            ]
            assert seen == created
            assert {e["type"] for e in events} == {"ADDED"}
    finally:
        for stream in streams:
            stream.close()


async def test_bookmarks_advance_with_writes_to_other_resources_of_the_group(api: Api) -> None:
    await api.create_toppings("tomato")
    start = (await api.get(api.toppings_path())).body["metadata"]["resourceVersion"]
    params = {"watch": "1", "resourceVersion": start, "allowWatchBookmarks": "true", "timeoutSeconds": "3"}
    async with api.session.get(api.toppings_path(), params=params) as stream:
        r = await api.post(api.pizzas_path(), api.pizza("margherita", [{"name": "tomato", "quantity": 1}]))
        assert r.status == 201, r
        events = await api.read_to_end(stream)
    # No topping changed; the bookmark (sent shortly before the deadline) still moved past the pizza.
    assert [e["type"] for e in events] == ["BOOKMARK"]
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(
        r.body["metadata"]["resourceVersion"]
    )


async def test_a_large_list_is_streamed_whole(api: Api) -> None:
    """Over a megabyte, the list is written in pieces with a Content-Length; it must still be exact."""
    await api.create_toppings("tomato")
    names = [f"pizza-{i:04d}" for i in range(1500)]
    note = "x" * 800

    async def create(name: str) -> None:
        body = api.pizza(name, [{"name": "tomato", "quantity": 1}], annotations={"note": note})
        assert (await api.post(api.pizzas_path(), body)).status == 201

    for chunk in range(0, len(names), 50):
        await asyncio.gather(*(create(n) for n in names[chunk : chunk + 50]))
    async with api.session.get(api.pizzas_path()) as response:
        assert response.status == 200
        body = await response.read()
        assert int(response.headers["Content-Length"]) == len(body) > 1 << 20
    listed = orjson.loads(body)
    assert [p["metadata"]["name"] for p in listed["items"]] == names
    assert listed["kind"] == "PizzaList"
