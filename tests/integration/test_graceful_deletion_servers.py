"""The server removes a pizza whose grace period is over whatever runs it: after a restart that spans
the deadline, with two workers, with two servers on one etcd, without the watch cache. Exactly one
removal: the watch sees the mark, the period ended (0), and one DELETED.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.etcd import unique_prefix
from tests.fixtures.server import running_server, start_server_process
from tests.integration.conftest import Api
from tests.integration.test_etcd_restart import process_api
from tests.integration.test_etcd_server import etcd_flags

# Seconds a pizza stays in the oven in these tests, and how long a watch stays open to see it go.
PERIOD = 2
WATCH_SECONDS = PERIOD + 6


@contextlib.asynccontextmanager
async def in_process_api(data_dir: Path, *flags: str) -> AsyncIterator[Api]:
    async with running_server(data_dir, *flags) as server, server.session() as session:
        yield Api(server, session)


def backend_flags(backend: str, request: pytest.FixtureRequest) -> list[str]:
    if backend == "embedded":
        return []
    return etcd_flags([request.getfixturevalue("etcd_server").client_url], unique_prefix())


async def bake(api: Api, name: str) -> dict[str, Any]:
    r = await api.post(api.toppings_path(), api.topping("tomato", 1))
    assert r.status in (201, 409), r
    return await api.create_pizza(name, [{"name": "tomato", "quantity": 1}])


async def watch_until_timeout(api: Api, rv: str, during: Any) -> list[Any]:
    """Every pizza event after `rv` in the next WATCH_SECONDS, `during()` run once the watch is open."""
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": str(WATCH_SECONDS)}
    async with api.session.get(api.pizzas_path(), params=params) as stream:
        assert stream.status == 200
        await during()
        return await api.read_to_end(stream, timeout=WATCH_SECONDS + 10)


def removed_once(events: list[Any], name: str) -> None:
    mine = [(e["type"], e["object"]["metadata"].get("deletionGracePeriodSeconds")) for e in events]
    assert all(e["object"]["metadata"]["name"] == name for e in events), events
    assert mine == [("MODIFIED", PERIOD), ("MODIFIED", 0), ("DELETED", 0)], mine


async def delete_gracefully(api: Api, name: str, period: int = PERIOD) -> dict[str, Any]:
    r = await api.delete(api.pizzas_path(name=name), params={"gracePeriodSeconds": str(period)})
    assert r.status == 200 and r.body["metadata"]["deletionGracePeriodSeconds"] == period, r
    return r.body


@pytest.mark.parametrize("backend", ["embedded", "etcd"])
async def test_a_restarted_server_removes_what_expired_while_it_was_down(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    flags = backend_flags(backend, request)
    data_dir = tmp_path / "data"
    async with in_process_api(data_dir, *flags) as api:
        await bake(api, "margherita")
        # Long enough for the stop to surely come first on a loaded machine.
        marked = await delete_gracefully(api, "margherita", period=5)
    # Stopped within the period, down for the rest of it and then some.
    deadline_at = datetime.fromisoformat(marked["metadata"]["deletionTimestamp"]).timestamp()
    assert time.time() < deadline_at
    await asyncio.sleep(deadline_at - time.time() + 1)
    path = Api.pizzas_path(name="margherita")
    async with in_process_api(data_dir, *flags) as api:
        deadline = time.monotonic() + 10
        while (r := await api.get(path)).status != 404:
            assert r.body["metadata"]["uid"] == marked["metadata"]["uid"]
            assert time.monotonic() < deadline, "never removed after the restart"
            await asyncio.sleep(0.1)


async def test_two_workers_remove_it_once(tmp_path: Path) -> None:
    proc = await asyncio.to_thread(start_server_process, tmp_path / "data", "--workers", "2")
    try:
        async with process_api(proc) as api:
            created = await bake(api, "funghi")
            events = await watch_until_timeout(
                api, created["metadata"]["resourceVersion"], lambda: delete_gracefully(api, "funghi")
            )
            removed_once(events, "funghi")
    finally:
        await asyncio.to_thread(proc.stop)


@pytest.mark.etcd
async def test_two_servers_on_one_etcd_remove_it_once(etcd_server, tmp_path: Path) -> None:
    flags = etcd_flags([etcd_server.client_url], unique_prefix())
    async with in_process_api(tmp_path / "a", *flags) as a, in_process_api(tmp_path / "b", *flags) as b:
        created = await bake(a, "diavola")
        events = await watch_until_timeout(
            b, created["metadata"]["resourceVersion"], lambda: delete_gracefully(a, "diavola")
        )
        removed_once(events, "diavola")


async def test_without_the_watch_cache_the_period_still_ends(tmp_path: Path) -> None:
    async with in_process_api(tmp_path / "data", "--watch-cache=false") as api:
        created = await bake(api, "hawaii")
        events = await watch_until_timeout(
            api, created["metadata"]["resourceVersion"], lambda: delete_gracefully(api, "hawaii")
        )
        removed_once(events, "hawaii")
