"""A real HTTPS server running the filter chain, and the certificates to talk to it.

The app under test is the real chain from `build_chain` in front of an echo handler that reports
what the chain established (user, request info), so tests see exactly what a REST handler would.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer

from apis.meta.errors import unauthorized
from apis.meta.user import UserInfo
from server.authn.interface import Authenticator, AuthResult
from server.authz.interface import Authorizer
from server.filters import build_chain, request_info_of, user_of
from server.health import HealthChecks
from server.metrics import Metrics
from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert
from server.serving.tls import build_server_context


@dataclass(frozen=True, slots=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class PKI:
    serving_ca: Path
    serving: Pair
    client_ca: Path
    # Trusted by TLS alongside the client CA, like kube's request-header (front-proxy) CA.
    proxy_ca: Path
    admin: Pair  # CN=admin, O=system:masters
    bob: Pair  # CN=bob, O=restaurant-staff
    proxy_client: Pair  # CN=front-proxy-client, signed by the proxy CA


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    """Generated once per module with the project's own certificate code (synchronous, off any loop)."""
    root = tmp_path_factory.mktemp("pki")
    serving = ensure_self_signed(root / "serving", dns_names=[], ip_addresses=[])
    client_ca, client_ca_key = ensure_client_ca(root / "client")
    proxy_ca, proxy_ca_key = ensure_client_ca(root / "proxy")
    out = root / "issued"
    admin = issue_client_cert(
        client_ca,
        client_ca_key,
        common_name="admin",
        organizations=["system:masters"],
        out_dir=out,
        basename="admin",
    )
    bob = issue_client_cert(
        client_ca,
        client_ca_key,
        common_name="bob",
        organizations=["restaurant-staff"],
        out_dir=out,
        basename="bob",
    )
    proxy_client = issue_client_cert(
        proxy_ca,
        proxy_ca_key,
        common_name="front-proxy-client",
        organizations=[],
        out_dir=out,
        basename="proxy",
    )
    return PKI(
        serving_ca=serving.ca_cert_path,
        serving=Pair(serving.cert_path, serving.key_path),
        client_ca=client_ca,
        proxy_ca=proxy_ca,
        admin=Pair(*admin),
        bob=Pair(*bob),
        proxy_client=Pair(*proxy_client),
    )


@pytest.fixture(scope="module")
def server_tls(pki: PKI) -> ssl.SSLContext:
    return build_server_context(pki.serving.cert, pki.serving.key, [pki.client_ca, pki.proxy_ca])


def client_tls(pki: PKI, pair: Pair | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.serving_ca))
    if pair is not None:
        context.load_cert_chain(pair.cert, pair.key)
    return context


@pytest.fixture(scope="module")
def tls_clients(pki: PKI) -> dict[str, ssl.SSLContext]:
    """Client TLS contexts by who they present: nobody, admin, bob, the front proxy."""
    return {
        "nobody": client_tls(pki, None),
        "admin": client_tls(pki, pki.admin),
        "bob": client_tls(pki, pki.bob),
        "proxy": client_tls(pki, pki.proxy_client),
    }


async def echo(request: web.Request) -> web.Response:
    """Reports what the chain established, as a handler would see it."""
    user = user_of(request)
    info = request_info_of(request)
    return web.json_response(
        {
            "user": user.to_dict() if user else None,
            "verb": info.verb,
            "resource": info.resource,
            "name": info.name,
        }
    )


def build_app(
    *,
    authenticator: Authenticator,
    authorizer: Authorizer,
    metrics: Metrics | None = None,
    routes: Sequence[web.RouteDef] = (),
    api_audiences: Sequence[str] = (),
) -> web.Application:
    app = web.Application(
        middlewares=build_chain(
            authenticator=authenticator,
            authorizer=authorizer,
            metrics=metrics or Metrics(),
            api_audiences=api_audiences,
        )
    )
    app.add_routes([*HealthChecks().routes(), *routes, web.route("*", "/{tail:.*}", echo)])
    return app


@asynccontextmanager
async def running(app: web.Application, tls: ssl.SSLContext | None = None) -> AsyncIterator[TestServer]:
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server(ssl=tls)
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def session() -> AsyncIterator[ClientSession]:
    async with ClientSession() as client:
        yield client


class HeaderAuthenticator:
    """A token-like authenticator for tests: `X-Test-User: name[;group,group][;aud]`, "bad" is invalid.

    A real implementation of the Authenticator protocol (not a mock), standing in for bearer tokens
    so that chain behaviour can be checked without TLS.
    """

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        value = request.headers.get("X-Test-User")
        if value is None:
            return None
        if value == "bad":
            raise unauthorized()
        name, _, rest = value.partition(";")
        groups, _, audience = rest.partition(";")
        return AuthResult(
            UserInfo(name, groups=tuple(g for g in groups.split(",") if g)),
            (audience,) if audience else (),
        )


# Helpers as fixtures, so test modules need no imports from this conftest.
MakeApp = Callable[..., web.Application]
Serve = Callable[..., AbstractAsyncContextManager[TestServer]]


@pytest.fixture
def make_app() -> MakeApp:
    return build_app


@pytest.fixture
def serve() -> Serve:
    return running


@pytest.fixture
def header_authenticator() -> Authenticator:
    return HeaderAuthenticator()
