"""Max-in-flight over real HTTPS: excess requests get kube's 429 at once, admitted ones finish normally.

Handlers hold their requests on an asyncio.Event, so "in flight" is a fact the test controls rather
than a race: the test waits (bounded) until the admitted requests are inside the handler and the
rejected ones have answered, and only then lets the held ones go.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import ClientResponse, ClientSession, TCPConnector, web
from aiohttp.test_utils import TestServer

from server.authn import build_authenticator
from server.authn.interface import Authenticator
from server.filters.authentication import authentication
from server.filters.max_in_flight import INFLIGHT_METRIC, InflightWatermark, max_in_flight
from server.filters.recovery import recovery
from server.filters.request_info import request_info, request_info_of
from server.metrics import Metrics

Serve = Callable[..., AbstractAsyncContextManager[TestServer]]

BOUND = 10.0  # every wait in these tests ends by then
PIZZAS = "/apis/restaurant.programming-kubernetes.info/v1beta1/namespaces/default/pizzas"
BOB = {"X-Test-User": "bob;restaurant-staff"}
ADMIN = {"X-Test-User": "admin;system:masters"}


@dataclass
class Gate:
    """Holds every non-watch request inside the handler until opened; counts who got in."""

    opened: asyncio.Event = field(default_factory=asyncio.Event)
    inside: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        info = request_info_of(request)
        if info.verb == "watch":
            return web.json_response({"verb": info.verb})  # answers at once: it is never throttled
        self.inside.append(info.verb)
        await self.opened.wait()
        return web.json_response({"verb": info.verb})

    async def until_inside(self, count: int) -> None:
        async with asyncio.timeout(BOUND):
            while len(self.inside) < count:
                await asyncio.sleep(0.005)


@dataclass
class Throttled:
    gate: Gate
    server: TestServer
    session: ClientSession
    tasks: list[asyncio.Task[tuple[int, Any, Any]]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))

    def send(self, method: str, path: str, headers: Mapping[str, str] = BOB) -> asyncio.Task:
        task = asyncio.create_task(self._request(method, path, headers))
        self.tasks.append(task)
        return task

    async def _request(self, method: str, path: str, headers: Mapping[str, str]) -> tuple[int, Any, Any]:
        body = {} if method in ("POST", "PUT") else None
        async with self.session.request(method, self.url(path), headers=headers, json=body) as response:
            return response.status, response.headers.copy(), await _json(response)

    async def finished(self, count: int) -> list[tuple[int, Any, Any]]:
        """The results of the first `count` requests to finish, waiting (bounded) for them."""
        async with asyncio.timeout(BOUND):
            while sum(t.done() for t in self.tasks) < count:
                await asyncio.sleep(0.005)
        return [t.result() for t in self.tasks if t.done()]

    async def release(self) -> list[tuple[int, Any, Any]]:
        self.gate.opened.set()
        async with asyncio.timeout(BOUND):
            return list(await asyncio.gather(*self.tasks))


async def _json(response: ClientResponse) -> Any:
    return await response.json(content_type=None)


MakeThrottled = Callable[..., AbstractAsyncContextManager[Throttled]]


@pytest.fixture
def throttled(
    serve: Serve,
    server_tls: ssl.SSLContext,
    tls_clients: dict[str, ssl.SSLContext],
    header_authenticator: Authenticator,
) -> MakeThrottled:
    """An HTTPS server with the chain's request info and authentication in front of max-in-flight."""

    @asynccontextmanager
    async def start(
        limit: int,
        mutating_limit: int,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> AsyncIterator[Throttled]:
        gate = Gate()
        app = web.Application(
            middlewares=[
                recovery,
                request_info,
                authentication(build_authenticator([header_authenticator], anonymous=False)),
                max_in_flight(
                    limit, mutating_limit, registry=metrics.registry if metrics else None, clock=clock
                ),
            ]
        )
        app.add_routes([web.route("*", "/{tail:.*}", gate.handle)])
        connector = TCPConnector(ssl=tls_clients["nobody"])
        async with serve(app, server_tls) as server, ClientSession(connector=connector) as session:
            throttled = Throttled(gate, server, session)
            try:
                yield throttled
            finally:
                gate.opened.set()
                for task in throttled.tasks:
                    task.cancel()
                await asyncio.gather(*throttled.tasks, return_exceptions=True)

    return start


def _codes(results: Sequence[tuple[int, Any, Any]]) -> list[int]:
    return sorted(status for status, _, _ in results)


def _assert_kube_429(result: tuple[int, Any, Any]) -> None:
    status, headers, body = result
    assert status == 429
    assert headers["Retry-After"] == "1"
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Too many requests, please try again later.",
        "reason": "TooManyRequests",
        "details": {"retryAfterSeconds": 1},
        "code": 429,
    }


async def test_a_burst_above_the_limit_admits_the_limit_and_rejects_the_rest_at_once(
    throttled: MakeThrottled,
) -> None:
    async with throttled(2, 200) as t:
        for _ in range(10):
            t.send("GET", PIZZAS)
        rejected = await t.finished(8)  # answered while two requests still hold both seats
        await t.gate.until_inside(2)
        assert len(rejected) == 8
        for result in rejected:
            _assert_kube_429(result)
        assert t.gate.inside == ["list", "list"]
        results = await t.release()
    assert _codes(results) == [200, 200] + [429] * 8
    assert [body for status, _, body in results if status == 200] == [{"verb": "list"}] * 2


async def test_seats_are_returned_when_requests_finish(throttled: MakeThrottled) -> None:
    async with throttled(1, 1) as t:
        t.send("GET", f"{PIZZAS}/margherita")
        await t.gate.until_inside(1)
        _assert_kube_429(await t.send("GET", f"{PIZZAS}/hawaii"))
        assert _codes(await t.release()) == [200, 429]
        t.gate.opened.clear()
        t.tasks.clear()
        t.send("GET", f"{PIZZAS}/hawaii")
        await t.gate.until_inside(2)  # the freed seat admits the next one
        assert _codes(await t.release()) == [200]


async def test_watches_are_not_counted(throttled: MakeThrottled) -> None:
    async with throttled(1, 1) as t:
        t.send("GET", PIZZAS)
        await t.gate.until_inside(1)
        # The only read-only seat is taken, yet every watch form still reaches its handler.
        for path in (
            f"{PIZZAS}?watch=true",
            f"{PIZZAS}?watch=1&resourceVersion=0",
            "/apis/g/v1/watch/pizzas",
        ):
            status, _, body = await t.send("GET", path)
            assert (status, body) == (200, {"verb": "watch"}), path
        _assert_kube_429(await t.send("GET", PIZZAS))
        assert _codes(await t.release()) == [200, 200, 200, 200, 429]


async def test_read_only_and_mutating_requests_have_separate_limits(throttled: MakeThrottled) -> None:
    async with throttled(1, 1) as t:
        t.send("GET", PIZZAS)
        await t.gate.until_inside(1)
        # Reads are full, writes are not.
        t.send("POST", PIZZAS)
        await t.gate.until_inside(2)
        assert t.gate.inside == ["list", "create"]
        # Now both are full: each kind of verb is rejected by its own budget.
        _assert_kube_429(await t.send("GET", f"{PIZZAS}/margherita"))
        _assert_kube_429(await t.send("DELETE", f"{PIZZAS}/margherita"))
        _assert_kube_429(await t.send("PUT", f"{PIZZAS}/margherita"))
        # A non-resource POST is mutating too (kube classifies by verb only).
        _assert_kube_429(await t.send("POST", "/some/non-resource"))
        assert _codes(await t.release()) == [200, 200, 429, 429, 429, 429]


async def test_zero_lifts_a_limit(throttled: MakeThrottled) -> None:
    async with throttled(0, 1) as t:
        for _ in range(5):
            t.send("GET", PIZZAS)
        await t.gate.until_inside(5)
        t.send("POST", PIZZAS)
        await t.gate.until_inside(6)
        _assert_kube_429(await t.send("POST", PIZZAS))
        assert _codes(await t.release()) == [200] * 6 + [429]


async def test_system_masters_gets_through_when_the_limit_is_reached(throttled: MakeThrottled) -> None:
    async with throttled(1, 1) as t:
        t.send("GET", PIZZAS)
        await t.gate.until_inside(1)
        t.send("GET", PIZZAS, ADMIN)
        await t.gate.until_inside(2)  # over the limit, but admitted
        _assert_kube_429(await t.send("GET", PIZZAS))  # bob still is not
        assert _codes(await t.release()) == [200, 200, 429]


async def test_unauthenticated_requests_are_refused_before_they_are_counted(throttled: MakeThrottled) -> None:
    async with throttled(1, 1) as t:
        t.send("GET", PIZZAS)
        await t.gate.until_inside(1)
        status, _, body = await t.send("GET", PIZZAS, {})
        assert (status, body["reason"]) == (401, "Unauthorized")
        await t.release()


def _inflight(metrics: Metrics) -> dict[str, float]:
    values: dict[str, float] = {}
    for family in metrics.registry.collect():
        if family.name == INFLIGHT_METRIC:
            values.update({s.labels["request_kind"]: s.value for s in family.samples})
    return values


async def test_inflight_gauge_reports_the_maximum_of_the_last_second(throttled: MakeThrottled) -> None:
    metrics = Metrics()
    now = [100.0]  # a clock the test moves, so the one-second windows are not a race
    async with throttled(5, 5, metrics, lambda: now[0]) as t:
        for _ in range(3):
            t.send("GET", PIZZAS)
        t.send("POST", PIZZAS)
        await t.gate.until_inside(4)
        assert _inflight(metrics) == {"readOnly": 0, "mutating": 0}  # the second is not over yet
        now[0] = 101.0
        assert _inflight(metrics) == {"readOnly": 3, "mutating": 1}
        assert _codes(await t.release()) == [200] * 4
        now[0] = 102.0
        # Only the exits were seen in that second: 2, 1, 0 read-only and 0 mutating in flight.
        assert _inflight(metrics) == {"readOnly": 2, "mutating": 0}
    body, _ = metrics.render()
    assert b"# TYPE apiserver_current_inflight_requests gauge" in body
    assert b'apiserver_current_inflight_requests{request_kind="readOnly"} 2.0' in body


def test_inflight_gauge_rolls_over_like_kubes_per_second_reset() -> None:
    now = [100.0]
    watermark = InflightWatermark(lambda: now[0])
    watermark.record("readOnly", 1)
    watermark.record("readOnly", 2)
    watermark.record("mutating", 1)
    watermark.record("readOnly", 1)
    assert watermark.published() == {"readOnly": 0, "mutating": 0}  # the first second is not over
    now[0] = 101.2
    assert watermark.published() == {"readOnly": 2, "mutating": 1}
    watermark.record("readOnly", 0)
    now[0] = 102.1
    assert watermark.published() == {"readOnly": 0, "mutating": 0}  # only the exit (0) was seen
    watermark.record("mutating", 4)
    now[0] = 105.5  # several silent seconds after the one with the record: kube would publish 0
    assert watermark.published() == {"readOnly": 0, "mutating": 0}


def test_one_gauge_per_registry() -> None:
    metrics = Metrics()
    max_in_flight(1, 1, registry=metrics.registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        max_in_flight(1, 1, registry=metrics.registry)
