"""Errors become kube Status responses: StatusError keeps its code, anything unexpected is a 500."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from apis.meta.errors import GroupResource, conflict
from server.authn import build_authenticator
from server.authn.interface import Authenticator
from server.authz import build_authorizer

# Fixture types (the fixtures live in conftest.py).
MakeApp = Callable[..., web.Application]
AiohttpClient = Callable[..., Awaitable[TestClient]]

MASTERS = {"X-Test-User": "admin;system:masters"}


async def _boom(request: web.Request) -> web.Response:
    raise ValueError("secret internals: password=hunter2")


async def _conflict(request: web.Request) -> web.Response:
    raise conflict(GroupResource("restaurant.programming-kubernetes.info", "pizzas"), "hawaii", "stale")


async def _redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound("/elsewhere")


@pytest.fixture
async def client(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> TestClient:
    app = make_app(
        authenticator=build_authenticator([header_authenticator], anonymous=False),
        authorizer=build_authorizer(),
        routes=[web.get("/boom", _boom), web.get("/conflict", _conflict), web.get("/redirect", _redirect)],
    )
    return await aiohttp_client(app)


async def test_unexpected_exception_is_a_500_status(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="server.filters.recovery"):
        response = await client.get("/boom", headers=MASTERS)
    assert response.status == 500
    assert response.headers["Content-Type"] == "application/json"
    message = "This request caused apiserver to panic. Look in the logs for details."
    assert await response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }
    # The details stay in the log, with the traceback.
    (record,) = [r for r in caplog.records if r.name == "server.filters.recovery"]
    assert "GET /boom" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


async def test_status_error_keeps_its_code(client: TestClient) -> None:
    response = await client.get("/conflict", headers=MASTERS)
    assert response.status == 409
    body = await response.json()
    assert (body["reason"], body["message"]) == (
        "Conflict",
        'Operation cannot be fulfilled on pizzas.restaurant.programming-kubernetes.info "hawaii": stale',
    )


async def test_aiohttp_http_exceptions_pass_through(client: TestClient) -> None:
    response = await client.get("/redirect", headers=MASTERS, allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == "/elsewhere"


async def test_bad_request_info_is_a_500_status(client: TestClient) -> None:
    response = await client.get("/api/v1/watch", headers=MASTERS)
    assert response.status == 500
    assert (await response.json())["message"] == (
        "Internal error occurred: failed to create RequestInfo: "
        "unable to determine kind and namespace from url, /api/v1/watch"
    )
