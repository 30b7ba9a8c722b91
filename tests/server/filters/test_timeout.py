"""The request timeout over real HTTPS: kube's 504 Status, `?timeout=`, long-running requests left alone.

Every test is bounded by asyncio.timeout(BOUND) far above the timeouts under test, so a filter that
failed to time a request out fails the test instead of hanging it; no assertion depends on how long
something took.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import ClientSession, TCPConnector, web
from aiohttp.test_utils import TestServer

from apis.meta.errors import StatusError
from server.filters.metrics import metrics as observe_metrics
from server.filters.recovery import recovery
from server.filters.request_info import request_info
from server.filters.timeout import allotted_timeout, timeout
from server.longrunning import DEFAULT_LONG_RUNNING, GENERIC_LONG_RUNNING
from server.metrics import Metrics
from server.request_info import resolve

Serve = Callable[..., AbstractAsyncContextManager[TestServer]]

BOUND = 10.0
SHORT = 0.2  # the server's --request-timeout in most tests
PIZZAS = "/apis/restaurant.programming-kubernetes.info/v1beta1/namespaces/default/pizzas"
KUBE_504 = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Timeout: request did not complete within the allotted timeout",
    "reason": "Timeout",
    "details": {},
    "code": 504,
}


@dataclass
class Handlers:
    """Routes with known behaviour; `cancelled` records handlers the filter cut short."""

    cancelled: list[str] = field(default_factory=list)
    never: asyncio.Event = field(default_factory=asyncio.Event)  # never set

    async def stuck(self, request: web.Request) -> web.Response:
        try:
            await self.never.wait()
        except asyncio.CancelledError:
            self.cancelled.append(request.path_qs)
            raise
        return web.json_response({})

    async def slow_watch(self, request: web.Request) -> web.StreamResponse:
        """Outlives the request timeout several times over before its first event, then streams it."""
        await asyncio.sleep(SHORT * 3)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type":"ADDED"}\n')
        await response.write_eof()
        return response

    async def started_then_stuck(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"partial")
        await self.never.wait()
        return response

    async def own_timeout(self, request: web.Request) -> web.Response:
        raise TimeoutError("storage did not answer")

    async def quick(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})


@dataclass
class Client:
    server: TestServer
    session: ClientSession
    handlers: Handlers
    metrics: Metrics

    async def get(self, path: str) -> tuple[int, Any]:
        async with asyncio.timeout(BOUND):
            async with self.session.get(str(self.server.make_url(path))) as response:
                return response.status, await response.json(content_type=None)


MakeClient = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def timed(serve: Serve, server_tls: ssl.SSLContext, tls_clients: dict[str, ssl.SSLContext]) -> MakeClient:
    """The chain's outer filters (recovery, request info, metrics) and the timeout, over HTTPS."""

    @asynccontextmanager
    async def start(request_timeout: float = SHORT) -> AsyncIterator[Client]:
        handlers, metrics = Handlers(), Metrics()
        app = web.Application(
            middlewares=[recovery, request_info, observe_metrics(metrics), timeout(request_timeout)]
        )
        app.add_routes(
            [
                web.get("/apis/g/v1/namespaces/ns/things", handlers.slow_watch),
                web.get("/apis/g/v1/namespaces/ns/things/x/log", handlers.slow_watch),
                web.get("/apis/g/v1/namespaces/ns/things/started", handlers.started_then_stuck),
                web.get("/apis/g/v1/namespaces/ns/things/own-timeout", handlers.own_timeout),
                web.get("/quick", handlers.quick),
                web.route("*", "/{tail:.*}", handlers.stuck),
            ]
        )
        connector = TCPConnector(ssl=tls_clients["nobody"])
        async with serve(app, server_tls) as server, ClientSession(connector=connector) as session:
            yield Client(server, session, handlers, metrics)

    return start


async def test_a_request_that_overruns_gets_kubes_504_and_its_handler_is_cancelled(timed: MakeClient) -> None:
    async with timed() as client:
        assert await client.get(f"{PIZZAS}/margherita") == (504, KUBE_504)
        assert client.handlers.cancelled == [f"{PIZZAS}/margherita"]
        # The connection is still usable and fast requests are untouched.
        assert await client.get("/quick") == (200, {"ok": True})
        body, _ = client.metrics.render()
    assert b'code="504"' in body  # outer filters see the 504 like any other answer


async def test_query_timeout_shortens_the_deadline(timed: MakeClient) -> None:
    async with timed(request_timeout=3600) as client:  # without ?timeout= this would outlast BOUND
        assert await client.get(f"{PIZZAS}?timeout=100ms") == (504, KUBE_504)
        assert await client.get(f"{PIZZAS}/margherita?timeout=1s") == (504, KUBE_504)
        assert len(client.handlers.cancelled) == 2


@pytest.mark.parametrize("requested", ["1h", "0s", "0", "-5s"])
async def test_query_timeout_cannot_extend_the_servers_limit(timed: MakeClient, requested: str) -> None:
    async with timed() as client:
        assert await client.get(f"{PIZZAS}?timeout={requested}") == (504, KUBE_504)


async def test_a_malformed_query_timeout_is_kubes_400(timed: MakeClient) -> None:
    async with timed() as client:
        status, body = await client.get(f"{PIZZAS}?timeout=soon")
    assert (status, body["reason"], body["code"]) == (400, "BadRequest", 400)
    assert body["message"] == 'invalid timeout specified in the request URL - time: invalid duration "soon"'
    assert client.handlers.cancelled == []  # refused before the handler ran


async def test_watches_and_other_long_running_requests_are_not_timed_out(timed: MakeClient) -> None:
    async with timed() as client:
        for path in (
            "/apis/g/v1/namespaces/ns/things?watch=true",
            "/apis/g/v1/namespaces/ns/things?watch=true&timeout=10ms",  # ignored for watches, as in kube
            "/apis/g/v1/namespaces/ns/things/x/log",  # a streaming subresource, long-running in kube
        ):
            assert await client.get(path) == (200, {"type": "ADDED"}), path
        # The same list route without watch is an ordinary request, and is cut.
        assert await client.get("/apis/g/v1/namespaces/ns/things") == (504, KUBE_504)


async def test_a_handlers_own_timeout_error_is_not_mistaken_for_the_deadline(timed: MakeClient) -> None:
    async with timed(request_timeout=3600) as client:
        status, body = await client.get("/apis/g/v1/namespaces/ns/things/own-timeout")
    assert (status, body["reason"]) == (500, "InternalError")


async def test_once_the_response_started_the_connection_is_broken_instead(timed: MakeClient) -> None:
    async with timed() as client:
        url = str(client.server.make_url("/apis/g/v1/namespaces/ns/things/started"))
        async with asyncio.timeout(BOUND), client.session.get(url) as response:
            assert response.status == 200  # the head was sent before the deadline
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()


async def test_zero_disables_the_timeout(timed: MakeClient) -> None:
    async with timed(request_timeout=0) as client:
        assert await client.get("/apis/g/v1/namespaces/ns/things") == (200, {"type": "ADDED"})


def test_allotted_timeout_takes_the_shorter_positive_value() -> None:
    assert allotted_timeout("", 60.0) == 60.0
    assert allotted_timeout("30s", 60.0) == 30.0
    assert allotted_timeout("1m30s", 60.0) == 60.0
    assert allotted_timeout("60s", 60.0) == 60.0
    assert allotted_timeout("1.5s", 60.0) == 1.5
    assert allotted_timeout("-1s", 60.0) == 60.0
    with pytest.raises(StatusError) as raised:
        allotted_timeout("30", 60.0)
    assert (
        raised.value.message
        == 'invalid timeout specified in the request URL - time: missing unit in duration "30"'
    )


@pytest.mark.parametrize(
    ("method", "path", "long_running"),
    [
        ("GET", "/apis/g/v1/namespaces/ns/pizzas?watch=true", True),
        ("GET", "/apis/g/v1/watch/namespaces/ns/pizzas", True),
        ("GET", "/api/v1/namespaces/ns/pods/p/log", True),
        ("POST", "/api/v1/namespaces/ns/pods/p/exec", True),
        ("GET", "/api/v1/namespaces/ns/pods/p/attach", True),
        ("GET", "/api/v1/namespaces/ns/pods/p/portforward", True),
        ("GET", "/api/v1/namespaces/ns/pods/p/proxy", True),
        ("GET", "/api/v1/proxy/namespaces/ns/pods/p", True),
        ("GET", "/debug/pprof/profile", True),
        ("GET", "/apis/g/v1/namespaces/ns/pizzas", False),
        ("GET", "/apis/g/v1/namespaces/ns/pizzas/p/status", False),
        ("PUT", "/apis/g/v1/namespaces/ns/pizzas/p", False),
        ("GET", "/healthz", False),
        ("GET", "/log", False),  # non-resource: subresources do not apply
    ],
)
def test_long_running_requests_are_kube_apiservers(method: str, path: str, long_running: bool) -> None:
    url = aiohttp.client.URL(path)
    assert DEFAULT_LONG_RUNNING(resolve(method, url.path, url.query)) is long_running


def test_the_generic_servers_set_is_watch_only() -> None:
    assert GENERIC_LONG_RUNNING(resolve("GET", "/apis/g/v1/pizzas", {"watch": "true"}))
    assert not GENERIC_LONG_RUNNING(resolve("GET", "/api/v1/namespaces/ns/pods/p/log", {}))
