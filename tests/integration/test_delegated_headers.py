"""What the handlers see behind the chain of a delegating server: no credentials, and the right users.

The server's real configuration (`build_config` against the fake control plane) and the real chain
(`build_chain`), in front of an echo handler instead of the REST handlers, over real HTTPS. An outer
middleware stands where the audit filter sits and reports what it can read once the request is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler

from server.config import Config, build_config
from server.filters import build_chain, user_of
from server.metrics import Metrics
from server.options import parse_args
from server.request_state import AUDIT_ANNOTATIONS, IMPERSONATED_BY, USER
from server.serving.connection_buffers import TLSSite
from tests.fixtures.control_plane import (
    IO_TIMEOUT,
    ControlPlane,
    Pair,
    allow_all,
    control_plane_fixture,  # noqa: F401 - provides the control_plane fixture
)
from tests.fixtures.server import server_args

ECHO = "/apis/restaurant.programming-kubernetes.info/v1beta1/namespaces/default/pizzas"


async def echo(request: web.Request) -> web.Response:
    user = user_of(request)
    return web.json_response({"headers": dict(request.headers), "user": user.to_dict() if user else None})


@contextlib.asynccontextmanager
async def echo_server(plane: ControlPlane, data_dir: Path) -> AsyncIterator[tuple[str, Config, list[dict]]]:
    kubeconfig = str(plane.kubeconfig)
    argv = server_args(
        data_dir, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig
    )
    config = await build_config(parse_args(argv).complete())
    seen: list[dict[str, Any]] = []

    @web.middleware
    async def outer(request: web.Request, handler: Handler) -> web.StreamResponse:
        """Where audit sits: it holds the request object authentication was given."""
        response = await handler(request)
        by = request.get(IMPERSONATED_BY)
        seen.append(
            {
                "annotations": dict(request.get(AUDIT_ANNOTATIONS) or {}),
                "user": request[USER].name if USER in request else None,
                "impersonated_by": by.name if by else None,
            }
        )
        return response

    security = config.security
    chain = build_chain(
        authenticator=security.authentication.authenticator,
        authorizer=security.authorizer,
        metrics=Metrics(),
        credential_headers=security.authentication.credential_headers,
    )
    # `outer` just before impersonation, where audit is.
    at = next(
        i for i, m in enumerate(chain) if getattr(m, "__module__", "") == "server.filters.impersonation"
    )
    app = web.Application(middlewares=[*chain[:at], outer, *chain[at:]])
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    try:
        await runner.setup()
        site = TLSSite(runner, "127.0.0.1", 0, ssl_context=config.tls.listening_context)
        await site.start()
        yield f"https://127.0.0.1:{runner.addresses[0][1]}", config, seen
    finally:
        await runner.cleanup()
        await config.close()


async def get(url: str, config: Config, cert: Pair | None, headers: dict[str, str]) -> tuple[int, Any]:
    assert config.certs.ca_path is not None
    context = ssl.create_default_context(cafile=str(config.certs.ca_path))
    if cert is not None:
        context.load_cert_chain(cert.cert, cert.key)
    async with (
        asyncio.timeout(IO_TIMEOUT),
        aiohttp.ClientSession() as session,
        session.get(url + ECHO, ssl=context, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_credentials_never_reach_the_handler(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    plane.tokens["tok"] = {"username": "tina"}
    async with echo_server(plane, tmp_path / "data") as (url, config, seen):
        proxied = {
            "X-Remote-User": "alice",
            "X-Remote-Group": "cooks",
            "X-Remote-Extra-Scopes": "pizza",
            "X-Remote-Uid": "7",
            "X-Other": "kept",
        }
        status, body = await get(url, config, plane.pki.front_proxy_client, proxied)
        assert status == 200, body
        assert body["user"]["username"] == "alice"
        assert not [h for h in body["headers"] if h.lower().startswith("x-remote-")]
        assert body["headers"]["X-Other"] == "kept"

        status, body = await get(
            url, config, None, {"Authorization": "Bearer tok", "X-Remote-User": "mallory"}
        )
        assert status == 200 and body["user"]["username"] == "tina"
        assert "Authorization" not in body["headers"] and "X-Remote-User" not in body["headers"]

        # The decision reaches the filter outside as audit annotations.
        assert seen[-1]["annotations"] == {
            "authorization.k8s.io/decision": "allow",
            "authorization.k8s.io/reason": "test allows everything",
        }


async def test_impersonation_is_visible_outside_and_headers_go(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    plane.tokens["ivan"] = {"username": "ivan"}
    plane.sar_rule = allow_all
    async with echo_server(plane, tmp_path / "data") as (url, config, seen):
        headers = {"Authorization": "Bearer ivan", "Impersonate-User": "bob", "Impersonate-Extra-Scopes": "x"}
        status, body = await get(url, config, None, headers)
        assert status == 200, body
        assert body["user"] == {
            "username": "bob",
            "groups": ["system:authenticated"],
            "extra": {"scopes": ["x"]},
        }
        assert not [h for h in body["headers"] if h.lower().startswith("impersonate-")]
        assert seen[-1]["user"] == "bob" and seen[-1]["impersonated_by"] == "ivan"
        assert seen[-1]["annotations"]["authorization.k8s.io/decision"] == "allow"

        plane.sar_rule = lambda spec: {"allowed": False, "reason": "not today"}
        status, body = await get(
            url, config, None, {"Authorization": "Bearer ivan", "Impersonate-User": "eve"}
        )
        assert status == 403
        status, body = await get(url, config, None, {"Authorization": "Bearer ivan"})
        assert status == 403
        assert seen[-1]["annotations"] == {
            "authorization.k8s.io/decision": "forbid",
            "authorization.k8s.io/reason": "not today",
        }
