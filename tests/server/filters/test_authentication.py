"""Authentication over real HTTPS with client certificates, and the union/anonymous/group-adder rules."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from aiohttp import ClientSession, web
from aiohttp.test_utils import TestClient, TestServer

from server.authn import X509Authenticator, build_authenticator, standalone_authenticator
from server.authn.interface import Authenticator
from server.authz import build_authorizer
from server.serving.certs import load_ca_bundle

if TYPE_CHECKING:
    from tests.server.filters.conftest import PKI

# Fixture types (the fixtures live in conftest.py).
MakeApp = Callable[..., web.Application]
AiohttpClient = Callable[..., Awaitable[TestClient]]
Serve = Callable[..., AbstractAsyncContextManager[TestServer]]

PIZZAS = "/apis/restaurant.programming-kubernetes.info/v1alpha1/namespaces/default/pizzas"
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


async def test_standalone_over_tls(
    make_app: MakeApp,
    serve: Serve,
    session: ClientSession,
    server_tls: ssl.SSLContext,
    tls_clients: dict[str, ssl.SSLContext],
) -> None:
    app = make_app(authenticator=standalone_authenticator(), authorizer=build_authorizer())
    async with serve(app, server_tls) as server:
        url = str(server.make_url(PIZZAS))

        # No certificate: 401 Status.
        async with session.get(url, ssl=tls_clients["nobody"]) as response:
            assert response.status == 401
            assert response.headers["Content-Type"] == "application/json"
            assert await response.json() == UNAUTHORIZED

        # Admin certificate (O=system:masters): authenticated and allowed.
        async with session.get(url, ssl=tls_clients["admin"]) as response:
            assert response.status == 200
            body = await response.json()
        assert body["user"] == {"username": "admin", "groups": ["system:masters", "system:authenticated"]}
        assert (body["verb"], body["resource"]) == ("list", "pizzas")

        # A certificate outside system:masters: authenticated, then forbidden.
        async with session.get(url, ssl=tls_clients["bob"]) as response:
            assert response.status == 403
            status = await response.json()
        assert status["message"] == (
            "pizzas.restaurant.programming-kubernetes.info is forbidden: "
            'User "bob" cannot list resource "pizzas" in API group '
            '"restaurant.programming-kubernetes.info" in the namespace "default"'
        )

        # Health probes carry no credentials; anonymous is allowed there even with anonymous off.
        async with session.get(str(server.make_url("/healthz")), ssl=tls_clients["nobody"]) as response:
            assert (response.status, await response.text()) == (200, "ok")
        async with session.get(
            str(server.make_url("/readyz?verbose")), ssl=tls_clients["nobody"]
        ) as response:
            assert response.status == 200
        # ...but only there: other non-resource paths still need credentials.
        async with session.get(str(server.make_url("/version")), ssl=tls_clients["nobody"]) as response:
            assert response.status == 401
        # A health sub-path authenticates as anonymous but is not in the always-allow list (kube's default).
        async with session.get(str(server.make_url("/readyz/ping")), ssl=tls_clients["nobody"]) as response:
            assert response.status == 403
            assert (await response.json())["message"] == (
                'forbidden: User "system:anonymous" cannot get path "/readyz/ping"'
            )


async def test_anonymous_enabled_is_forbidden_not_unauthorized(
    make_app: MakeApp,
    serve: Serve,
    session: ClientSession,
    server_tls: ssl.SSLContext,
    tls_clients: dict[str, ssl.SSLContext],
) -> None:
    app = make_app(authenticator=standalone_authenticator(anonymous=True), authorizer=build_authorizer())
    async with serve(app, server_tls) as server:
        response = await session.get(str(server.make_url(PIZZAS)), ssl=tls_clients["nobody"])
        assert response.status == 403
        assert (await response.json())["message"].endswith(
            'User "system:anonymous" cannot list resource "pizzas" in API group '
            '"restaurant.programming-kubernetes.info" in the namespace "default"'
        )


async def test_x509_only_trusts_the_client_ca(
    make_app: MakeApp,
    serve: Serve,
    pki: PKI,
    session: ClientSession,
    server_tls: ssl.SSLContext,
    tls_clients: dict[str, ssl.SSLContext],
) -> None:
    """TLS trusts client and front-proxy CAs alike; the x509 authenticator only the client CA."""
    client_cas = load_ca_bundle(pki.client_ca)
    authenticator = build_authenticator([X509Authenticator(lambda: client_cas)], anonymous=True)
    app = make_app(authenticator=authenticator, authorizer=build_authorizer())
    async with serve(app, server_tls) as server:
        url = str(server.make_url(PIZZAS))
        async with session.get(url, ssl=tls_clients["proxy"]) as response:
            # An invalid credential is 401 even though anonymous is on (fail-on-error union).
            assert response.status == 401
            assert await response.json() == UNAUTHORIZED
        async with session.get(url, ssl=tls_clients["admin"]) as response:
            assert response.status == 200
        # Without the CA restriction the proxy certificate would be a user of its own.
        lenient = make_app(authenticator=standalone_authenticator(), authorizer=build_authorizer())
        async with serve(lenient, server_tls) as other:
            response = await session.get(str(other.make_url(PIZZAS)), ssl=tls_clients["proxy"])
            assert response.status == 403
            assert 'User "front-proxy-client"' in (await response.json())["message"]


async def test_plain_http_has_no_certificate(make_app: MakeApp, aiohttp_client: AiohttpClient) -> None:
    client = await aiohttp_client(
        make_app(authenticator=standalone_authenticator(), authorizer=build_authorizer())
    )
    assert (await client.get(PIZZAS)).status == 401
    assert (await client.get("/livez")).status == 200


async def test_union_first_success_wins_after_errors(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    """kube's union.New: an error does not stop later authenticators; it surfaces only if all fail."""
    authenticator = build_authenticator([X509Authenticator(), header_authenticator], anonymous=False)
    client = await aiohttp_client(make_app(authenticator=authenticator, authorizer=build_authorizer()))

    ok = await client.get(PIZZAS, headers={"X-Test-User": "carol;system:masters"})
    assert ok.status == 200
    assert (await ok.json())["user"]["groups"] == ["system:masters", "system:authenticated"]

    bad = await client.get(PIZZAS, headers={"X-Test-User": "bad"})
    assert bad.status == 401
    assert await bad.json() == UNAUTHORIZED


async def test_bad_credential_is_401_even_with_anonymous(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    authenticator = build_authenticator([header_authenticator], anonymous=True)
    client = await aiohttp_client(make_app(authenticator=authenticator, authorizer=build_authorizer()))
    assert (await client.get("/healthz", headers={"X-Test-User": "bad"})).status == 401
    assert (await client.get("/healthz")).status == 200


async def test_group_adder_keeps_existing_markers(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    authenticator = build_authenticator([header_authenticator], anonymous=False)
    client = await aiohttp_client(make_app(authenticator=authenticator, authorizer=build_authorizer()))
    already = await client.get(PIZZAS, headers={"X-Test-User": "dave;system:masters,system:authenticated"})
    assert (await already.json())["user"]["groups"] == ["system:masters", "system:authenticated"]
    # A user named system:anonymous never becomes authenticated.
    anon = await client.get(PIZZAS, headers={"X-Test-User": "system:anonymous;system:masters"})
    assert (await anon.json())["user"]["groups"] == ["system:masters"]


async def test_audiences_must_intersect(
    make_app: MakeApp, aiohttp_client: AiohttpClient, header_authenticator: Authenticator
) -> None:
    authenticator = build_authenticator([header_authenticator], anonymous=False)
    app = make_app(authenticator=authenticator, authorizer=build_authorizer(), api_audiences=["pizza-api"])
    client = await aiohttp_client(app)
    assert (await client.get(PIZZAS, headers={"X-Test-User": "erin;system:masters;pizza-api"})).status == 200
    assert (await client.get(PIZZAS, headers={"X-Test-User": "erin;system:masters;other-api"})).status == 401
    # A credential without audiences is acceptable to any server.
    assert (await client.get(PIZZAS, headers={"X-Test-User": "erin;system:masters"})).status == 200
