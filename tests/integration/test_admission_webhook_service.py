"""Webhook `service` clientConfigs over real HTTPS with --enable-aggregator-routing: the service and its
EndpointSlices come from the fake control plane, the call goes to the ready endpoint (a real webhook on
127.0.0.1) with the TLS server name and Host `<name>.<namespace>.svc`, and kube's resolution errors
go through failurePolicy (k8s.io/apiserver pkg/util/proxy.ResolveEndpoint)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fixtures.admission import admission_server, configuration, hook, pizza, pizzas_path, request
from tests.fixtures.control_plane import ControlPlane
from tests.fixtures.control_plane import control_plane_fixture as control_plane_fixture
from tests.fixtures.webhook_server import WebhookServer, allow, deny_with, running_webhook

ROUTING = ("--enable-aggregator-routing", "--disable-admission-plugins", "PizzaToppings")
NAMESPACE, SERVICE = "webhooks", "pizza-hooks"
SERVER_NAME = f"{SERVICE}.{NAMESPACE}.svc"


def service_config(webhook: WebhookServer, port: int = 443, path: str = "/admit") -> dict[str, Any]:
    return {
        "service": {"namespace": NAMESPACE, "name": SERVICE, "path": path, "port": port},
        "caBundle": webhook.ca_bundle,
    }


def publish(plane: ControlPlane, webhook: WebhookServer, endpoints: list[tuple[str, bool | None]]) -> None:
    """The Service (port 443 named https → targetPort 8443) and the slice the controller would write,
    whose port is the webhook's real one on 127.0.0.1."""
    plane.objects.add_service(NAMESPACE, SERVICE, [{"name": "https", "port": 443, "targetPort": 8443}])
    plane.objects.add_endpoint_slice(
        NAMESPACE, SERVICE, f"{SERVICE}-x7k2p", [{"name": "https", "port": webhook.port}], endpoints
    )


async def test_service_hook_reaches_the_ready_endpoint_and_denies(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with running_webhook(tmp_path / "hook", deny_with("no pizzas today"), (SERVER_NAME,)) as webhook:
        # An unready endpoint first (nothing listens there): it must never be picked.
        publish(control_plane, webhook, [("127.0.0.2", False), ("127.0.0.1", True)])
        control_plane.objects.validating.put(
            configuration("deny", hook("deny.example.com", service_config(webhook)))
        )
        async with admission_server(tmp_path / "data", control_plane, *ROUTING) as server:
            for name in ("p1", "p2", "p3"):
                status, body, _ = await request(server, "POST", pizzas_path(), pizza(name))
                assert status == 400, body
                assert (
                    body["message"]
                    == 'admission webhook "deny.example.com" denied the request: no pizzas today'
                )
            status, body, _ = await request(server, "GET", pizzas_path())
            assert status == 200 and body["items"] == [], body
    assert len(webhook.reviews) == 3
    assert webhook.hosts == [f"{SERVER_NAME}:443"] * 3
    assert webhook.queries[0] == {"timeout": "10s"}


async def test_the_certificate_must_name_the_service(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook", allow) as webhook:  # SANs: localhost, 127.0.0.1, ::1
        publish(control_plane, webhook, [("127.0.0.1", True)])
        control_plane.objects.validating.put(
            configuration("v", hook("v.example.com", service_config(webhook)))
        )
        async with admission_server(tmp_path / "data", control_plane, *ROUTING) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 500 and body["reason"] == "InternalError", body
    prefix = (
        'Internal error occurred: failed calling webhook "v.example.com": failed to call webhook: '
        f'Post "https://{SERVER_NAME}:443/admit?timeout=10s": tls: failed to verify certificate: '
    )
    assert body["message"].startswith(prefix), body["message"]
    assert SERVER_NAME in body["message"]
    assert webhook.reviews == []


async def test_unroutable_services_follow_the_failure_policy(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    shown = f"https://{SERVER_NAME}:443/admit?timeout=10s"
    async with running_webhook(tmp_path / "hook", allow, (SERVER_NAME,)) as webhook:
        hooks = {
            "fail": hook("fail.example.com", service_config(webhook), failurePolicy="Fail"),
            "ignore": hook("ignore.example.com", service_config(webhook), failurePolicy="Ignore"),
        }
        control_plane.objects.validating.put(configuration("fail", hooks["fail"]))
        control_plane.objects.mutating.put(configuration("ignore", hooks["ignore"]))
        async with admission_server(tmp_path / "data", control_plane, *ROUTING) as server:

            async def create(name: str) -> tuple[int, Any]:
                status, body, _ = await request(server, "POST", pizzas_path(), pizza(name))
                return status, body

            def failure(reason: str) -> str:
                return (
                    'Internal error occurred: failed calling webhook "fail.example.com": failed to call '
                    f'webhook: Post "{shown}": {reason}'
                )

            # No such service yet.
            status, body = await create("a")
            assert (status, body["message"]) == (500, failure(f'service "{SERVICE}" not found')), body
            # The service, but its only endpoint is not ready.
            publish(control_plane, webhook, [("127.0.0.1", False)])
            status, body = await _eventually_message(
                create, "b", failure(f'no endpoints available for service "{SERVICE}"')
            )
            # A slice whose port has another name than the service's port: no endpoint either.
            control_plane.objects.add_endpoint_slice(
                NAMESPACE,
                SERVICE,
                f"{SERVICE}-x7k2p",
                [{"name": "metrics", "port": webhook.port}],
                [("127.0.0.1", True)],
            )
            status, body = await _eventually_message(
                create, "c", failure(f'no endpoints available for service "{SERVICE}"')
            )
            # An ExternalName service can't be routed to.
            control_plane.objects.add_service(
                NAMESPACE, SERVICE, [{"name": "https", "port": 443}], "ExternalName"
            )
            status, body = await _eventually_message(
                create, "d", failure('unsupported service type "ExternalName"')
            )
            # Ready again: both hooks are called and the create goes through.
            publish(control_plane, webhook, [("127.0.0.1", None)])  # ready unset counts as ready
            status, body = await _eventually_status(create, 201)
    # The Ignore hook was skipped each time its call failed and never reached the webhook before.
    assert len(webhook.reviews) == 2, webhook.reviews


async def test_a_port_the_service_lacks(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "hook", allow, (SERVER_NAME,)) as webhook:
        publish(control_plane, webhook, [("127.0.0.1", True)])
        control_plane.objects.validating.put(
            configuration("v", hook("v.example.com", service_config(webhook, port=8443)))
        )
        async with admission_server(tmp_path / "data", control_plane, *ROUTING) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 500, body
    shown = f"https://{SERVER_NAME}:8443/admit?timeout=10s"
    assert body["message"].endswith(f'Post "{shown}": no service port 8443 found for service "{SERVICE}"'), (
        body
    )


async def _eventually_message(create: Any, name: str, message: str) -> tuple[int, Any]:
    """The server's caches apply control-plane changes asynchronously: retry a few times until the
    answer names the new state (each attempt is a real create that the Fail hook rejects)."""
    for attempt in range(100):
        status, body = await create(f"{name}{attempt}")
        if status == 500 and body.get("message") == message:
            return status, body
        await asyncio.sleep(0.05)
    raise AssertionError(f"never answered {message!r}; last: {status} {body}")


async def _eventually_status(create: Any, code: int) -> tuple[int, Any]:
    for attempt in range(100):
        status, body = await create(f"ok{attempt}")
        if status == code:
            return status, body
        await asyncio.sleep(0.05)
    raise AssertionError(f"never answered {code}; last: {status} {body}")


async def test_without_routing_the_service_name_is_looked_up_by_dns(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The default, as every k8s.io/apiserver-based server: `<name>.<namespace>.svc` through DNS, which
    knows no such name outside a cluster (and no cluster has this one), whatever the control plane says."""
    async with running_webhook(tmp_path / "hook", allow, (SERVER_NAME,)) as webhook:
        publish(control_plane, webhook, [("127.0.0.1", True)])
        control_plane.objects.validating.put(
            configuration("v", hook("v.example.com", service_config(webhook)))
        )
        no_routing = ("--disable-admission-plugins", "PizzaToppings")
        async with admission_server(tmp_path / "data", control_plane, *no_routing) as server:
            status, body, _ = await request(server, "POST", pizzas_path(), pizza("p"))
    assert status == 500, body
    assert body["message"].startswith(
        'Internal error occurred: failed calling webhook "v.example.com": failed to call webhook: '
        f'Post "https://{SERVER_NAME}:443/admit?timeout=10s": dial tcp: lookup {SERVER_NAME}: '
    ), body
    assert webhook.reviews == []
    assert control_plane.calls["services-list"] == 0  # no service informer without the flag
