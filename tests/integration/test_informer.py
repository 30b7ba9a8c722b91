"""A client-go-style informer against a real server process that is restarted under it.

The informer is the reflector pattern client-go's tools/cache implements: list with paging, watch from
the list's resourceVersion with bookmarks and a timeout, re-watch from the last resourceVersion seen
(event or bookmark) after the stream ends or the connection drops, and relist when the server answers
410 Gone/Expired. The server is a subprocess on a fixed port and data directory, so the connection
really drops and the same kubeconfig/certificates stay valid across restarts. To reach a 410, the
test pauses the informer, writes while it is away, and compacts the storage with the server stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from server.config import open_storage
from server.options import parse_args
from tests.fixtures.etcd import free_port
from tests.fixtures.server import ServerProcess, server_args, start_server_process

GROUP = "restaurant.programming-kubernetes.info"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"
MERGE = "application/merge-patch+json"
PAGE_SIZE = 2
# Short watches: the informer re-watches from bookmarks several times during the test.
WATCH_SECONDS = 4
SETTLE_TIMEOUT = 20.0


class Expired(Exception):
    """The server said 410: the informer's resourceVersion is gone; relist."""


@dataclass
class Informer:
    base_url: str
    ssl_context: ssl.SSLContext
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    resource_version: str = ""
    lists: int = 0
    pages: int = 0
    watches: int = 0
    bookmarks: int = 0
    expired: int = 0
    failures: int = 0
    # Set when the informer itself broke (an assertion about what the server sent): the test reports it.
    error: BaseException | None = None
    # Cleared by the test to keep the informer away (it finishes the current watch, then waits).
    allowed: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        try:
            await self._run()
        except Exception as e:
            self.error = e
            self.changed.set()
            raise

    async def _run(self) -> None:
        self.allowed.set()
        must_list = True
        backoff = 0.1
        connector = aiohttp.TCPConnector(ssl=self.ssl_context, force_close=True)
        async with aiohttp.ClientSession(base_url=self.base_url, connector=connector) as session:
            while True:
                await self.allowed.wait()
                try:
                    if must_list:
                        await self._list(session)
                        must_list = False
                    await self._watch(session)
                    backoff = 0.1
                except Expired:
                    self.expired += 1
                    must_list = True
                except (aiohttp.ClientError, ConnectionError, TimeoutError):
                    # The server went away mid-request or is not back yet: retry from the same revision.
                    self.failures += 1
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 1.0)

    async def _list(self, session: aiohttp.ClientSession) -> None:
        """A paged list; every page is read at the first page's revision (the continue token's)."""
        items: dict[str, dict[str, Any]] = {}
        params: dict[str, str] = {"limit": str(PAGE_SIZE)}
        revisions = set()
        while True:
            async with session.get(TOPPINGS, params=params) as r:
                if r.status == 410:
                    raise Expired
                assert r.status == 200, await r.text()
                body = orjson.loads(await r.read())
            self.pages += 1
            revisions.add(body["metadata"]["resourceVersion"])
            items.update({i["metadata"]["name"]: i for i in body["items"]})
            token = body["metadata"].get("continue")
            if not token:
                break
            params = {"limit": str(PAGE_SIZE), "continue": token}
        assert len(revisions) == 1, revisions
        self.cache, self.resource_version = items, revisions.pop()
        self.lists += 1
        self.changed.set()

    async def _watch(self, session: aiohttp.ClientSession) -> None:
        params = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        timeout = aiohttp.ClientTimeout(total=WATCH_SECONDS + 10)
        async with session.get(TOPPINGS, params=params, timeout=timeout) as r:
            if r.status == 410:
                raise Expired
            assert r.status == 200, await r.text()
            self.watches += 1
            while line := await r.content.readline():
                if line.strip():
                    self._apply(orjson.loads(line))

    def _apply(self, event: dict[str, Any]) -> None:
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired
            raise AssertionError(f"unexpected watch error: {obj}")
        rv = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            # May repeat the revision the watch started at (kube's cacher does, once).
            assert int(rv) >= int(self.resource_version), (event, self.resource_version)
            self.resource_version = rv
            self.bookmarks += 1
            return
        assert int(rv) > int(self.resource_version), (event, self.resource_version)
        self.resource_version = rv
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            assert name in self.cache, event
            del self.cache[name]
        else:
            assert (kind == "ADDED") == (name not in self.cache), event
            self.cache[name] = obj
        self.changed.set()


@dataclass
class Cluster:
    """The server process, restartable on the same port, data directory and storage."""

    data_dir: Path
    extra: list[str]
    process: ServerProcess | None = None

    async def start(self) -> ServerProcess:
        self.process = await asyncio.to_thread(start_server_process, self.data_dir, *self.extra)
        return self.process

    async def stop(self) -> None:
        if self.process is not None:
            await asyncio.to_thread(self.process.stop)

    async def compact_offline(self) -> int:
        """With the server stopped: open its storage as it would, forget all history, close."""
        options = parse_args(server_args(self.data_dir, *self.extra)).complete()
        storage = await open_storage(options)
        try:
            revision = await storage.current_revision()
            await storage.compact(revision)
            return revision
        finally:
            await storage.close()


@pytest.fixture(params=["embedded", "etcd"])
async def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Cluster]:
    extra = ["--secure-port", str(free_port())]
    if request.param == "etcd":
        etcd = request.getfixturevalue("etcd_server")
        extra += ["--etcd-servers", etcd.client_url, "--etcd-prefix", f"/registry/informer/{os.getpid()}"]
    running = Cluster(tmp_path / "data", extra)
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def _admin_context(data_dir: Path) -> ssl.SSLContext:
    certs = data_dir / "certs"
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    context.load_cert_chain(str(certs / "admin.crt"), str(certs / "admin.key"))
    return context


class Writer:
    """The other side: plain requests that change the collection while the informer watches."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def _call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, path, data=data, headers={"Content-Type": content_type}) as r:
            payload = orjson.loads(await r.read())
            assert r.status in (200, 201), payload
            return payload

    async def create(self, name: str, cost: float = 1) -> None:
        body = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Topping",
            "metadata": {"name": name},
            "spec": {"cost": cost},
        }
        await self._call("POST", TOPPINGS, body)

    async def patch(self, name: str, cost: float) -> None:
        await self._call("PATCH", f"{TOPPINGS}/{name}", {"spec": {"cost": cost}}, MERGE)

    async def delete(self, name: str) -> None:
        await self._call("DELETE", f"{TOPPINGS}/{name}")

    async def state(self) -> tuple[dict[str, str], str]:
        listed = await self._call("GET", TOPPINGS)
        items = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in listed["items"]}
        return items, listed["metadata"]["resourceVersion"]


async def _settled(informer: Informer, writer: Writer) -> dict[str, str]:
    """Wait until the informer's cache is exactly the server's state (names and resourceVersions)."""
    want, _ = await writer.state()
    async with asyncio.timeout(SETTLE_TIMEOUT):
        while {n: o["metadata"]["resourceVersion"] for n, o in informer.cache.items()} != want:
            if informer.error is not None:
                raise AssertionError("the informer failed") from informer.error
            informer.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(informer.changed.wait(), 0.5)
    return want


@contextlib.asynccontextmanager
async def _writer(cluster: Cluster) -> AsyncIterator[Writer]:
    assert cluster.process is not None
    connector = aiohttp.TCPConnector(ssl=_admin_context(cluster.data_dir), force_close=True)
    async with aiohttp.ClientSession(base_url=cluster.process.url, connector=connector) as session:
        yield Writer(session)


async def test_informer_survives_restarts_and_relists_on_410(cluster: Cluster) -> None:
    assert cluster.process is not None
    async with _writer(cluster) as writer:
        for i in range(5):
            await writer.create(f"t{i}")
    informer = Informer(cluster.process.url, _admin_context(cluster.data_dir))
    task = asyncio.create_task(informer.run())
    try:
        # 1. Initial sync: a paged list (5 objects in pages of 2), then a watch.
        async with _writer(cluster) as writer:
            await _settled(informer, writer)
            assert (informer.lists, informer.pages) == (1, 3)
            await writer.create("t5")
            await writer.patch("t0", 2)
            await writer.delete("t1")
            await _settled(informer, writer)
            assert set(informer.cache) == {"t0", "t2", "t3", "t4", "t5"}

        # 2. The server restarts mid-watch: the informer resumes from its resourceVersion, no relist.
        watches = informer.watches
        await cluster.stop()
        await cluster.start()
        async with _writer(cluster) as writer:
            await writer.create("t6")
            await writer.delete("t2")
            await writer.patch("t3", 2)  # at most double (the cost rule)
            await _settled(informer, writer)
        assert informer.lists == 1 and informer.expired == 0
        assert informer.watches > watches and informer.failures >= 1
        assert informer.cache["t3"]["spec"] == {"cost": 2}

        # 3. Bookmarks kept it moving between watches that ended by timeout.
        await asyncio.sleep(WATCH_SECONDS + 1)
        assert informer.bookmarks >= 1

        # 4. Away while things change, then history compacted: the resume gets 410 and the informer
        #    relists, ending with exactly the server's state.
        informer.allowed.clear()
        await cluster.stop()
        await cluster.start()
        async with _writer(cluster) as writer:
            await writer.create("t7")
            await writer.patch("t4", 2)
            await writer.delete("t5")
        await cluster.stop()
        compacted = await cluster.compact_offline()
        assert compacted > int(informer.resource_version)
        await cluster.start()
        informer.allowed.set()
        async with _writer(cluster) as writer:
            final = await _settled(informer, writer)
            assert informer.expired >= 1 and informer.lists == 2
            assert set(final) == {"t0", "t3", "t4", "t6", "t7"}
            assert informer.cache["t4"]["spec"] == {"cost": 2}
            # And it keeps watching after the relist.
            await writer.delete("t0")
            await _settled(informer, writer)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
