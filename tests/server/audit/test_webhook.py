"""The webhook backend against a real HTTPS receiver: batches, client certs, slow receivers, retries, loss."""

from __future__ import annotations

import asyncio
import base64
import shutil
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer

from server.authn.x509 import peer_certificate
from server.serving.certs import ensure_client_ca, issue_client_cert, peer_identity
from server.serving.tls import build_server_context

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1alpha1/namespaces/default/pizzas"
# Each test finishes well inside this; it only keeps a broken build from hanging the run.
HANG_GUARD = 30.0


@dataclass
class Receiver:
    """An audit webhook service: stores EventLists, can hold requests at a gate or fail the first few."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    fail_first: int = 0
    attempts: int = 0
    batches: list[dict[str, Any]] = field(default_factory=list)
    clients: list[str] = field(default_factory=list)
    content_types: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.gate.set()

    async def handle(self, request: web.Request) -> web.Response:
        self.attempts += 1
        self.arrived.set()
        await self.gate.wait()
        if self.fail_first > 0:
            self.fail_first -= 1
            return web.json_response({"error": "try again"}, status=500)
        der = peer_certificate(request)
        self.clients.append(peer_identity(der)[0] if der else "")
        self.content_types.append(request.headers.get("Content-Type", ""))
        self.batches.append(await request.json())
        return web.json_response({})

    @property
    def items(self) -> list[dict[str, Any]]:
        return [item for batch in self.batches for item in batch["items"]]


@pytest.fixture
async def receiver(tmp_path: Path, pki: Any) -> AsyncIterator[tuple[Receiver, Path]]:
    """A receiver over HTTPS that trusts the client CA, and a kubeconfig pointing the server at it."""
    client_ca, client_ca_key = ensure_client_ca(tmp_path / "webhook-ca")
    cert, key = issue_client_cert(
        client_ca,
        client_ca_key,
        common_name="audit-client",
        organizations=[],
        out_dir=tmp_path,
        basename="wh",
    )
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/audit", receiver.handle)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server(ssl=build_server_context(pki.serving.cert, pki.serving.key, [client_ca]))
    config_dir = tmp_path / "webhook"
    config_dir.mkdir()
    shutil.copy(pki.serving_ca, config_dir / "ca.crt")
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "receiver",
                # A relative path is taken relative to the kubeconfig, as clientcmd does.
                "cluster": {"server": str(server.make_url("/audit")), "certificate-authority": "ca.crt"},
            }
        ],
        "users": [
            {
                "name": "apiserver",
                "user": {
                    "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                    "client-key-data": base64.b64encode(key.read_bytes()).decode(),
                },
            }
        ],
        "contexts": [{"name": "webhook", "context": {"cluster": "receiver", "user": "apiserver"}}],
        "current-context": "webhook",
    }
    path = config_dir / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(kubeconfig))
    try:
        yield receiver, path
    finally:
        receiver.gate.set()
        await server.close()


def webhook_flags(kubeconfig: Path, **overrides: Any) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "audit_webhook_config_file": kubeconfig,
        "audit_webhook_batch_throttle_enable": False,
        "audit_webhook_initial_backoff": 0.01,
    }
    return {**flags, **overrides}


async def get_pizzas(session: ClientSession, a: Any, tls: dict[str, ssl.SSLContext], n: int) -> list[str]:
    ids = []
    for _ in range(n):
        async with session.get(a.url(PIZZAS), ssl=tls["admin"]) as response:
            assert response.status == 200
            ids.append(response.headers["Audit-ID"])
    return ids


async def test_batched_event_lists_over_https(
    receiver: tuple[Receiver, Path], audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rx, kubeconfig = receiver
    flags = webhook_flags(kubeconfig, audit_webhook_batch_max_size=4)
    async with audited([{"level": "Metadata"}], log=False, **flags) as a:
        ids = await get_pizzas(session, a, tls, 5)
    # Shutdown flushed the last partial batch; the batch wait (30 s by default) played no part.
    assert sorted(len(b["items"]) for b in rx.batches) == [2, 4, 4]
    for batch in rx.batches:
        assert batch["kind"] == "EventList"
        assert batch["apiVersion"] == "audit.k8s.io/v1"
        assert batch["metadata"] == {}
        assert all("kind" not in item and "apiVersion" not in item for item in batch["items"])
    assert sorted((i["auditID"], i["stage"]) for i in rx.items) == sorted(
        (i, s) for i in ids for s in ("RequestReceived", "ResponseComplete")
    )
    assert rx.clients == ["audit-client"] * 3  # the kubeconfig's client certificate was presented
    assert set(rx.content_types) == {"application/json"}


async def test_slow_receiver_never_blocks_requests(
    receiver: tuple[Receiver, Path], audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rx, kubeconfig = receiver
    rx.gate.clear()
    flags = webhook_flags(kubeconfig, audit_webhook_batch_max_size=1)
    async with audited([{"level": "RequestResponse"}], log=False, **flags) as a:
        first = await get_pizzas(session, a, tls, 1)
        await asyncio.wait_for(rx.arrived.wait(), HANG_GUARD)
        # The receiver holds every POST at its gate; requests go on regardless.
        more = await asyncio.wait_for(get_pizzas(session, a, tls, 5), HANG_GUARD)
        assert rx.batches == []
        assert rx.attempts >= 1
        assert not rx.gate.is_set()
        rx.gate.set()
    # Graceful shutdown waited for the held deliveries: every event arrived.
    assert len(rx.items) == 12
    assert {i["auditID"] for i in rx.items} == {*first, *more}
    assert all(len(b["items"]) == 1 for b in rx.batches)


async def test_failed_posts_are_retried(
    receiver: tuple[Receiver, Path], audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rx, kubeconfig = receiver
    rx.fail_first = 2
    rules = [{"level": "Metadata", "omitStages": ["RequestReceived"]}]
    async with audited(rules, log=False, **webhook_flags(kubeconfig)) as a:
        (audit_id,) = await get_pizzas(session, a, tls, 1)
    assert rx.attempts == 3
    assert [i["auditID"] for i in rx.items] == [audit_id]


async def test_full_buffer_drops_and_logs(
    receiver: tuple[Receiver, Path],
    audited: Any,
    session: ClientSession,
    tls: dict[str, ssl.SSLContext],
    caplog: pytest.LogCaptureFixture,
) -> None:
    rx, kubeconfig = receiver
    # One batch may leave now, the next only in ~17 minutes: the small buffer fills and overflows.
    flags = webhook_flags(
        kubeconfig,
        audit_webhook_batch_max_size=1,
        audit_webhook_batch_buffer_size=3,
        audit_webhook_batch_throttle_enable=True,
        audit_webhook_batch_throttle_qps=0.001,
        audit_webhook_batch_throttle_burst=1,
    )
    async with audited([{"level": "Metadata"}], log=False, **flags) as a:
        await get_pizzas(session, a, tls, 6)  # 12 events; all requests succeed
    dropped = caplog.text.count("audit buffer queue blocked")
    assert dropped >= 1
    assert "Error in audit plugin 'buffered<webhook>' affecting" in caplog.text
    # Shutdown does not wait out the throttle: what was buffered is delivered, the rest was dropped.
    assert len(rx.items) + dropped == 12
    assert len(rx.items) >= 4  # the first batch plus the full buffer


async def test_blocking_mode_waits_for_delivery(
    receiver: tuple[Receiver, Path], audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rx, kubeconfig = receiver
    flags = webhook_flags(kubeconfig, audit_webhook_mode="blocking")
    async with audited([{"level": "Metadata"}], log=False, **flags) as a:
        (audit_id,) = await get_pizzas(session, a, tls, 1)
        # Delivered before the response was sent: no shutdown needed to see it.
        assert [(i["auditID"], i["stage"]) for i in rx.items] == [
            (audit_id, "RequestReceived"),
            (audit_id, "ResponseComplete"),
        ]
        assert [len(b["items"]) for b in rx.batches] == [1, 1]


async def test_blocking_strict_fails_requests_it_cannot_audit(
    receiver: tuple[Receiver, Path], audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rx, kubeconfig = receiver
    rx.fail_first = 1000
    flags = webhook_flags(
        kubeconfig, audit_webhook_mode="blocking-strict", audit_webhook_initial_backoff=0.001
    )
    async with (
        audited([{"level": "Metadata"}], log=False, **flags) as a,
        session.get(a.url(PIZZAS), ssl=tls["admin"]) as response,
    ):
        assert response.status == 500
        status = await response.json()
    assert status["message"] == "Internal error occurred: failed to store audit event"
    assert rx.attempts == 5  # kube's backoff: five attempts in all


async def test_log_and_webhook_together(
    receiver: tuple[Receiver, Path], audited: Any, session: ClientSession, tls: dict[str, ssl.SSLContext]
) -> None:
    rx, kubeconfig = receiver
    async with audited([{"level": "Request"}], **webhook_flags(kubeconfig)) as a:
        ids = await get_pizzas(session, a, tls, 3)
    logged = [(e["auditID"], e["stage"]) for e in a.events()]
    assert logged == [(i, s) for i in ids for s in ("RequestReceived", "ResponseComplete")]
    assert sorted((i["auditID"], i["stage"]) for i in rx.items) == sorted(logged)
