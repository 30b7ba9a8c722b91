"""A real HTTPS server with the real filter chain and audit in kube's places, and its certificates.

Handlers stand in for the REST endpoints but read bodies with the project's own `read_body`/`decode`
(so a test proves they still get the body after audit has seen it) and answer like them (objects
with managedFields, Status errors, a chunked watch stream).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer

from apis.meta.errors import StatusError, success_status
from server.audit.options import AuditOptions
from server.audit.pipeline import AuditPipeline, build_audit
from server.authn import standalone_authenticator
from server.authz import build_authorizer
from server.endpoints.body import decode, read_body
from server.filters import build_chain, request_info_of
from server.filters.audit import audit_response_prepare
from server.health import HealthChecks
from server.metrics import Metrics
from server.responses import object_response
from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert
from server.serving.tls import build_server_context

PIZZAS = "/apis/restaurant.programming-kubernetes.info/v1alpha1/namespaces/default/pizzas"
TOPPINGS = "/apis/restaurant.programming-kubernetes.info/v1alpha1/toppings"
GROUP = "restaurant.programming-kubernetes.info"


@dataclass(frozen=True, slots=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class PKI:
    serving_ca: Path
    serving: Pair
    client_ca: Path
    admin: Pair  # CN=admin, O=system:masters
    bob: Pair  # CN=bob, O=restaurant-staff (authenticated, forbidden on resources)
    carol: Pair  # CN=carol, O=system:masters + auditors


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    root = tmp_path_factory.mktemp("pki")
    serving = ensure_self_signed(root / "serving", dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    client_ca, client_ca_key = ensure_client_ca(root / "client")
    out = root / "issued"

    def issue(name: str, groups: list[str]) -> Pair:
        cert = issue_client_cert(
            client_ca, client_ca_key, common_name=name, organizations=groups, out_dir=out, basename=name
        )
        return Pair(*cert)

    return PKI(
        serving_ca=serving.ca_cert_path,
        serving=Pair(serving.cert_path, serving.key_path),
        client_ca=client_ca,
        admin=issue("admin", ["system:masters"]),
        bob=issue("bob", ["restaurant-staff"]),
        carol=issue("carol", ["system:masters", "auditors"]),
    )


@pytest.fixture(scope="module")
def server_tls(pki: PKI) -> ssl.SSLContext:
    return build_server_context(pki.serving.cert, pki.serving.key, [pki.client_ca])


@pytest.fixture(scope="module")
def tls(pki: PKI) -> dict[str, ssl.SSLContext]:
    """Client TLS contexts by who they present."""

    def context(pair: Pair | None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(pki.serving_ca))
        if pair is not None:
            ctx.load_cert_chain(pair.cert, pair.key)
        return ctx

    return {
        "nobody": context(None),
        "admin": context(pki.admin),
        "bob": context(pki.bob),
        "carol": context(pki.carol),
    }


# --- handlers -------------------------------------------------------------------------------------


def _stored(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {**obj.get("metadata", {}), "uid": "uid-1", "resourceVersion": "7"}
    meta["managedFields"] = [{"manager": "test", "operation": "Update"}]
    return {**obj, "metadata": meta}


async def api(request: web.Request) -> web.StreamResponse:
    """A stand-in REST endpoint: echoes written objects as stored ones, lists, watches, deletes."""
    info = request_info_of(request)
    if info.verb == "watch":
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        event = {"type": "ADDED", "object": _stored({"kind": "Pizza", "metadata": {"name": "w"}})}
        await response.write(orjson.dumps(event) + b"\n")
        if request.query.get("hang"):
            await asyncio.Event().wait()  # until the client leaves or the server stops
        await response.write_eof()
        return response
    if request.method in ("POST", "PUT", "PATCH"):
        media = request.headers.get("Content-Type", "application/json").split(";")[0]
        obj, _ = decode(await read_body(request), "application/yaml" if media.endswith("yaml") else media)
        if obj.get("spec", {}).get("invalid"):
            raise StatusError(422, "Invalid", f'Pizza.{GROUP} "{info.name}" is invalid', {"name": info.name})
        return object_response(_stored(dict(obj)), status=201 if request.method == "POST" else 200)
    if request.method == "DELETE":
        if request.body_exists:
            await read_body(request)
        return object_response(success_status({"name": info.name, "kind": info.resource}))
    if info.name:
        if info.name == "missing":
            raise StatusError(404, "NotFound", f'pizzas.{GROUP} "missing" not found', {"name": "missing"})
        return object_response(
            _stored({"kind": "Pizza", "apiVersion": f"{GROUP}/v1alpha1", "metadata": {"name": info.name}})
        )
    items = [_stored({"metadata": {"name": "a"}}), _stored({"metadata": {"name": "b"}})]
    return object_response(
        {"kind": "PizzaList", "apiVersion": f"{GROUP}/v1alpha1", "metadata": {}, "items": items}
    )


async def panic(request: web.Request) -> web.Response:
    raise RuntimeError("boom")


async def version(request: web.Request) -> web.Response:
    return web.json_response({"major": "1", "minor": "31"})


def make_app(pipeline: AuditPipeline | None) -> web.Application:
    chain = build_chain(
        authenticator=standalone_authenticator(),
        authorizer=build_authorizer(),
        metrics=Metrics(),
        audit=pipeline,
    )
    app = web.Application(middlewares=chain)
    app.on_response_prepare.append(audit_response_prepare)
    app.add_routes(
        [
            *HealthChecks().routes(),
            web.get("/panic", panic),
            web.get("/version", version),
            web.route("*", "/apis/{group}/{version}/{tail:.+}", api),
        ]
    )
    return app


@asynccontextmanager
async def serving(app: web.Application, server_tls: ssl.SSLContext) -> AsyncIterator[TestServer]:
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server(ssl=server_tls)
    try:
        yield server
    finally:
        await server.close()


# --- audited servers ------------------------------------------------------------------------------


@dataclass
class Audited:
    server: TestServer
    pipeline: AuditPipeline
    log: Path

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def write_policy(path: Path, rules: list[dict[str, Any]], **extra: Any) -> Path:
    path.write_text(
        yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules, **extra})
    )
    return path


AuditedFactory = Callable[..., AbstractAsyncContextManager[Audited]]


@pytest.fixture
def audited(tmp_path: Path, server_tls: ssl.SSLContext) -> AuditedFactory:
    """`async with audited(rules, **audit_flags) as a:` — a server auditing to a JSON log in tmp_path."""

    @asynccontextmanager
    async def start(
        rules: list[dict[str, Any]],
        *,
        policy_extra: dict[str, Any] | None = None,
        log: bool = True,
        **flags: Any,
    ) -> AsyncIterator[Audited]:
        policy = write_policy(tmp_path / "policy.yaml", rules, **(policy_extra or {}))
        log_path = tmp_path / "audit" / "audit.log"
        options = AuditOptions(audit_policy_file=policy, audit_log_path=str(log_path) if log else "", **flags)
        assert options.validate() == []
        pipeline = await build_audit(options)
        assert pipeline is not None
        await pipeline.start()
        try:
            async with serving(make_app(pipeline), server_tls) as server:
                yield Audited(server, pipeline, log_path)
        finally:
            await pipeline.shutdown()

    return start


@pytest.fixture
async def session() -> AsyncIterator[ClientSession]:
    async with ClientSession() as client:
        yield client


async def settle() -> None:
    """Let callbacks scheduled by a finished response run (no timing involved)."""
    await asyncio.sleep(0)


# Helpers as fixtures, so test modules need no imports from this conftest.
@pytest.fixture
def audit_app() -> Callable[[AuditPipeline | None], web.Application]:
    """The real chain with audit in place, in front of the stand-in endpoints."""
    return make_app


@pytest.fixture
def serve(server_tls: ssl.SSLContext) -> Callable[[web.Application], AbstractAsyncContextManager[TestServer]]:
    """`async with serve(app) as server:` over real TLS on 127.0.0.1."""
    return lambda app: serving(app, server_tls)
