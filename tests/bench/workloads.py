"""The measurements, in order, for one backend: every server configuration, then the floor.

Why this order: the first configuration ("default") starts empty, measures idle memory, loads the
objects (the load itself is untimed set-up: CREATE is measured separately, in its own namespace,
so the listed collection stays exactly `objects` long) and captures the bytes the floor will serve.
Further configurations (`--workers 1` when the server has that flag, `--watch-cache=false`) restart
the server on the same data instead of loading it again. The floor runs after the backend's server
has stopped, so nothing else competes for the two cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from tests.bench import bench_connections, go_tools
from tests.bench.api_client import api_client, paged_pass, pizza_body, pizzas_path, verify_watch
from tests.bench.cpu_probe import CpuProbe
from tests.bench.floor import RouteWriter, route_key
from tests.bench.go_tools import GoTools, LoadResult, TLSFiles, ToolError
from tests.bench.report import Row
from tests.bench.server_process import (
    ServerCommand,
    ServerProcess,
    running_server,
    server_flags,
    spawn,
    stop,
    wait_for_url,
)

MB = 1_000_000
MERGE_PATCH = "application/merge-patch+json"
UPDATE_BODY = '{"metadata":{"labels":{"bench":"u{{n}}"}}}'
CREATE_NAMESPACE = "bench-create"
VERIFIER_GRACE = 5.0
FLOOR_PASSES = 2
# Past the server's heap trim, which runs 2 s after connections pause (server.serving.heap_trim).
TRIM_WAIT = 3.0


@dataclass(frozen=True, slots=True)
class Sizes:
    """Counts and time bounds; every tool run is bounded by both a count and a duration."""

    objects: int
    get_c1: int
    get_c8: int
    get_seconds: float
    lists: int
    list_seconds: float
    passes: int
    creates: int
    updates: int
    write_seconds: float
    watchers: int
    events: int
    rate: float
    watch_seconds: float
    verifiers: int
    # Fan-out runs per configuration; the row is the run with the median p99 (single runs spread by
    # half their value on this 2-core machine). Losses and duplicates are summed over every run.
    watch_runs: int
    # Objects per page; 0: twenty pages per pass.
    page_size: int = 0

    @property
    def page_limit(self) -> int:
        """`page_size`, else twenty pages per pass: limit=500 for 10,000 objects."""
        return self.page_size or max(1, self.objects // 20)

    def as_dict(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__}, "page_limit": self.page_limit}


# Counts are generous and durations bound them: a slow server stops at the time bound, a faster one
# (as colleagues speed it up) gets more samples in the same time, so the run stays under ~10 minutes.
FULL = Sizes(
    objects=10_000,
    get_c1=20_000,
    get_c8=40_000,
    get_seconds=8,
    lists=200,
    list_seconds=25,
    passes=3,
    creates=8_000,
    updates=8_000,
    write_seconds=12,
    watchers=1_000,
    events=100,
    rate=50,
    watch_seconds=120,
    verifiers=5,
    watch_runs=3,
)
QUICK = Sizes(
    objects=1_000,
    get_c1=1_000,
    get_c8=3_000,
    get_seconds=5,
    lists=20,
    list_seconds=10,
    passes=2,
    creates=500,
    updates=500,
    write_seconds=8,
    watchers=100,
    events=20,
    rate=50,
    watch_seconds=30,
    verifiers=2,
    watch_runs=1,
)

READS = frozenset({"get_c1", "get_c8", "list_all", "list_paged"})
# Kube's protobuf beside JSON: the kind's own messages, and what client-go's metadata client (the
# controller manager's garbage collector, namespace and quota controllers) asks for.
JSON = "application/json"
METADATA_LIST = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
METADATA_WATCH = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)
PROTOBUF_READS = frozenset({"list_all_pb", "list_all_meta_pb"})
# Fan-out workloads and what their watchers ask for.
WATCHES = {"watch": JSON, "watch_pb": go_tools.PROTOBUF, "watch_meta_pb": METADATA_WATCH}
EVERYTHING = READS | PROTOBUF_READS | {"create_c8", "update_c8", "delete_collection", *WATCHES}


@dataclass(slots=True)
class Paths:
    """What the workloads request, found once the objects are loaded (the same on the floor)."""

    one_object: str
    collection: str = pizzas_path("default")
    create_collection: str = pizzas_path(CREATE_NAMESPACE)
    # What CREATE posts (`--aggregated` posts flunders to the Go sample-apiserver).
    create_body: str = pizza_body("c")


@dataclass(slots=True)
class Endpoint:
    """A server to drive (the API server or the floor): its URL and the client credentials."""

    url: str
    tls: TLSFiles


@dataclass(slots=True)
class Bench:
    """One run's shared state: tools, sizes, where files go, the rows so far, the floor's inputs."""

    tools: GoTools
    sizes: Sizes
    workdir: Path
    skip_floor: bool
    command: ServerCommand
    rows: list[Row] = field(default_factory=list)
    floor_routes: Path | None = None
    floor_cert_dir: Path | None = None
    floor_paths: Paths | None = None
    floor_list_bytes: int = 0
    floor_done: bool = False
    # (backend, config) -> (RSS before the fan-out, its peak), for the open-watches memory row.
    fanout_peaks: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    # Where every process's CPU is read (--aggregated): rows with a request count then also carry
    # detail["cpu_us"], µs of CPU per request by role.
    cpu_probe: CpuProbe | None = None

    def progress(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {text}", file=sys.stderr, flush=True)

    async def measure(
        self,
        backend: str,
        config: str,
        workload: str,
        run: Callable[[], Awaitable[tuple[dict[str, float], dict[str, Any]]]],
    ) -> Row:
        """Run one measurement; a failure becomes the row's error instead of ending the whole run."""
        self.progress(f"{backend} / {config}: {workload}")
        row = Row(backend, config, workload)
        probe = self.cpu_probe
        try:
            before = probe.sample(backend) if probe is not None else {}
            row.figures, row.detail = await run()
            if probe is not None and "requests" in row.figures:
                row.detail["cpu_us"] = probe.per_request(
                    before, probe.sample(backend), row.figures["requests"]
                )
        except (ToolError, RuntimeError, aiohttp.ClientError, TimeoutError, KeyError, ValueError) as err:
            row.error = f"{type(err).__name__}: {err}"
            self.progress(f"  failed: {row.error[:400]}")
        self.rows.append(row)
        return row


def load_figures(result: LoadResult) -> tuple[dict[str, float], dict[str, Any]]:
    figures = {
        "rps": result.rps,
        "p50_ms": result.p50 * 1e3,
        "p90_ms": result.p90 * 1e3,
        "p99_ms": result.p99 * 1e3,
        "max_ms": result.max * 1e3,
        "requests": float(result.requests),
    }
    return figures, {"loadgen": result.line}


def _quantile(values: list[float], q: float) -> float:
    """Nearest-rank below, as the Go tools compute theirs."""
    ordered = sorted(values)
    return ordered[int((len(ordered) - 1) * q)] if ordered else float("nan")


async def request_suite(
    bench: Bench,
    backend: str,
    config: str,
    endpoint: Endpoint,
    paths: Paths,
    list_bytes: int,
    which: frozenset[str],
) -> None:
    """The request/response workloads, identical against the server and the floor."""
    s = bench.sizes
    url = endpoint.url

    async def get(connections: int, requests: int) -> tuple[dict[str, float], dict[str, Any]]:
        return load_figures(
            await go_tools.loadgen(
                bench.tools,
                endpoint.tls,
                url + paths.one_object,
                requests=requests,
                connections=connections,
                max_seconds=s.get_seconds,
            )
        )

    async def list_all(accept: str = JSON) -> tuple[dict[str, float], dict[str, Any]]:
        size = list_bytes
        if accept != JSON:
            async with api_client(url, endpoint.tls, connections=1) as client:
                answer = await client.raw("GET", paths.collection, 200, accept=accept)
            if not answer.content_type.startswith(go_tools.PROTOBUF):
                raise RuntimeError(f"asked for {accept}, answered {answer.content_type}")
            size = len(answer.body)
        figures, detail = load_figures(
            await go_tools.loadgen(
                bench.tools,
                endpoint.tls,
                url + paths.collection,
                requests=s.lists,
                connections=1,
                max_seconds=s.list_seconds,
                warmup=2,
                accept=accept,
            )
        )
        figures["mb"] = size / MB
        figures["mb_s"] = size / MB / (figures["p50_ms"] / 1e3)
        return figures, detail

    async def list_paged() -> tuple[dict[str, float], dict[str, Any]]:
        async with api_client(url, endpoint.tls, connections=1) as client:
            await paged_pass(client, paths.collection, s.page_limit)  # warm-up, not counted
            passes = [await paged_pass(client, paths.collection, s.page_limit) for _ in range(s.passes)]
        latencies = [x for p in passes for x in p.page_latencies]
        if any(p.items != passes[0].items for p in passes):
            raise RuntimeError(f"passes returned different counts: {[p.items for p in passes]}")
        figures = {
            "rps": len(latencies) / sum(p.seconds for p in passes),
            "p50_ms": _quantile(latencies, 0.5) * 1e3,
            "p99_ms": _quantile(latencies, 0.99) * 1e3,
            "pass_ms": statistics.median(p.seconds for p in passes) * 1e3,
            "pages": float(len(passes[0].page_latencies)),
            "items": float(passes[0].items),
        }
        return figures, {"passes_ms": [p.seconds * 1e3 for p in passes]}

    async def create() -> tuple[dict[str, float], dict[str, Any]]:
        return load_figures(
            await go_tools.loadgen(
                bench.tools,
                endpoint.tls,
                url + paths.create_collection,
                method="POST",
                body=paths.create_body,
                requests=s.creates,
                connections=8,
                max_seconds=s.write_seconds,
                expect=201,
            )
        )

    async def update() -> tuple[dict[str, float], dict[str, Any]]:
        return load_figures(
            await go_tools.loadgen(
                bench.tools,
                endpoint.tls,
                url + paths.one_object,
                method="PATCH",
                body=UPDATE_BODY,
                content_type=MERGE_PATCH,
                requests=s.updates,
                connections=8,
                max_seconds=s.write_seconds,
            )
        )

    async def delete_collection() -> tuple[dict[str, float], dict[str, Any]]:
        """One deletecollection of what create_c8 wrote: its count is bounded by time, so the figure
        is items deleted per second. It also leaves the namespace empty for the next configuration."""
        async with api_client(url, endpoint.tls, connections=1) as client:
            began = time.perf_counter()
            answer = await client.call("DELETE", paths.create_collection, 200)
            seconds = time.perf_counter() - began
            left = await client.call("GET", paths.create_collection, 200, limit="1")
        items = len(answer["items"])
        if not items or left["items"]:
            raise RuntimeError(f"deleted {items} items, {len(left['items'])} left: did create_c8 run?")
        return {"rps": items / seconds, "seconds": seconds, "items": float(items)}, {}

    steps: dict[str, Callable[[], Awaitable[tuple[dict[str, float], dict[str, Any]]]]] = {
        "get_c1": lambda: get(1, s.get_c1),
        "get_c8": lambda: get(8, s.get_c8),
        "get_c64": lambda: get(64, s.get_c8),  # only --aggregated asks for it
        "list_all": list_all,
        "list_all_pb": lambda: list_all(go_tools.PROTOBUF),
        "list_all_meta_pb": lambda: list_all(METADATA_LIST),
        "list_paged": list_paged,
        "create_c8": create,
        "update_c8": update,
        "delete_collection": delete_collection,
    }
    for workload, step in steps.items():
        if workload in which:
            await bench.measure(backend, config, workload, step)


async def _settled_rss(server: ServerProcess, seconds: float = 1.0) -> int:
    """RSS after a short pause, so a just-finished burst's transient buffers are not counted."""
    await asyncio.sleep(seconds)
    return await asyncio.to_thread(server.rss)


async def load_objects(bench: Bench, server: ServerProcess) -> None:
    """Toppings first (PizzaToppings admission), then `objects` pizzas by loadgen POST at 8 connections."""
    async with api_client(server.url, server.client_tls) as client:
        await client.ensure_toppings()
    await load_collection(
        bench, Endpoint(server.url, server.client_tls), pizzas_path("default"), pizza_body("p")
    )


async def load_collection(bench: Bench, endpoint: Endpoint, path: str, body: str) -> None:
    """`objects` objects POSTed by loadgen at 8 connections: set-up, not a measurement."""
    result = await go_tools.loadgen(
        bench.tools,
        endpoint.tls,
        endpoint.url + path,
        method="POST",
        body=body,
        requests=bench.sizes.objects,
        connections=8,
        max_seconds=600,
        warmup=0,
        expect=201,
    )
    bench.progress(f"  loaded: {result.line}")


async def capture(bench: Bench, server: ServerProcess, routes: RouteWriter | None) -> tuple[Paths, int, int]:
    """Find the object to GET, check the count, size the LIST; optionally keep every body for the floor.

    Returns (paths, LIST response bytes, encoded size of the objects: the sum of each item's JSON).
    """
    async with api_client(server.url, server.client_tls) as client:
        listed = await client.raw("GET", pizzas_path("default"), 200)
        items = orjson.loads(listed.body)["items"]
        if len(items) != bench.sizes.objects:
            raise RuntimeError(f"expected {bench.sizes.objects} pizzas in default, found {len(items)}")
        encoded = sum(len(orjson.dumps(item)) for item in items)
        paths = Paths(one_object=pizzas_path("default", items[0]["metadata"]["name"]))
        if routes is not None:
            routes.add(route_key("GET", paths.collection, {}), listed)
            got = await client.raw("GET", paths.one_object, 200)
            routes.add(route_key("GET", paths.one_object, {}), got)
            created = await client.raw(
                "POST",
                paths.create_collection,
                201,
                orjson.loads(pizza_body("captured").replace("{{n}}", "0")),
            )
            routes.add(route_key("POST", paths.create_collection, {}), created)
            patched = await client.raw(
                "PATCH",
                paths.one_object,
                200,
                {"metadata": {"labels": {"bench": "captured"}}},
                None,
                MERGE_PATCH,
            )
            routes.add(route_key("PATCH", paths.one_object, {}), patched)
            paged = await paged_pass(client, paths.collection, bench.sizes.page_limit, keep=True)
            for key, page in paged.pages:
                routes.add(key, page)
    return paths, len(listed.body), encoded


async def watch_fanout(
    bench: Bench, backend: str, config: str, server: ServerProcess, namespace: str
) -> None:
    """watchfan's watchers plus a few verifier streams on an empty namespace; RSS sampled throughout."""
    before = await _settled_rss(server)
    peak = before
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, await asyncio.to_thread(server.rss))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), 0.1)

    sampler = asyncio.create_task(sample())
    try:
        endpoint = Endpoint(server.url, server.client_tls)
        await bench.measure(backend, config, "watch", functools.partial(fanouts, bench, endpoint, namespace))
    finally:
        done.set()
        await sampler

    bench.fanout_peaks[(backend, config)] = (before, peak)


Measured = tuple[dict[str, float], dict[str, Any]]


async def fanouts(bench: Bench, endpoint: Endpoint, namespace: str, accept: str = JSON) -> Measured:
    """`watch_runs` fan-outs of pizzas, the median standing for them; each run watches a namespace of
    its own, so it sees only the objects its writer creates."""
    runs = bench.sizes.watch_runs
    namespaces = [f"{namespace}-{i}" for i in range(runs)] if runs > 1 else [namespace]
    return median_run(
        [await fanout_once(bench, endpoint, pizzas_path(ns), pizza_body("w"), accept) for ns in namespaces]
    )


async def fanout_once(bench: Bench, endpoint: Endpoint, path: str, body: str, accept: str = JSON) -> Measured:
    """One watchfan run on `path` (its watchers, its paced writer posting `body`) plus the Python
    verifier streams that see what watchfan cannot (duplicates, order)."""
    s = bench.sizes
    ready, stop = asyncio.Event(), asyncio.Event()
    verifier = asyncio.create_task(
        verify_watch(endpoint.url, endpoint.tls, path, s.verifiers, s.events, ready, stop)
    )
    try:
        await asyncio.wait_for(ready.wait(), 30)
        result = await go_tools.watchfan(
            bench.tools,
            endpoint.tls,
            endpoint.url + path,
            body=body,
            watchers=s.watchers,
            events=s.events,
            rate=s.rate,
            max_seconds=s.watch_seconds,
            accept=accept,
        )
        # watchfan waited for its own deliveries; the verifier gets a little longer for its last.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(verifier), VERIFIER_GRACE)
        stop.set()
        check = await verifier
    finally:
        stop.set()
        verifier.cancel()
    if result.write_errors:
        raise ToolError(f"watchfan could not create {result.write_errors} objects: {result.line}")
    figures = {
        "p50_ms": result.p50 * 1e3,
        "p90_ms": result.p90 * 1e3,
        "p99_ms": result.p99 * 1e3,
        "max_ms": result.max * 1e3,
        "sent": float(result.events),
        "deliveries": float(result.deliveries),
        "lost": float(result.missing + check.missing(result.events)),
        "duplicated": float(check.duplicates + check.out_of_order),
        "watch_failed": float(result.watch_failed),
        "write_errors": float(result.write_errors),
    }
    detail = {
        "watchfan": result.line,
        "verifier_streams": check.streams,
        "verifier_missing": check.missing(result.events),
        "verifier_duplicates": check.duplicates,
        "verifier_out_of_order": check.out_of_order,
        "verifier_errors": check.errors[:5],
    }
    return figures, detail


def median_run(runs: list[Measured]) -> Measured:
    """The run with the median p99 stands for them all; what went wrong in any run counts."""
    ordered = sorted(runs, key=lambda run: run[0]["p99_ms"])
    figures, detail = ordered[(len(ordered) - 1) // 2]
    figures = dict(figures)
    for key in ("lost", "duplicated", "watch_failed", "write_errors"):
        figures[key] = sum(run[0][key] for run in runs)
    figures["sent"] = min(run[0]["sent"] for run in runs)
    figures["runs"] = float(len(runs))
    figures["p99_min_ms"] = ordered[0][0]["p99_ms"]
    figures["p99_max_ms"] = ordered[-1][0]["p99_ms"]
    return figures, {**detail, "runs": [run[1] for run in runs]}


async def watch_memory(
    bench: Bench, backend: str, config: str, server: ServerProcess, namespace: str
) -> None:
    """RSS with `watchers` watches held, on a server of its own (`server` is fresh): on the one that
    ran the fan-out, the memory its closed connections left in the heap is reused by these watches
    and hides their cost (measured, workers=1: +24 MB there, +34 MB on a fresh server with the same
    data, +46 MB on a fresh empty one)."""
    before, peak = bench.fanout_peaks.get((backend, config), (0, 0))

    async def memory() -> tuple[dict[str, float], dict[str, Any]]:
        idle, holding = await asyncio.to_thread(
            _open_watches_rss, server, pizzas_path(namespace), bench.sizes.watchers
        )
        return {
            "mb": holding / MB,
            "delta_mb": (holding - idle) / MB,
            "before_mb": idle / MB,
            "peak_mb": peak / MB,
            "peak_delta_mb": (peak - before) / MB,
        }, {}

    await bench.measure(backend, config, "rss_watches", memory)


def _open_watches_rss(server: ServerProcess, path: str, count: int) -> tuple[int, int]:
    """(RSS before, RSS while `count` watches are open), settled, in bytes (blocking).

    What 1,000 open watches cost to hold, as opposed to the fan-out's peak, which also counts the
    transient buffers of 1,000 handshakes in flight. Opened one at a time by plain TLS sockets;
    both readings wait out the server's heap trim, which runs once connections pause.
    """
    host, _, port = server.url.removeprefix("https://").rpartition(":")
    assert server.proc is not None
    target = bench_connections.ServerProcess(server.proc, host, int(port), server.data_dir)
    context = target.client_context()
    bench_connections.raise_fd_limit(count + 256)
    time.sleep(TRIM_WAIT)
    idle = bench_connections.settled_rss(target)
    watching: list[Any] = []
    try:
        for _ in range(count):
            sock = bench_connections.open_tls(target, context)
            watching.append(sock)
            head = bench_connections.request(sock, path + "?watch=1", host=host)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"watch refused: {head[:200]!r}")
        time.sleep(TRIM_WAIT)
        return idle * 1024, bench_connections.settled_rss(target) * 1024
    finally:
        bench_connections.close_all(watching)


async def run_config(
    bench: Bench, backend: str, config: str, server: ServerProcess, *, first: bool, which: frozenset[str]
) -> None:
    """One server configuration: memory and loading on the first, then the workloads in `which`."""
    idle = 0
    if first:
        idle = await _settled_rss(server)

        async def idle_row() -> tuple[dict[str, float], dict[str, Any]]:
            return {"mb": idle / MB}, {}

        await bench.measure(backend, config, "rss_idle", idle_row)
        await load_objects(bench, server)
    # Before the capturing LIST of everything, whose 7 MB of buffers would count as the objects'.
    loaded = await _settled_rss(server) if first else 0
    keep_for_floor = first and not bench.skip_floor and bench.floor_routes is None
    routes = RouteWriter(bench.workdir / "floor-routes") if keep_for_floor else None
    paths, list_bytes, encoded = await capture(bench, server, routes)
    if first:

        async def objects_row() -> tuple[dict[str, float], dict[str, Any]]:
            delta = loaded - idle
            return {
                "mb": loaded / MB,
                "delta_mb": delta / MB,
                "encoded_mb": encoded / MB,
                "x_encoded": delta / encoded,
            }, {"list_bytes": list_bytes}

        await bench.measure(backend, config, "rss_objects", objects_row)
    if routes is not None:
        bench.floor_routes = routes.directory
        bench.floor_cert_dir = server.cert_dir
        bench.floor_paths = paths
        bench.floor_list_bytes = list_bytes
    endpoint = Endpoint(server.url, server.client_tls)
    await request_suite(bench, backend, config, endpoint, paths, list_bytes, which)
    if "watch" in which:
        await watch_fanout(bench, backend, config, server, _watch_namespace(config))
    for workload, accept in WATCHES.items():
        if workload != "watch" and workload in which:
            namespace = f"{_watch_namespace(config)}-{workload.removeprefix('watch_').replace('_', '-')}"
            run = functools.partial(fanouts, bench, endpoint, namespace, accept)
            await bench.measure(backend, config, workload, run)


def _watch_namespace(config: str) -> str:
    return "bench-watch-" + "".join(c if c.isalnum() else "-" for c in config)


def configurations(command: ServerCommand) -> list[tuple[str, list[str], frozenset[str]]]:
    """(name, extra flags, workloads) for each configuration this server's flags allow."""
    flags = server_flags(command)
    configs: list[tuple[str, list[str], frozenset[str]]] = [("default", [], EVERYTHING)]
    if "--workers" in flags:
        configs.append(("workers=1", ["--workers", "1"], EVERYTHING))
    if "--watch-cache" in flags:
        configs.append(("no cache", ["--watch-cache=false"], READS))
    return configs


async def bench_backend(bench: Bench, backend: str, backend_args: list[str]) -> None:
    """Every configuration on one backend (same data), then the floor if it has not run yet."""
    data_dir = bench.workdir / f"server-{backend}"  # never etcd's own directory
    shutil.rmtree(data_dir, ignore_errors=True)  # a --keep directory from an earlier run: start empty
    for index, (config, extra, which) in enumerate(configurations(bench.command)):
        log = bench.workdir / f"{backend}-{config.replace(' ', '-').replace('=', '')}.log"
        bench.progress(f"{backend} / {config}: starting pizza-apiserver {' '.join([*backend_args, *extra])}")
        try:
            with running_server(data_dir, [*backend_args, *extra], log, bench.command) as server:
                await run_config(bench, backend, config, server, first=index == 0, which=which)
            if "watch" in which:
                bench.progress(f"{backend} / {config}: a fresh server for the memory of open watches")
                with running_server(data_dir, [*backend_args, *extra], log, bench.command) as server:
                    await watch_memory(bench, backend, config, server, _watch_namespace(config))
        except (OSError, RuntimeError, ToolError, aiohttp.ClientError, TimeoutError) as err:
            bench.progress(f"{backend} / {config} aborted: {err}")
            bench.rows.append(Row(backend, config, "setup", error=f"configuration aborted: {err}"))
            if index == 0:
                return  # nothing is loaded: the other configurations would measure an empty server
    if not bench.skip_floor and not bench.floor_done and bench.floor_routes is not None:
        await bench_floor(bench)


async def bench_floor(bench: Bench) -> None:
    """The floor subprocess on the captured bytes, driven exactly like the server's request suite."""
    assert bench.floor_routes and bench.floor_cert_dir and bench.floor_paths
    bench.floor_done = True
    log = bench.workdir / "floor.log"
    argv = [
        sys.executable,
        "-m",
        "tests.bench.floor",
        "--cert-dir",
        str(bench.floor_cert_dir),
        "--routes",
        str(bench.floor_routes),
    ]
    bench.progress("floor: starting the minimal aiohttp HTTPS handler")
    proc: subprocess.Popen[bytes] = spawn(argv, log)
    try:
        url = await asyncio.to_thread(wait_for_url, proc, log)
        cert_dir = bench.floor_cert_dir
        tls = TLSFiles(cert_dir / "admin.crt", cert_dir / "admin.key", cert_dir / "ca.crt")
        which = READS | {"create_c8", "update_c8"}
        passes: list[list[Row]] = []
        for _ in range(FLOOR_PASSES):
            first_new = len(bench.rows)
            await request_suite(
                bench,
                "floor",
                "aiohttp",
                Endpoint(url, tls),
                bench.floor_paths,
                bench.floor_list_bytes,
                which,
            )
            passes.append(bench.rows[first_new:])
            del bench.rows[first_new:]
        bench.rows.extend(best_floor_rows(passes))
    finally:
        await asyncio.to_thread(stop, proc)


def best_floor_rows(passes: list[list[Row]]) -> list[Row]:
    """Per workload, the pass with the highest rate: the floor is a limit, and on a shared machine a
    neighbour's burst can only ever make it look lower than it is."""
    best: dict[str, Row] = {}
    for rows in passes:
        for row in rows:
            kept = best.get(row.workload)
            if kept is None or kept.error or (not row.error and row.figures["rps"] > kept.figures["rps"]):
                best[row.workload] = row
    for row in best.values():
        row.detail["floor_passes"] = len(passes)
    return list(best.values())
