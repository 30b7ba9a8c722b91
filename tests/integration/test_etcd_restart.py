"""Restarts: of the server process (data and watches carry over) and of etcd (fail fast, then heal).

Server processes and etcd processes are started and stopped with blocking calls, always through
asyncio.to_thread so the test's event loop (and the in-process server on it) keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.fixtures.etcd import EtcdFactory
from tests.fixtures.server import RunningServer, ServerProcess, start_server_process
from tests.integration.conftest import Api, Reply
from tests.integration.test_etcd_server import etcd_api, etcd_flags, rv, unique_prefix

pytestmark = pytest.mark.etcd

# A request while etcd is down must be answered within this (the backend gives up after ~3 s).
FAIL_FAST = 8.0
# After etcd is back, the server must be ready again within this, without being told.
RECOVERY = 20.0


@contextlib.asynccontextmanager
async def process_api(proc: ServerProcess) -> AsyncIterator[Api]:
    """An admin client of a server subprocess, trusting the CA it generated into <data-dir>/certs."""
    server = RunningServer(proc.url, proc.data_dir, proc.kubeconfig, proc.data_dir / "certs")
    async with server.session() as session:
        yield Api(server, session)


def event_summary(events: list[Any]) -> list[tuple[str, str, int]]:
    return [(e["type"], e["object"]["metadata"]["name"], rv(e["object"])) for e in events]


# --- 3. the server process restarts -------------------------------------------------------------


@pytest.mark.parametrize("backend", ["etcd", "embedded"])
async def test_data_and_watch_position_survive_a_server_restart(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    flags: list[str] = []
    if backend == "etcd":
        etcd = request.getfixturevalue("etcd_server")
        flags = etcd_flags([etcd.client_url], unique_prefix())
    data_dir = tmp_path / "data"

    first = await asyncio.to_thread(start_server_process, data_dir, *flags)
    try:
        async with process_api(first) as api:
            await api.create_toppings("tomato")
            start = (await api.get(api.pizzas_path())).body["metadata"]["resourceVersion"]
            params = {"watch": "1", "resourceVersion": start}
            async with api.session.get(api.pizzas_path(), params=params) as stream:
                assert stream.status == 200
                p0 = await api.create_pizza("p0", [{"name": "tomato"}])
                p1 = await api.create_pizza("p1", [{"name": "tomato", "quantity": 2}])
                seen = await api.read_events(stream, 2)
                assert event_summary(seen) == [("ADDED", "p0", rv(p0)), ("ADDED", "p1", rv(p1))]
                last_seen = rv(seen[-1]["object"])
                # Written before the restart, but this client never read its event.
                p2 = await api.create_pizza("p2", [{"name": "tomato", "quantity": 3}])
                await asyncio.to_thread(first.stop)
    finally:
        await asyncio.to_thread(first.stop)

    second = await asyncio.to_thread(start_server_process, data_dir, *flags)
    try:
        async with process_api(second) as api:
            # Everything acknowledged before is there, unchanged (uid, resourceVersion, spec).
            for before in (p0, p1, p2):
                r = await api.get(api.pizzas_path(name=before["metadata"]["name"]))
                assert (r.status, r.body) == (200, before)

            r = await api.patch(
                api.pizzas_path(name="p1"),
                {"metadata": {"labels": {"hot": "yes"}}},
                "application/merge-patch+json",
            )
            assert r.status == 200, r
            p1_patched = r.body
            r = await api.delete(api.pizzas_path(name="p0"))
            assert r.status == 200, r
            p3 = await api.create_pizza("p3", [{"name": "tomato"}])

            # The client resumes from the last resourceVersion it saw: exactly the events in between,
            # none of those it already had, in order; the stream then ends by its own timeout.
            resumed = await api.get(
                api.pizzas_path(),
                params={"watch": "1", "resourceVersion": str(last_seen), "timeoutSeconds": "2"},
            )
            assert resumed.status == 200, resumed
            events = _lines(resumed)
            summary = event_summary(events)
            assert [(t, n) for t, n, _ in summary] == [
                ("ADDED", "p2"),
                ("MODIFIED", "p1"),
                ("DELETED", "p0"),
                ("ADDED", "p3"),
            ]
            revisions = [r for _, _, r in summary]
            assert revisions[:2] == [rv(p2), rv(p1_patched)] and revisions[3] == rv(p3)
            assert revisions == sorted(set(revisions)), "events out of order or repeated"
            assert events[0]["object"] == p2
            assert events[1]["object"]["metadata"]["labels"] == {"hot": "yes"}
            assert events[2]["object"]["metadata"]["uid"] == p0["metadata"]["uid"]
    finally:
        await asyncio.to_thread(second.stop)


async def test_stopping_the_server_ends_open_watches_promptly(etcd_server, tmp_path: Path) -> None:
    proc = await asyncio.to_thread(
        start_server_process, tmp_path / "data", *etcd_flags([etcd_server.client_url], unique_prefix())
    )
    try:
        async with process_api(proc) as api:
            async with api.session.get(api.pizzas_path(), params={"watch": "1"}) as stream:
                assert stream.status == 200
                began = time.monotonic()
                await asyncio.to_thread(proc.stop)
                elapsed = time.monotonic() - began
                assert elapsed < 3.0, f"stopping with an open watch took {elapsed:.1f}s"
                # The stream ended properly (last chunk sent), with no ERROR event.
                assert await api.read_events(stream, 1) == []
            assert proc.process.returncode == 0, "the server did not exit cleanly on SIGTERM"
    finally:
        await asyncio.to_thread(proc.stop)


def _lines(reply: Reply) -> list[Any]:
    return [orjson.loads(line) for line in reply.raw.splitlines() if line.strip()]


# --- 4. etcd goes away and comes back -----------------------------------------------------------


async def _timed(call: Any) -> tuple[float, Reply]:
    start = time.monotonic()
    reply = await call
    return time.monotonic() - start, reply


def _assert_unavailable(reply: Reply, what: str) -> None:
    assert reply.status == 503, f"{what}: {reply!r}"
    body = reply.body
    assert (body["kind"], body["status"], body["reason"], body["code"]) == (
        "Status",
        "Failure",
        "ServiceUnavailable",
        503,
    ), what
    retry_after = reply.headers.get("Retry-After", "")
    assert retry_after.isdigit() and int(retry_after) >= 1, f"{what}: Retry-After {retry_after!r}"
    assert body["details"]["retryAfterSeconds"] == int(retry_after), what


async def test_requests_fail_fast_while_etcd_is_down_and_recover_by_themselves(
    etcd_factory: EtcdFactory, tmp_path: Path
) -> None:
    member = await asyncio.to_thread(etcd_factory.single)
    async with etcd_api(tmp_path / "data", [member.client_url], unique_prefix()) as api:
        await api.create_toppings("tomato", "basil")
        acknowledged = {
            p["metadata"]["name"]: p
            for p in [await api.create_pizza(f"p{i}", [{"name": "tomato"}]) for i in range(8)]
        }
        since = max(rv(p) for p in acknowledged.values())
        # A watch open across the whole outage must carry on by itself afterwards.
        async with api.session.get(
            api.pizzas_path(), params={"watch": "1", "resourceVersion": str(since), "timeoutSeconds": "120"}
        ) as stream:
            assert stream.status == 200

            await member.akill_after_commit()
            calls = {
                "get": api.get(api.pizzas_path(name="p0")),
                "list": api.get(api.pizzas_path()),
                "create": api.post(api.pizzas_path(), api.pizza("during-outage", [{"name": "tomato"}])),
                "update": api.put(
                    api.pizzas_path(name="p1"),
                    {
                        **acknowledged["p1"],
                        "metadata": {**acknowledged["p1"]["metadata"], "labels": {"x": "y"}},
                    },
                ),
                "patch": api.patch(
                    api.toppings_path(name="basil"), {"spec": {"cost": 5}}, "application/merge-patch+json"
                ),
                "delete": api.delete(api.pizzas_path(name="p2")),
            }
            timed = await asyncio.gather(*(_timed(c) for c in calls.values()))
            for what, (elapsed, reply) in zip(calls, timed, strict=True):
                _assert_unavailable(reply, what)
                assert elapsed < FAIL_FAST, f"{what} took {elapsed:.1f}s while etcd was down"

            elapsed, ready = await _timed(api.get("/readyz", params={"verbose": "1"}))
            assert ready.status == 500 and elapsed < FAIL_FAST, ready
            assert re.search(r"^\[-\](storage|etcd)\S* failed: reason withheld$", ready.text, re.M), (
                ready.text
            )
            assert ready.text.endswith("readyz check failed\n"), ready.text
            live = await api.get("/livez")
            assert (live.status, live.text) == (200, "ok"), (
                "etcd being down is no reason to restart the server"
            )

            await member.astart()
            async with asyncio.timeout(RECOVERY):
                while (await api.get("/readyz")).status != 200:
                    await asyncio.sleep(0.2)

            # Every object acknowledged before the outage is still there, unchanged.
            for name, before in acknowledged.items():
                r = await api.get(api.pizzas_path(name=name))
                assert (r.status, r.body) == (200, before), name
            listed = (await api.get(api.pizzas_path())).body
            assert {i["metadata"]["name"]: i for i in listed["items"]} == acknowledged
            # The refused writes were not applied (a refused connection proves etcd never saw them).
            assert (await api.get(api.pizzas_path(name="during-outage"))).status == 404
            assert (await api.get(api.toppings_path(name="basil"))).body["spec"] == {"cost": 1}

            after = await api.create_pizza("after", [{"name": "basil"}])
            assert rv(after) > since
            (event,) = await api.read_events(stream, 1, timeout=RECOVERY)
            assert (event["type"], event["object"]["metadata"]["name"], rv(event["object"])) == (
                "ADDED",
                "after",
                rv(after),
            )
