"""Standalone authentication and authorization: client certificates from the server's own client CA."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from server.serving.certs import ensure_client_ca, issue_client_cert

GROUP = "restaurant.programming-kubernetes.info"


async def _issue(server, name: str, groups: list[str]) -> tuple:
    return await asyncio.to_thread(
        issue_client_cert,
        server.cert_dir / "client-ca.crt",
        server.cert_dir / "client-ca.key",
        common_name=name,
        organizations=groups,
        out_dir=server.data_dir.parent / "client-certs",
        basename=name,
    )


async def test_no_client_cert_is_401_status(embedded_server) -> None:
    async with embedded_server.session(admin=False) as s:
        for path in (f"/apis/{GROUP}/v1beta1/toppings", "/apis", "/openapi/v2", "/version"):
            async with s.get(path) as r:
                assert r.status == 401, path
                assert r.headers["Content-Type"] == "application/json"
                body = await r.json()
            assert body == {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Unauthorized",
                "reason": "Unauthorized",
                "code": 401,
            }


async def test_cert_outside_system_masters_is_forbidden(embedded_server) -> None:
    cert = await _issue(embedded_server, "bob", ["developers"])
    async with embedded_server.session(cert=cert) as s:
        async with s.get(f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas") as r:
            assert r.status == 403
            body = await r.json()
        assert body["reason"] == "Forbidden"
        assert body["message"] == (
            f'pizzas.{GROUP} is forbidden: User "bob" cannot list resource "pizzas" in API group '
            f'"{GROUP}" in the namespace "default"'
        )
        assert body["details"] == {"group": GROUP, "kind": "pizzas"}

        async with s.get(f"/apis/{GROUP}/v1beta1/toppings/salami") as r:
            assert r.status == 403
            body = await r.json()
        assert body["message"] == (
            f'toppings.{GROUP} "salami" is forbidden: User "bob" cannot get resource "toppings" in API '
            f'group "{GROUP}" at the cluster scope'
        )
        assert body["details"] == {"name": "salami", "group": GROUP, "kind": "toppings"}

        async with s.get("/apis") as r:
            assert r.status == 403
            assert (await r.json())["message"] == 'forbidden: User "bob" cannot get path "/apis"'

        # Health stays open to everyone who is authenticated, too.
        async with s.get("/healthz") as r:
            assert r.status == 200


async def test_forbidden_write_leaves_nothing(embedded_server) -> None:
    cert = await _issue(embedded_server, "mallory", ["system:authenticated-not-masters"])
    topping = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Topping",
        "metadata": {"name": "t"},
        "spec": {"cost": 1},
    }
    async with (
        embedded_server.session(cert=cert) as s,
        s.post(f"/apis/{GROUP}/v1beta1/toppings", json=topping) as r,
    ):
        assert r.status == 403
    async with embedded_server.session() as s, s.get(f"/apis/{GROUP}/v1beta1/toppings/t") as r:
        assert r.status == 404


async def test_cert_from_another_ca_is_rejected(embedded_server, tmp_path) -> None:
    """A client certificate from another CA fails the TLS handshake, as Go's VerifyClientCertIfGiven does."""
    other_ca = await asyncio.to_thread(ensure_client_ca, tmp_path / "other-ca")
    cert = await asyncio.to_thread(
        issue_client_cert,
        *other_ca,
        common_name="eve",
        organizations=["system:masters"],
        out_dir=tmp_path / "other-ca",
        basename="eve",
    )
    with pytest.raises(aiohttp.ClientError):
        async with embedded_server.session(cert=cert) as s, s.get(f"/apis/{GROUP}/v1beta1/toppings") as r:
            await r.read()
