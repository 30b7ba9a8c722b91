"""The data path under faults, kept as good as the abuse run found it: no acknowledged write is lost.

- etcd killed with SIGKILL while writers run, then restarted: every create answered 201 is there;
- the server process killed with SIGKILL on the embedded store, then restarted: the same;
- 50 clients incrementing one counter with optimistic concurrency: exactly 50 increments;
- 20 watchers while 2,000 objects are written: each sees every one, in revision order, no gaps.

Bounded counts, loopback only, real etcd and real server processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import aiohttp
import orjson

from tests.fixtures.etcd import EtcdFactory
from tests.fixtures.objects import topping
from tests.fixtures.server import RunningServer, running_server, start_server_process

GROUP = "restaurant.programming-kubernetes.info"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"
BOUND = 120.0


async def _writers(
    api: aiohttp.ClientSession, prefix: str, writers: int, each: int, acknowledged: set[str]
) -> set[str]:
    """Creates from `writers` clients at once; adds the names the server acknowledged with 201."""

    async def write(w: int) -> None:
        for i in range(each):
            name = f"{prefix}-{w}-{i}"
            try:
                r = await api.post(TOPPINGS, json=topping(name))
                if r.status == 201:
                    acknowledged.add(name)
                await r.release()
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)  # the server went away: keep trying the next ones

    await asyncio.gather(*(write(w) for w in range(writers)))
    return acknowledged


async def _names(api: aiohttp.ClientSession) -> set[str]:
    r = await api.get(TOPPINGS)
    assert r.status == 200, await r.text()
    return {item["metadata"]["name"] for item in (await r.json())["items"]}


async def test_no_acknowledged_write_is_lost_when_etcd_is_killed(
    etcd_factory: EtcdFactory, tmp_path: Path
) -> None:
    etcd = await asyncio.to_thread(etcd_factory.single)
    flags = (f"--etcd-servers={etcd.client_url}", "--request-timeout=10s")
    async with running_server(tmp_path / "data", *flags) as server, server.session() as api:
        async with asyncio.timeout(BOUND):
            acknowledged: set[str] = set()
            writing = asyncio.create_task(_writers(api, "w", 8, 60, acknowledged))
            while len(acknowledged) < 40:
                await asyncio.sleep(0.01)
            await etcd.akill()
            await asyncio.sleep(1.0)
            before_restart = len(acknowledged)
            await etcd.astart()
            await writing
            assert len(acknowledged) > before_restart, "writers went on after etcd came back"
            while True:  # until the server's reads work again
                try:
                    stored = await _names(api)
                    break
                except AssertionError:
                    await asyncio.sleep(0.2)
            assert acknowledged <= stored


async def test_no_acknowledged_write_is_lost_when_the_server_is_killed(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process = await asyncio.to_thread(start_server_process, data_dir, "--workers=1")
    server = RunningServer(process.url, data_dir, process.kubeconfig, data_dir / "certs")
    try:
        async with asyncio.timeout(BOUND):
            async with server.session() as api:
                acknowledged: set[str] = set()
                writing = asyncio.create_task(_writers(api, "s", 8, 40, acknowledged))
                while len(await _names(api)) < 80:
                    await asyncio.sleep(0.05)
                os.kill(process.process.pid, signal.SIGKILL)
                await writing
                await asyncio.to_thread(process.process.wait)
    finally:
        process.stop()
    process = await asyncio.to_thread(start_server_process, data_dir, "--workers=1")
    server = RunningServer(process.url, data_dir, process.kubeconfig, data_dir / "certs")
    try:
        async with asyncio.timeout(BOUND), server.session() as api:
            assert len(acknowledged) >= 80
            assert acknowledged <= await _names(api)
    finally:
        process.stop()


async def test_conflicting_writers_increment_exactly_once_each(api_server: RunningServer) -> None:
    async with api_server.session() as api, asyncio.timeout(BOUND):
        # Starts at 100: the cost rule lets a cost at most double per update, so 0 → 1 would be refused.
        r = await api.post(TOPPINGS, json=topping("counter", 100))
        assert r.status == 201

        async def increment() -> int:
            conflicts = 0
            while True:
                current = await (await api.get(f"{TOPPINGS}/counter")).json()
                current["spec"]["cost"] += 1
                r = await api.put(f"{TOPPINGS}/counter", json=current)
                if r.status == 200:
                    return conflicts
                assert (r.status, (await r.json())["reason"]) == (409, "Conflict")
                conflicts += 1

        conflicts = await asyncio.gather(*(increment() for _ in range(50)))
        final = await (await api.get(f"{TOPPINGS}/counter")).json()
        assert final["spec"]["cost"] == 150
        assert sum(conflicts) > 0, "the writers really did conflict"


async def test_twenty_watchers_see_two_thousand_writes_in_order(embedded_server: RunningServer) -> None:
    writes, watchers = 2000, 20
    async with embedded_server.session() as api, asyncio.timeout(BOUND * 2):
        listed = await (await api.get(TOPPINGS)).json()
        rv = listed["metadata"]["resourceVersion"]
        streams = [
            await api.get(TOPPINGS, params={"watch": "1", "resourceVersion": rv}) for _ in range(watchers)
        ]

        async def watch(response: aiohttp.ClientResponse) -> list[tuple[str, int]]:
            seen: list[tuple[str, int]] = []
            while len(seen) < writes:
                line = await response.content.readline()
                assert line, "the stream ended early"
                event = orjson.loads(line)
                if event["type"] == "ADDED":
                    meta = event["object"]["metadata"]
                    seen.append((meta["name"], int(meta["resourceVersion"])))
            response.close()
            return seen

        watching = [asyncio.create_task(watch(s)) for s in streams]
        names = [f"t{i:04d}" for i in range(writes)]
        semaphore = asyncio.Semaphore(16)

        async def create(name: str) -> None:
            async with semaphore:
                r = await api.post(TOPPINGS, json=topping(name))
                assert r.status == 201, await r.text()

        await asyncio.gather(*(create(n) for n in names))
        for seen in await asyncio.gather(*watching):
            revisions = [revision for _, revision in seen]
            assert revisions == sorted(revisions) and len(set(revisions)) == writes
            assert sorted(name for name, _ in seen) == names
