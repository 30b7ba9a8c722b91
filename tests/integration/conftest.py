"""Shared pieces of the HTTPS integration suite: a raw-HTTP client and a server exposing its storage.

`Api` is deliberately thin (aiohttp, no kube client library): these tests are about the exact bytes,
codes and headers the server sends. `storage_server` builds the same Config and Application as
`server.cli.serve`, but keeps the storage object so a test can compact history the way etcd's
compactor would — the only way to reach a too-old resourceVersion in a test-sized history.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from server.app import build_app
from server.config import build_config, write_admin_kubeconfig
from server.options import parse_args
from server.serving.connection_buffers import TLSSite
from tests.fixtures import objects
from tests.fixtures.etcd import unique_prefix
from tests.fixtures.server import RunningServer, server_args

GROUP = "restaurant.programming-kubernetes.info"
V1A1 = f"{GROUP}/v1alpha1"
V1B1 = f"{GROUP}/v1beta1"
KUBECTL_TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
# Every read of a streaming body is bounded by this, so a server that stops talking fails the test.
READ_TIMEOUT = 10.0


@dataclass
class Reply:
    status: int
    headers: Any
    raw: bytes

    @property
    def body(self) -> Any:
        return orjson.loads(self.raw)

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    def __repr__(self) -> str:  # shown by pytest when an assertion on a Reply fails
        return f"Reply({self.status}, {self.text[:600]!r})"


@dataclass
class Api:
    """Raw HTTPS requests against one running server, with the admin client certificate."""

    GROUP = GROUP
    TABLE_ACCEPT = KUBECTL_TABLE_ACCEPT

    server: RunningServer
    session: aiohttp.ClientSession
    extra: dict[str, Any] = field(default_factory=dict)

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | list[tuple[str, str]] | None = None,
    ) -> Reply:
        hdrs = dict(headers or {})
        if json is not None:
            data = orjson.dumps(json)
            hdrs.setdefault("Content-Type", "application/json")
        async with asyncio.timeout(READ_TIMEOUT):
            async with self.session.request(method, path, data=data, headers=hdrs, params=params) as r:
                return Reply(r.status, r.headers, await r.read())

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("POST", path, json=body, **kw)

    async def put(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("PUT", path, json=body, **kw)

    async def delete(self, path: str, **kw: Any) -> Reply:
        return await self.request("DELETE", path, **kw)

    async def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> Reply:
        data = body if isinstance(body, bytes | str) else orjson.dumps(body)
        headers = {"Content-Type": content_type, **kw.pop("headers", {})}
        return await self.request("PATCH", path, data=data, headers=headers, **kw)

    # --- the restaurant group ----------------------------------------------------------------

    @staticmethod
    def toppings_path(version: str = "v1beta1", name: str = "") -> str:
        base = f"/apis/{GROUP}/{version}/toppings"
        return f"{base}/{name}" if name else base

    @staticmethod
    def pizzas_path(version: str = "v1beta1", name: str = "", namespace: str = "default") -> str:
        base = f"/apis/{GROUP}/{version}/namespaces/{namespace}/pizzas"
        return f"{base}/{name}" if name else base

    topping = staticmethod(objects.topping)

    @staticmethod
    def pizza(name: str, toppings: Any = None, version: str = "v1beta1", **meta: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{version}",
            "kind": "Pizza",
            "metadata": {"name": name, **meta},
        }
        if toppings is not None:
            body["spec"] = {"toppings": toppings}
        return body

    async def create_toppings(self, *names: str, cost: Any = 1) -> None:
        for name in names:
            r = await self.post(self.toppings_path(), self.topping(name, cost))
            assert r.status == 201, r

    async def create_pizza(
        self, name: str, toppings: Any = None, version: str = "v1beta1", **meta: Any
    ) -> Any:
        r = await self.post(self.pizzas_path(version), self.pizza(name, toppings, version, **meta))
        assert r.status == 201, r
        return r.body

    # --- watch streams ------------------------------------------------------------------------

    @staticmethod
    async def read_events(
        response: aiohttp.ClientResponse, count: int, timeout: float = READ_TIMEOUT
    ) -> list[Any]:
        """The next `count` watch events (one JSON object per line), failing after `timeout` seconds."""
        events: list[Any] = []
        async with asyncio.timeout(timeout):
            while len(events) < count:
                line = await response.content.readline()
                if not line:
                    break
                if line.strip():
                    events.append(orjson.loads(line))
        return events

    @staticmethod
    async def read_to_end(response: aiohttp.ClientResponse, timeout: float = READ_TIMEOUT) -> list[Any]:
        """Every remaining watch event until the server ends the stream, failing after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            raw = await response.read()
        return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


@pytest.fixture
async def api(embedded_server: RunningServer) -> AsyncIterator[Api]:
    """An admin client of a server on embedded storage."""
    async with embedded_server.session() as session:
        yield Api(embedded_server, session)


@pytest.fixture
async def any_api(api_server: RunningServer) -> AsyncIterator[Api]:
    """An admin client of a server on each storage backend."""
    async with api_server.session() as session:
        yield Api(api_server, session)


# --- a server whose storage the test can reach ------------------------------------------------


@contextlib.asynccontextmanager
async def server_with_storage(data_dir: Path, *extra: str) -> AsyncIterator[tuple[RunningServer, Any]]:
    options = parse_args(server_args(data_dir, *extra)).complete()
    assert not options.validate(), options.validate()
    config = await build_config(options)
    runner = web.AppRunner(build_app(config), handle_signals=False, access_log=None, shutdown_timeout=2.0)
    try:
        await runner.setup()
        site = TLSSite(runner, "127.0.0.1", 0, ssl_context=config.tls.listening_context)
        await site.start()
        url = f"https://127.0.0.1:{runner.addresses[0][1]}"
        kubeconfig = await asyncio.to_thread(write_admin_kubeconfig, config, url)
        assert options.serving.cert_dir is not None
        yield RunningServer(url, data_dir, kubeconfig, options.serving.cert_dir), config.storage
    finally:
        await runner.cleanup()
        await config.close()


@pytest.fixture(params=["embedded", "etcd"])
async def storage_api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """Like `any_api`, with `api.extra["storage"]` the server's storage.Interface and
    `api.extra["storage_flags"]` the flags naming it."""
    extra: list[str] = []
    if request.param == "etcd":
        etcd = request.getfixturevalue("etcd_server")
        extra = [
            "--etcd-servers",
            etcd.client_url,
            "--etcd-prefix",
            unique_prefix(),
        ]
    async with (
        server_with_storage(tmp_path / "data", *extra) as (server, storage),
        server.session() as session,
    ):
        # The flags that name this server's storage, for commands run next to it (migrate-storage).
        flags = ["--data-dir", str(tmp_path / "data"), *extra]
        yield Api(server, session, {"storage": storage, "storage_flags": flags})
