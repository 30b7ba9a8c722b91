"""`--aggregated`'s measurements, each run on our server and then on the Go sample-apiserver.

Why interleaved (ours, Go, ours, Go ...) rather than one server's rows after the other's: the machine
is shared, and a neighbour's burst then lands on both sides of a ratio rather than on one. GET,
CREATE and the unpaged LIST are workloads.request_suite's, unchanged; what it has no step for (paging
on 4 connections, a fan-out at an arbitrary URL, a paced writer, per-worker memory) is here, built
from the same pieces (go_tools.loadgen/watchfan, api_client.paged_pass/verify_watch, median_run).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from tests.bench import bench_connections, go_tools
from tests.bench.aggregated_setup import Deployment, Side
from tests.bench.api_client import PagedPass, api_client, client_ssl, paged_pass
from tests.bench.go_tools import ToolError
from tests.bench.workloads import (
    MB,
    TRIM_WAIT,
    WATCHES,
    Bench,
    Endpoint,
    Measured,
    fanout_once,
    load_figures,
    median_run,
    request_suite,
)

VIAS = ("aggregator", "direct")
REQUEST_WORKLOADS = (
    "get_c1",
    "get_c8",
    "get_c64",
    "create_c8",
    "list_all",
    "list_all_meta_pb",
    "list_all_pb",
)
# sample-apiserver serves its kinds in JSON only (a protobuf Accept is 406), but metadata-only
# protobuf (what the controller manager asks for) on both sides.
OURS_ONLY = frozenset({"list_all_pb", "watch_pb"})
PAGING_CONNECTIONS = 4
WRITE_RATE = 100.0
WRITER_WARMUP = 1.5  # watchfan sleeps 0.5 s before its first write; then a second of steady writes
HOLD_NAMESPACE = "bench-watch-hold"
OPEN_CONCURRENCY = 32


def fanout_namespaces(runs: int, workload: str = "watch") -> list[str]:
    """Each fan-out run's own namespace, per address and per fan-out workload (JSON, protobuf...)."""
    flavour = workload.removeprefix("watch").replace("_", "-")
    return [f"bench-watch{flavour}-{via}-{i}" for via in VIAS for i in range(runs)]


def writer_namespace(reader: str) -> str:
    return f"bench-writes-for-{reader}"


def namespaces(runs: int) -> list[str]:
    """Every namespace the workloads write to: created in the cluster before the servers start."""
    fanouts = [ns for workload in WATCHES for ns in fanout_namespaces(runs, workload)]
    return [*fanouts, writer_namespace("ours"), writer_namespace("go"), HOLD_NAMESPACE]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int((len(ordered) - 1) * q)] if ordered else float("nan")


async def paged_concurrent(bench: Bench, side: Side, via: str) -> Measured:
    """`passes` full paging passes on each of 4 connections at once; req/s = pages / wall time."""
    assert side.paths is not None
    s = bench.sizes
    path = side.paths.collection

    async def passes(client: Any) -> list[PagedPass]:
        return [await paged_pass(client, path, s.page_limit) for _ in range(s.passes)]

    async with api_client(side.url(via), side.tls, connections=PAGING_CONNECTIONS) as client:
        await paged_pass(client, path, s.page_limit)  # warm-up, not counted
        began = time.perf_counter()
        results = await asyncio.gather(*(passes(client) for _ in range(PAGING_CONNECTIONS)))
        seconds = time.perf_counter() - began
    every = [p for per_connection in results for p in per_connection]
    if any(p.items != s.objects for p in every):
        raise RuntimeError(f"passes returned {sorted({p.items for p in every})} items, not {s.objects}")
    latencies = [x for p in every for x in p.page_latencies]
    return {
        "rps": len(latencies) / seconds,
        "p50_ms": _quantile(latencies, 0.5) * 1e3,
        "p99_ms": _quantile(latencies, 0.99) * 1e3,
        "pass_ms": statistics.median(p.seconds for p in every) * 1e3,
        "pages": float(len(latencies)),
    }, {}


async def fanout_run(
    bench: Bench, side: Side, via: str, namespace: str, accept: str = WATCHES["watch"]
) -> Measured:
    """One fan-out (workloads.fanout_once) on `side`'s collection in `namespace`, at either address."""
    endpoint = Endpoint(side.url(via), side.tls)
    body = side.body.replace('"c-', '"w-', 1)
    return await fanout_once(bench, endpoint, side.object_path(namespace), body, accept)


async def request_rows(bench: Bench, deployment: Deployment, via: str) -> None:
    """GET (1, 8, 64 conns), CREATE, LIST, paging and the fan-out, each on ours then on Go."""
    for workload in REQUEST_WORKLOADS:
        for side in deployment.sides:
            if workload in OURS_ONLY and side.name != "ours":
                continue
            assert side.paths is not None
            endpoint = Endpoint(side.url(via), side.tls)
            await request_suite(
                bench, side.name, via, endpoint, side.paths, side.list_bytes, frozenset({workload})
            )
    for side in deployment.sides:
        await bench.measure(
            side.name, via, "list_paged_c4", functools.partial(paged_concurrent, bench, side, via)
        )
    for workload, accept in WATCHES.items():
        runs = [ns for ns in fanout_namespaces(bench.sizes.watch_runs, workload) if f"-{via}-" in ns]
        for side in deployment.sides:
            if workload in OURS_ONLY and side.name != "ours":
                continue

            async def fanout(side: Side = side, runs: list[str] = runs, accept: str = accept) -> Measured:
                return median_run([await fanout_run(bench, side, via, ns, accept) for ns in runs])

            await bench.measure(side.name, via, workload, fanout)


async def _count(side: Side, path: str) -> float:
    """Objects in a collection (nan if the LIST fails: the writer's row then says so, the run goes on)."""
    try:
        async with api_client(side.direct_url, side.tls) as client:
            return float(len((await client.call("GET", path, 200))["items"]))
    except (aiohttp.ClientError, RuntimeError, TimeoutError):
        return float("nan")


# The two kinds of writer a reader's GETs are measured beside (the `config` of their rows).
OTHER_GROUP = "other group writes"  # the reader's own server writes its other group
OTHER_SERVER = "another server writes"  # another server writes to the same etcd


async def reads_beside_writes(bench: Bench, reader: Side, writer: Side, config: str) -> None:
    """The reader's GET (direct, 1 and 8 conns) alone, then while `writer` creates objects at 100/s.

    The writer is watchfan with no watchers: a paced Go client, one POST at a time. It is given more
    objects than the window needs and stopped when the GETs end; the rate it reached is counted
    from the objects in its namespace (a slow server makes it fall behind 100/s, which its row shows).
    """
    assert reader.paths is not None
    s = bench.sizes
    url = reader.direct_url + reader.paths.one_object
    counts = ((1, s.get_c1), (8, s.get_c8))

    async def get(connections: int, requests: int) -> Measured:
        return load_figures(
            await go_tools.loadgen(
                bench.tools,
                reader.tls,
                url,
                requests=requests,
                connections=connections,
                max_seconds=s.get_seconds,
            )
        )

    for connections, requests in counts:
        if not any(
            (r.backend, r.config, r.workload) == (reader.name, "alone", f"get_c{connections}")
            for r in bench.rows
        ):
            await bench.measure(
                reader.name, "alone", f"get_c{connections}", functools.partial(get, connections, requests)
            )
    namespace = writer_namespace(reader.name)
    path = writer.object_path(namespace)
    window = 2 * (s.get_seconds + 30) + 30
    writing = asyncio.create_task(
        go_tools.watchfan(
            bench.tools,
            writer.tls,
            writer.direct_url + path,
            body=writer.body.replace('"c-', '"x-', 1),
            watchers=0,
            events=int(WRITE_RATE * window),
            rate=WRITE_RATE,
            max_seconds=window,
        )
    )
    try:
        await asyncio.sleep(WRITER_WARMUP)
        # The objects written during the GETs, counted at both ends: the writer's real rate.
        first, began = await _count(writer, path), time.monotonic()
        for connections, requests in counts:
            await bench.measure(
                reader.name,
                config,
                f"get_c{connections}",
                functools.partial(get, connections, requests),
            )
        last, ended = await _count(writer, path), time.monotonic()
    finally:
        writing.cancel()
        with contextlib.suppress(asyncio.CancelledError, ToolError):
            await writing

    async def written() -> Measured:
        if math.isnan(last - first):
            raise RuntimeError("could not count the writer's objects")
        return {"rps": (last - first) / (ended - began), "objects": last - first}, {}

    await bench.measure(writer.name, "writer", f"writes_beside_{reader.name}", written)


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return ""


def memory_figures(side: Side) -> dict[str, float]:
    """Total RSS; for ours also the supervisor's and each worker's (spawned interpreters), for Go its one."""
    by_pid = side.rss()
    total = sum(by_pid.values())
    if side.name != "ours":
        return {"mb": total / MB, "worker_mb": total / MB}
    workers = sorted((rss for pid, rss in by_pid.items() if "spawn_main" in _cmdline(pid)), reverse=True)
    figures = {
        "mb": total / MB,
        "supervisor_mb": by_pid.get(side.pid, 0) / MB,
        "workers": float(len(workers)),
    }
    figures["worker_mb"] = (workers[0] if workers else total) / MB
    for i, rss in enumerate(workers):
        figures[f"worker{i}_mb"] = rss / MB
    return figures


async def memory_with_objects(bench: Bench, deployment: Deployment) -> None:
    """Right after the load, settled past our server's heap trim."""
    await asyncio.sleep(TRIM_WAIT)
    for side in deployment.sides:

        async def row(side: Side = side) -> Measured:
            figures = await asyncio.to_thread(memory_figures, side)
            figures["encoded_mb"] = side.encoded / MB
            return figures, {}

        await bench.measure(side.name, "shared etcd", "rss_objects", row)


@contextlib.asynccontextmanager
async def held_watches(side: Side, path: str, count: int) -> AsyncIterator[None]:
    """`count` watch streams on `path` through the aggregator, open (200 and headers read) until exit."""
    bench_connections.raise_fd_limit(count + 512)
    connector = aiohttp.TCPConnector(ssl=client_ssl(side.tls), limit=0)
    async with aiohttp.ClientSession(
        side.aggregator_url, connector=connector, timeout=aiohttp.ClientTimeout()
    ) as s:
        streams: list[aiohttp.ClientResponse] = []
        gate = asyncio.Semaphore(OPEN_CONCURRENCY)

        async def open_one() -> None:
            async with gate:
                response = await asyncio.wait_for(
                    s.get(path, params={"watch": "1", "timeoutSeconds": "900"}), 60
                )
                streams.append(response)
                if response.status != 200:
                    raise RuntimeError(f"watch through the aggregator answered {response.status}")

        try:
            await asyncio.gather(*(open_one() for _ in range(count)))
            yield
        finally:
            for response in streams:
                response.close()


async def memory_with_watches(bench: Bench, deployment: Deployment) -> None:
    """Each server's RSS while `watchers` watches on its own collection are held through the aggregator."""
    for side in deployment.sides:

        async def row(side: Side = side) -> Measured:
            await asyncio.sleep(TRIM_WAIT)
            before = await asyncio.to_thread(memory_figures, side)
            async with held_watches(side, side.object_path(HOLD_NAMESPACE), bench.sizes.watchers):
                await asyncio.sleep(TRIM_WAIT)
                figures = await asyncio.to_thread(memory_figures, side)
            figures["before_mb"] = before["mb"]
            figures["delta_mb"] = figures["mb"] - before["mb"]
            return figures, {}

        await bench.measure(side.name, "aggregator", "rss_watches", row)


async def measure_all(bench: Bench, deployment: Deployment) -> None:
    """Every row, in the order of the table: memory loaded, each address, reads beside writes, watches."""
    await memory_with_objects(bench, deployment)
    for via in VIAS:
        await request_rows(bench, deployment, via)
    await reads_beside_writes(bench, deployment.ours, deployment.ours_wardle, OTHER_GROUP)
    await reads_beside_writes(bench, deployment.ours, deployment.go, OTHER_SERVER)
    await reads_beside_writes(bench, deployment.go, deployment.ours, OTHER_SERVER)
    await memory_with_watches(bench, deployment)


async def measure_scale(bench: Bench, deployment: Deployment) -> None:
    """--scale: what grows with the number of objects and watches (paging, fan-out, memory)."""
    await memory_with_objects(bench, deployment)
    for via in VIAS:
        for side in deployment.sides:
            await bench.measure(
                side.name, via, "list_paged_c4", functools.partial(paged_concurrent, bench, side, via)
            )
        for side in deployment.sides:
            namespace = fanout_namespaces(1)[VIAS.index(via)]
            await bench.measure(
                side.name, via, "watch", functools.partial(fanout_run, bench, side, via, namespace)
            )
    await memory_with_watches(bench, deployment)
