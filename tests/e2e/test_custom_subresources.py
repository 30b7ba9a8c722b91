"""pizzas/bill and pizzas/oven with real clients: kubectl (HTTP/2 to the server, HTTP/1.1 through the
aggregator stand-in), the Python `kubernetes` client, and a WebSocket client through the aggregator,
under RBAC that treats `pizzas/bill` as a resource of its own (SubjectAccessReview).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes
import pytest

from tests.fixtures.front_proxy import ProxiedServer, proxied_server
from tests.fixtures.server import running_server

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
PIZZA = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas/hawaii"
ADMIN = ("alice", ["system:masters"])
BOB = ("bob", ["staff"])
WAIT = 60.0
OBJECTS = f"""
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: ham}}
spec: {{cost: 2}}
---
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: pineapple}}
spec: {{cost: 1.25}}
---
apiVersion: {GROUP}/v1beta1
kind: Pizza
metadata: {{name: hawaii, namespace: default}}
spec:
  replicas: 1
  toppings: [{{name: ham, quantity: 2}}, {{name: pineapple, quantity: 1}}]
"""
BILL = {
    "apiVersion": f"{GROUP}/v1beta1",
    "kind": "Bill",
    "metadata": {"name": "hawaii", "namespace": "default"},
    "lines": [
        {"topping": "ham", "quantity": 2, "unitCost": 2, "cost": 4},
        {"topping": "pineapple", "quantity": 1, "unitCost": 1.25, "cost": 1.25},
    ],
    "total": 5.25,
    "complete": True,
}


def bob_rbac(spec: dict[str, Any]) -> dict[str, Any]:
    """Bob may read pizzas and follow their oven, not read their bill; discovery is open to all."""
    if "nonResourceAttributes" in spec:
        return {"allowed": True, "reason": "system:discovery"}
    attrs = spec["resourceAttributes"]
    if spec["user"] != "bob" or attrs.get("group") != GROUP or attrs["verb"] not in ("get", "list", "watch"):
        return {"allowed": False}
    allowed = (attrs["resource"], attrs.get("subresource", "")) in (("pizzas", ""), ("pizzas", "oven"))
    return (
        {"allowed": allowed, "reason": 'RBAC: allowed by ClusterRoleBinding "bob"'}
        if allowed
        else {"allowed": False}
    )


async def _kubectl_follow(env: dict[str, str], path: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "kubectl",
        "get",
        "--raw",
        path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    async with asyncio.timeout(WAIT):
        return (await process.stdout.readline()).decode().rstrip("\n")


async def _finish(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    try:
        async with asyncio.timeout(WAIT):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    return process.returncode or 0, out.decode(), err.decode()


async def test_kubectl_raw_bill_and_followed_oven_over_http2(tmp_path: Path) -> None:
    """kubectl talks HTTP/2 to the server (ALPN h2): the followed log streams over it until deletion."""
    async with running_server(tmp_path / "data") as server:
        env = {**os.environ, "KUBECONFIG": str(server.kubeconfig), "HOME": str(tmp_path)}
        manifest = tmp_path / "objects.yaml"
        manifest.write_text(OBJECTS)

        async def kubectl(*args: str) -> str:
            process = await asyncio.create_subprocess_exec(
                "kubectl", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            code, out, err = await _finish(process)
            assert code == 0, (args, err)
            return out

        await kubectl("apply", "-f", str(manifest))
        assert json.loads(await kubectl("get", "--raw", PIZZA + "/bill")) == BILL
        follow = await _kubectl_follow(env, PIZZA + "/oven?follow=true")
        try:
            assert await _line(follow) == "created: spec.replicas=1"
            await kubectl("scale", "pizza", "hawaii", "--replicas=4")
            assert await _line(follow) == "spec.replicas changed: 1 -> 4"
            await kubectl("delete", "pizza", "hawaii")
            code, out, err = await _finish(follow)
            assert (code, out) == (0, ""), err
        finally:
            if follow.returncode is None:
                follow.kill()
                await follow.wait()


def _client_ssl(cluster: ProxiedServer, user: str, groups: list[str]) -> ssl.SSLContext:
    """The TLS of `user`'s kubeconfig for the aggregator (its certificate, issued beside it)."""
    cluster.kubeconfig(user, groups)
    context = ssl.create_default_context(cafile=str(cluster.proxy_ca))
    context.load_cert_chain(cluster.root / "users" / f"{user}.crt", cluster.root / "users" / f"{user}.key")
    return context


def _python_client_reads(kubeconfig: Path) -> tuple[Any, str]:
    """The bill and the oven log as the `kubernetes` client's ApiClient reads a path it has no API for."""
    client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    try:

        def call(path: str, accept: str) -> Any:
            request = client.param_serialize(
                "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"]
            )
            response = client.call_api(*request, _request_timeout=WAIT)
            response.read()
            return response

        bill = client.response_deserialize(call(PIZZA + "/bill", "application/json"), {"200": "object"}).data
        return bill, call(PIZZA + "/oven", "*/*").data.decode()
    finally:
        client.close()


async def test_behind_the_aggregator(tmp_path: Path) -> None:
    async with proxied_server(tmp_path, bob_rbac) as cluster:
        manifest = tmp_path / "objects.yaml"
        manifest.write_text(OBJECTS)
        code, _, err = await cluster.kubectl(*ADMIN, "apply", "-f", str(manifest))
        assert code == 0, err

        # kubectl --raw and the Python client read the bill through the aggregator.
        code, out, err = await cluster.kubectl(*ADMIN, "get", "--raw", PIZZA + "/bill")
        assert code == 0, err
        assert json.loads(out) == BILL
        bill, log = await asyncio.to_thread(_python_client_reads, cluster.kubeconfig(*ADMIN))
        assert bill == BILL
        assert log == "created: spec.replicas=1\n"

        # RBAC: pizzas/bill is a resource of its own; bob may get pizzas but not their bill.
        code, out, err = await cluster.kubectl(*BOB, "get", "pizza", "hawaii", "-o", "name")
        assert code == 0, err
        code, out, err = await cluster.kubectl(*BOB, "get", "--raw", PIZZA + "/bill")
        assert code != 0
        assert "forbidden" in err.lower(), err
        reviews = [
            r["spec"]["resourceAttributes"]
            for r in cluster.plane.access_reviews
            if r["spec"]["user"] == "bob" and "resourceAttributes" in r["spec"]
        ]
        assert {
            "namespace": "default",
            "verb": "get",
            "group": GROUP,
            "version": "v1beta1",
            "resource": "pizzas",
            "subresource": "bill",
            "name": "hawaii",
        }.items() <= next(r for r in reviews if r.get("subresource") == "bill").items()

        # kubectl follows the oven log through the aggregator (HTTP/1.1) while the pizza changes.
        env = {
            **os.environ,
            "KUBECONFIG": str(cluster.kubeconfig(*ADMIN)),
            "KUBECACHEDIR": str(tmp_path / "cache-follow"),
            "HOME": str(tmp_path),
        }
        follow = await _kubectl_follow(env, PIZZA + "/oven?follow=true")
        try:
            assert await _line(follow) == "created: spec.replicas=1"

            # Bob follows it too, over a WebSocket through the aggregator, authorized as `get pizzas/oven`.
            url = cluster.proxy_url + PIZZA + "/oven?follow=true"
            connector = aiohttp.TCPConnector(ssl=_client_ssl(cluster, *BOB))
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                session.ws_connect(url, protocols=("v5.channel.k8s.io",)) as ws,
            ):
                async with asyncio.timeout(WAIT):
                    assert ws.protocol == "v5.channel.k8s.io"
                    assert await ws.receive_bytes() == b"\x01"
                    assert await ws.receive_bytes() == b"\x01created: spec.replicas=1\n"
                    code, _, err = await cluster.kubectl(*ADMIN, "scale", "pizza", "hawaii", "--replicas=3")
                    assert code == 0, err
                    assert await ws.receive_bytes() == b"\x01spec.replicas changed: 1 -> 3\n"
                    assert await _line(follow) == "spec.replicas changed: 1 -> 3"
                    code, _, err = await cluster.kubectl(*ADMIN, "delete", "pizza", "hawaii")
                    assert code == 0, err
                    assert await ws.receive_bytes() == b'\x03{"metadata":{},"status":"Success"}'
                    assert (await ws.receive()).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            code, out, err = await _finish(follow)
            assert (code, out) == (0, ""), err
        finally:
            if follow.returncode is None:
                follow.kill()
                await follow.wait()
        oven_reviews = [
            r["spec"]["resourceAttributes"]
            for r in cluster.plane.access_reviews
            if r["spec"]["user"] == "bob"
            and r["spec"].get("resourceAttributes", {}).get("subresource") == "oven"
        ]
        assert oven_reviews and all(r["verb"] == "get" for r in oven_reviews)
