"""API benchmark: `python -m tests.bench.bench_api` (from the repository root).

Starts the whole server in-process, once on the embedded storage and once on a fresh private etcd,
and drives it over real HTTPS with aiohttp (keep-alive connections, admin client certificate) at
concurrency 1 and 32: create, get, list (100 items in one page, and paged by 50), update (PUT) and
watch event delivery. Prints one table with ops/s and p50/p99 latencies.

The client and the server share one event loop (and so one core; etcd gets the other of the two
cores this was written on): the numbers compare backends and concurrency levels on one machine, and
include the client's own cost. They are not what a server on a core of its own would do.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from tests.fixtures.etcd import start_etcd
from tests.fixtures.server import RunningServer, running_server

GROUP = "restaurant.programming-kubernetes.info"
V1B1 = f"{GROUP}/v1beta1"
LIST_SIZE = 100
PAGE_SIZE = 50
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=60)


@dataclass(slots=True)
class Row:
    backend: str
    operation: str
    concurrency: int
    ops: int
    seconds: float
    # Per-operation latencies in seconds.
    latencies: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds else float("inf")

    def percentile(self, fraction: float) -> float:
        """Nearest-rank percentile in milliseconds."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
        return ordered[index] * 1000


async def run_bounded(
    count: int, concurrency: int, op: Callable[[int], Awaitable[None]]
) -> tuple[float, list[float]]:
    """Run op(0..count-1) with at most `concurrency` in flight; (seconds taken, latency of each op)."""
    next_index = 0
    latencies: list[float] = []

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            index = next_index
            next_index += 1
            began = time.perf_counter()
            await op(index)
            latencies.append(time.perf_counter() - began)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return time.perf_counter() - start, latencies


def pizza(name: str, quantity: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": V1B1,
        "kind": "Pizza",
        "metadata": {"name": name},
        "spec": {"toppings": [{"name": "tomato", "quantity": quantity}]},
    }


def pizzas_path(namespace: str, name: str = "") -> str:
    base = f"/apis/{GROUP}/v1beta1/namespaces/{namespace}/pizzas"
    return f"{base}/{name}" if name else base


class Client:
    """Just enough of an API client: every call checks its status, so a failure stops the run."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def call(self, method: str, path: str, expect: int, body: Any = None, **params: str) -> Any:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        async with self.session.request(method, path, data=data, headers=headers, params=params or None) as r:
            raw = await r.read()
            if r.status != expect:
                raise RuntimeError(f"{method} {path}: {r.status} {raw[:300]!r}")
            return orjson.loads(raw)


async def bench_server(backend: str, server: RunningServer, ops: int, concurrencies: list[int]) -> list[Row]:
    rows: list[Row] = []
    largest = max(concurrencies)
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=largest + 1)
    async with aiohttp.ClientSession(server.url, connector=connector, timeout=REQUEST_TIMEOUT) as session:
        client = Client(session)
        await client.call(
            "POST",
            f"/apis/{GROUP}/v1beta1/toppings",
            201,
            {"apiVersion": V1B1, "kind": "Topping", "metadata": {"name": "tomato"}, "spec": {"cost": 1}},
        )
        await run_bounded(LIST_SIZE, largest, lambda i: _create(client, "list", f"p{i:04d}"))
        for concurrency in concurrencies:
            rows += await bench_concurrency(backend, server, client, ops, concurrency)
    return rows


async def _create(client: Client, namespace: str, name: str) -> Any:
    return await client.call("POST", pizzas_path(namespace), 201, pizza(name))


async def bench_concurrency(
    backend: str, server: RunningServer, client: Client, ops: int, concurrency: int
) -> list[Row]:
    rows: list[Row] = []
    namespace = f"c{concurrency}"

    def row(operation: str, count: int, measured: tuple[float, list[float]]) -> None:
        rows.append(Row(backend, operation, concurrency, count, *measured))

    created: dict[int, Any] = {}

    async def create(i: int) -> None:
        created[i] = await _create(client, namespace, f"p{i:06d}")

    row("create", ops, await run_bounded(ops, concurrency, create))

    async def get(i: int) -> None:
        await client.call("GET", pizzas_path(namespace, f"p{i:06d}"), 200)

    row("get", ops, await run_bounded(ops, concurrency, get))

    lists = max(ops // 10, 1)

    async def list_one_page(i: int) -> None:
        body = await client.call("GET", pizzas_path("list"), 200)
        assert len(body["items"]) == LIST_SIZE

    row(f"list {LIST_SIZE} (1 page)", lists, await run_bounded(lists, concurrency, list_one_page))

    async def list_paged(i: int) -> None:
        first = await client.call("GET", pizzas_path("list"), 200, limit=str(PAGE_SIZE))
        token = first["metadata"]["continue"]
        second = await client.call(
            "GET", pizzas_path("list"), 200, limit=str(PAGE_SIZE), **{"continue": token}
        )
        assert len(first["items"]) + len(second["items"]) == LIST_SIZE

    row(f"list {LIST_SIZE} (pages of {PAGE_SIZE})", lists, await run_bounded(lists, concurrency, list_paged))

    async def update(i: int) -> None:
        body = {**created[i], "spec": {"toppings": [{"name": "tomato", "quantity": 2}]}}
        await client.call("PUT", pizzas_path(namespace, f"p{i:06d}"), 200, body)

    row("update (PUT)", ops, await run_bounded(ops, concurrency, update))
    rows.append(await watch_delivery(backend, server, client, ops, concurrency))
    return rows


async def watch_delivery(
    backend: str, server: RunningServer, client: Client, ops: int, concurrency: int
) -> Row:
    """Creates `ops` pizzas while one watcher reads them; latency is request sent → event received."""
    namespace = f"w{concurrency}"
    start_rv = (await client.call("GET", pizzas_path(namespace), 200))["metadata"]["resourceVersion"]
    sent: dict[str, float] = {}
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(ssl=server.ssl_context())
    async with (
        aiohttp.ClientSession(server.url, connector=connector) as watch_session,
        watch_session.get(
            pizzas_path(namespace),
            params={"watch": "1", "resourceVersion": start_rv, "timeoutSeconds": "600"},
        ) as stream,
    ):
        if stream.status != 200:
            raise RuntimeError(f"watch: {stream.status}")

        async def consume() -> float:
            while len(latencies) < ops:
                line = await stream.content.readline()
                if not line:
                    raise RuntimeError("watch ended early")
                event = orjson.loads(line)
                latencies.append(time.perf_counter() - sent[event["object"]["metadata"]["name"]])
            return time.perf_counter()

        consumer = asyncio.create_task(consume())

        async def create(i: int) -> None:
            name = f"p{i:06d}"
            sent[name] = time.perf_counter()
            await _create(client, namespace, name)

        began = time.perf_counter()
        await run_bounded(ops, concurrency, create)
        finished = await asyncio.wait_for(consumer, 120)
    return Row(backend, "watch delivery", concurrency, ops, finished - began, latencies)


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'backend':<9} {'operation':<26} {'conc':>4} {'ops':>6} {'seconds':>8} {'ops/s':>8} "
        f"{'p50 ms':>8} {'p99 ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.backend:<9} {r.operation:<26} {r.concurrency:>4} {r.ops:>6} {r.seconds:>8.2f} "
            f"{r.rate:>8.0f} {r.percentile(0.50):>8.1f} {r.percentile(0.99):>8.1f}"
        )


async def main(ops: int, concurrencies: list[int]) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        async with running_server(Path(tmp) / "embedded") as server:
            rows += await bench_server("embedded", server, ops, concurrencies)
        # Blocking process start-up runs in a worker thread, off the event loop.
        etcd = await asyncio.to_thread(start_etcd, Path(tmp) / "etcd")
        try:
            async with running_server(Path(tmp) / "on-etcd", "--etcd-servers", etcd.client_url) as server:
                rows += await bench_server("etcd", server, ops, concurrencies)
        finally:
            await asyncio.to_thread(etcd.kill)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000, help="operations per measurement (default 1000)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print_table(asyncio.run(main(args.ops, args.concurrency)))
