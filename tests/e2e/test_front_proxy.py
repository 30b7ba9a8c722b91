"""The real kubectl through a front proxy, as kube-aggregator puts one in front of an aggregated server.

The proxy (below, aiohttp over real HTTPS) authenticates kubectl by its client certificate (CN is
the user, O the groups), then forwards each request to the pizza server with the front-proxy client
certificate and X-Remote-User / X-Remote-Group headers. The pizza server delegates to the fake
control plane: it trusts the proxy because the cluster's ConfigMap says so, and asks the cluster
(SubjectAccessReview) what users outside system:masters may do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert, peer_identity
from server.serving.kubeconfig import write_kubeconfig
from tests.fixtures.control_plane import ControlPlane, delegated_server, running_control_plane
from tests.fixtures.server import REPO, RunningServer

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
KUBECTL_TIMEOUT = 60.0
# Hop-by-hop and framing headers are the proxy's own business on each side.
_NOT_FORWARDED = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "te",
        "upgrade",
        "authorization",
    }
)


def rbac(spec: dict[str, Any]) -> dict[str, Any]:
    """The cluster's RBAC for this story: discovery for everyone, cooks may read and create pizzas."""
    if "nonResourceAttributes" in spec:
        return {"allowed": spec["nonResourceAttributes"]["verb"] == "get", "reason": "system:discovery"}
    attrs = spec["resourceAttributes"]
    reads = attrs["verb"] in ("get", "list", "watch")
    creates_pizza = attrs["verb"] == "create" and attrs["resource"] == "pizzas"
    if "cooks" in spec.get("groups", []) and attrs.get("group") == GROUP and (reads or creates_pizza):
        return {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "cooks"'}
    return {"allowed": False}


class FrontProxy:
    """Terminates kubectl's TLS, identifies the user by certificate, forwards with X-Remote-* headers."""

    def __init__(self, upstream: str, upstream_tls: ssl.SSLContext) -> None:
        self._upstream = upstream
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=upstream_tls))

    async def close(self) -> None:
        await self._session.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        der = request.transport.get_extra_info("ssl_object").getpeercert(binary_form=True)
        user, groups = peer_identity(der)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
        # kube-aggregator would impersonate itself and drop Impersonate-*; passing them on lets these tests
        # exercise the server's own impersonation filter through kubectl --as.
        headers = [(k, v) for k, v in headers if not k.lower().startswith("x-remote-")]
        headers += [("X-Remote-User", user), *(("X-Remote-Group", g) for g in groups)]
        body = await request.read()
        async with self._session.request(
            request.method, self._upstream + request.path_qs, headers=headers, data=body or None
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in _NOT_FORWARDED and key.lower() != "content-encoding":
                    response.headers.add(key, value)
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response


@dataclass
class Story:
    plane: ControlPlane
    server: RunningServer
    proxy_url: str
    proxy_ca: Path
    users_ca: tuple[Path, Path]
    root: Path

    async def kubectl(self, user: str, groups: list[str], *args: str) -> tuple[int, str, str]:
        kubeconfig = await asyncio.to_thread(self._kubeconfig, user, groups)
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "KUBECACHEDIR": str(self.root / f"cache-{user}"),
            "HOME": str(self.root),
        }
        process = await asyncio.create_subprocess_exec(
            "kubectl", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            async with asyncio.timeout(KUBECTL_TIMEOUT):
                out, err = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        return process.returncode or 0, out.decode(), err.decode()

    def _kubeconfig(self, user: str, groups: list[str]) -> Path:
        path = self.root / f"{user}.kubeconfig"
        if not path.exists():
            cert, key = issue_client_cert(
                *self.users_ca,
                common_name=user,
                organizations=groups,
                out_dir=self.root / "users",
                basename=user,
            )
            write_kubeconfig(
                path,
                server_url=self.proxy_url,
                ca_cert_path=self.proxy_ca,
                client_cert_path=cert,
                client_key_path=key,
                cluster_name="via-proxy",
                user=user,
            )
        return path


def _proxy_tls(root: Path) -> tuple[ssl.SSLContext, Path, tuple[Path, Path]]:
    serving = ensure_self_signed(root / "proxy-serving", dns_names=[], ip_addresses=[])
    users_ca = ensure_client_ca(root / "proxy-users-ca")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(serving.cert_path, serving.key_path)
    context.load_verify_locations(cafile=users_ca[0])
    context.verify_mode = ssl.CERT_REQUIRED
    return context, serving.ca_cert_path, users_ca


def _upstream_tls(server: RunningServer, plane: ControlPlane) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(server.ca_path))
    context.load_cert_chain(plane.pki.front_proxy_client.cert, plane.pki.front_proxy_client.key)
    return context


@contextlib.asynccontextmanager
async def story(root: Path) -> AsyncIterator[Story]:
    async with running_control_plane(root / "cp") as plane:
        plane.sar_rule = rbac
        async with delegated_server(root / "data", plane) as server:
            tls, proxy_ca, users_ca = await asyncio.to_thread(_proxy_tls, root)
            proxy = FrontProxy(server.url, await asyncio.to_thread(_upstream_tls, server, plane))
            app = web.Application(client_max_size=4 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", proxy.handle)
            runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
            await runner.setup()
            try:
                site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
                await site.start()
                url = f"https://127.0.0.1:{runner.addresses[0][1]}"
                yield Story(plane, server, url, proxy_ca, users_ca, root)
            finally:
                await runner.cleanup()
                await proxy.close()


async def test_kubectl_through_the_front_proxy(tmp_path: Path) -> None:
    async with story(tmp_path) as s:
        # alice is system:masters (a group the proxy asserts): she may do anything, no review needed.
        code, out, err = await s.kubectl("alice", ["system:masters"], "apply", "-f", str(REPO / "examples"))
        assert code == 0, err
        assert f"pizza.{GROUP}/margherita created" in out
        assert f"topping.{GROUP}/salami created" in out
        masters_reviews = [r for r in s.plane.access_reviews if r["spec"]["user"] == "alice"]
        assert masters_reviews == []

        code, out, err = await s.kubectl("alice", ["system:masters"], "get", "pizzas", "-A")
        assert code == 0, err
        assert "margherita" in out.split() and "hawaii" in out.split()

        # carol is a cook: the cluster allows her to read and to create pizzas.
        code, out, err = await s.kubectl("carol", ["cooks"], "get", "pizzas", "-o", "name")
        assert code == 0, err
        assert f"pizza.{GROUP}/margherita" in out.splitlines()
        pizza = {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "Pizza",
            "metadata": {"name": "carols-special", "namespace": "default"},
            "spec": {"toppings": ["tomato", "basil"]},
        }
        manifest = tmp_path / "carols-special.yaml"
        manifest.write_text(yaml.safe_dump(pizza))
        code, out, err = await s.kubectl("carol", ["cooks"], "create", "-f", str(manifest))
        assert code == 0, err
        assert f"pizza.{GROUP}/carols-special created" in out
        carol = [r["spec"] for r in s.plane.access_reviews if r["spec"]["user"] == "carol"]
        assert {"cooks", "system:authenticated"} <= set(carol[-1]["groups"])
        assert carol[-1]["resourceAttributes"]["verb"] == "create"

        # ...but not to delete them.
        code, out, err = await s.kubectl("carol", ["cooks"], "delete", "pizza", "margherita", "--wait=false")
        assert code != 0
        assert "Forbidden" in err and 'User "carol" cannot delete resource "pizzas"' in err, err

        # bob has no rights: kubectl reports Forbidden, and nothing changes.
        code, out, err = await s.kubectl("bob", ["visitors"], "get", "pizzas")
        assert code != 0
        assert "Forbidden" in err and 'User "bob" cannot list resource "pizzas"' in err, err
        code, out, err = await s.kubectl("bob", ["visitors"], "delete", "pizza", "hawaii", "--wait=false")
        assert code != 0 and "Forbidden" in err
        code, out, err = await s.kubectl("alice", ["system:masters"], "get", "pizza", "hawaii", "-o", "name")
        assert code == 0 and out.strip() == f"pizza.{GROUP}/hawaii"


async def test_kubectl_impersonation_through_the_proxy(tmp_path: Path) -> None:
    """`kubectl --as`: the server's impersonation filter asks the cluster, then acts as that user."""
    async with story(tmp_path) as s:
        code, _, err = await s.kubectl("alice", ["system:masters"], "apply", "-f", str(REPO / "examples"))
        assert code == 0, err

        # A cook may not become a master. (With plain `get`, kubectl's discovery would fail first and, as
        # against a real cluster, print only "Forbidden: unknown"; --raw shows the server's message.)
        pizzas = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"
        code, _, err = await s.kubectl(
            "carol", ["cooks"], "get", "--raw", pizzas, "--as=alice", "--as-group=system:masters"
        )
        assert code != 0
        assert 'users "alice" is forbidden: User "carol" cannot impersonate resource "users"' in err, err

        # A master may impersonate anyone, and then has only that user's rights.
        code, _, err = await s.kubectl("alice", ["system:masters"], "delete", "pizza", "hawaii", "--as=bob")
        assert code != 0
        assert 'User "bob" cannot delete resource "pizzas"' in err, err
        code, out, err = await s.kubectl(
            "alice", ["system:masters"], "get", "pizzas", "--as=dan", "--as-group=cooks"
        )
        assert code == 0, err
        assert "hawaii" in out.split()
        dan = [r["spec"] for r in s.plane.access_reviews if r["spec"]["user"] == "dan"]
        assert dan and dan[-1]["groups"] == ["cooks", "system:authenticated"]
