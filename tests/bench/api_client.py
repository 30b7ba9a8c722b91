"""A small aiohttp client for what the Go tools cannot do: set-up, capturing bytes, paging, exactly-once.

loadgen cannot follow continue tokens and watchfan does not report duplicated events, so the
paged LIST pass and the watch verifier run here. The paging pass is light (20 sequential requests,
one connection): the client's cost is small next to a 500-item page, and it is the same client
against the server and against the floor, so the ratio stays fair.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from tests.bench.floor import Captured, route_key
from tests.bench.go_tools import TLSFiles

GROUP = "restaurant.programming-kubernetes.info"
API = f"/apis/{GROUP}/v1beta1"
TIMEOUT = aiohttp.ClientTimeout(total=120)


def pizzas_path(namespace: str, name: str = "") -> str:
    base = f"{API}/namespaces/{namespace}/pizzas"
    return f"{base}/{name}" if name else base


def pizza_body(prefix: str) -> str:
    """The pizza every write posts (v1beta1); `{{n}}` is the Go tools' unique-number placeholder."""
    return orjson.dumps(
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Pizza",
            "metadata": {"name": f"{prefix}-{{{{n}}}}"},
            "spec": {"toppings": [{"name": "tomato", "quantity": 1}, {"name": "mozzarella", "quantity": 2}]},
        }
    ).decode()


def client_ssl(tls: TLSFiles) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(tls.cacert))
    context.load_cert_chain(str(tls.cert), str(tls.key))
    return context


class ApiClient:
    """Every call checks its status, so set-up that went wrong stops the run instead of skewing it."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def raw(
        self,
        method: str,
        path: str,
        expect: int,
        body: Any = None,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Captured:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Accept": accept}
        if data is not None:
            headers["Content-Type"] = content_type
        async with self.session.request(method, path, data=data, headers=headers, params=params) as r:
            raw = await r.read()
            if r.status != expect:
                raise RuntimeError(f"{method} {path} {params or ''}: {r.status} {raw[:300]!r}")
            return Captured(r.status, r.content_type, raw)

    async def call(self, method: str, path: str, expect: int, body: Any = None, **params: str) -> Any:
        return orjson.loads((await self.raw(method, path, expect, body, params or None)).body)

    async def ensure_toppings(self, names: tuple[str, ...] = ("tomato", "mozzarella")) -> None:
        """PizzaToppings admission refuses pizzas naming missing toppings: create them first."""
        for name in names:
            body = {"apiVersion": f"{GROUP}/v1beta1", "kind": "Topping", "metadata": {"name": name}}
            body["spec"] = {"cost": 1}
            async with self.session.get(f"{API}/toppings/{name}") as r:
                if r.status == 200:
                    continue
            await self.call("POST", f"{API}/toppings", 201, body)


@contextlib.asynccontextmanager
async def api_client(base_url: str, tls: TLSFiles, connections: int = 4) -> AsyncIterator[ApiClient]:
    connector = aiohttp.TCPConnector(ssl=client_ssl(tls), limit=connections)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=TIMEOUT) as session:
        yield ApiClient(session)


@dataclass(slots=True)
class PagedPass:
    """One full pass over a collection in pages: total time, each page's latency, what came back."""

    seconds: float
    page_latencies: list[float]
    items: int
    pages: list[tuple[str, Captured]] = field(default_factory=list)


async def paged_pass(client: ApiClient, path: str, limit: int, *, keep: bool = False) -> PagedPass:
    """Follow continue tokens to the end, sequentially on one connection, as a paging client does."""
    latencies: list[float] = []
    pages: list[tuple[str, Captured]] = []
    items = 0
    token = ""
    began = time.perf_counter()
    while True:
        params = {"limit": str(limit)}
        if token:
            params["continue"] = token
        t0 = time.perf_counter()
        page = await client.raw("GET", path, 200, params=params)
        latencies.append(time.perf_counter() - t0)
        decoded = orjson.loads(page.body)
        items += len(decoded["items"])
        if keep:
            pages.append((route_key("GET", path, params), page))
        token = decoded["metadata"].get("continue", "")
        if not token:
            break
    return PagedPass(time.perf_counter() - began, latencies, items, pages)


@dataclass(slots=True)
class WatchCheck:
    """What the verifier streams saw: the names each stream got ADDED events for, and anomalies."""

    streams: int
    seen: list[Counter[str]] = field(default_factory=list)
    out_of_order: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        """ADDED events beyond the first for a name, summed over the streams."""
        return sum(n - 1 for stream in self.seen for n in stream.values() if n > 1)

    def missing(self, sent: int) -> int:
        """Deliveries missing for `sent` created objects (the writer may have sent fewer than asked)."""
        return sum(max(0, sent - len(stream)) for stream in self.seen)


async def verify_watch(
    base_url: str,
    tls: TLSFiles,
    path: str,
    streams: int,
    expected: int,
    ready: asyncio.Event,
    stop: asyncio.Event,
) -> WatchCheck:
    """Watch `path` on `streams` connections until each saw `expected` ADDED events or `stop` is set.

    Each stream records the names it got ADDED events for (so duplicates and gaps can be counted
    against what the writer really sent) and counts resourceVersions going backwards. `ready` is set
    once every stream is open, so the writer starts after them.
    """
    check = WatchCheck(streams=streams)
    connector = aiohttp.TCPConnector(ssl=client_ssl(tls), limit=streams + 1)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=aiohttp.ClientTimeout()) as s:
        async with s.get(path, params={"limit": "1"}) as r:
            start_rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
        opened = 0

        async def one_stream() -> None:
            nonlocal opened
            params = {"watch": "1", "resourceVersion": start_rv, "timeoutSeconds": "600"}
            seen: Counter[str] = Counter()
            check.seen.append(seen)
            last_rv = 0
            try:
                async with s.get(path, params=params) as stream:
                    opened += 1
                    if opened == streams:
                        ready.set()
                    if stream.status != 200:
                        check.errors.append(f"watch answered {stream.status}")
                        return
                    while seen.total() < expected:
                        line = await stream.content.readline()
                        if not line:
                            check.errors.append("watch ended early")
                            break
                        event = orjson.loads(line)
                        if event.get("type") != "ADDED":
                            continue
                        meta = event["object"]["metadata"]
                        rv = int(meta["resourceVersion"])
                        if rv <= last_rv:
                            check.out_of_order += 1
                        last_rv = rv
                        seen[meta["name"]] += 1
            except (aiohttp.ClientError, TimeoutError) as err:
                check.errors.append(repr(err))

        readers = asyncio.gather(*(one_stream() for _ in range(streams)))
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({readers, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            readers.cancel()
            stopped.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers
            ready.set()
    return check
