"""Delegated authentication against a fake control plane, over real HTTPS end to end.

The server under test gets --authentication-kubeconfig/--authorization-kubeconfig pointing at the fake;
everything else (CAs, front-proxy settings) it learns from the extension-apiserver-authentication
ConfigMap, as an aggregated server in a cluster does.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.fixtures.control_plane import (
    CA,
    ControlPlane,
    Pair,
    allow_all,
    call,
    control_plane_fixture,  # noqa: F401 - provides the control_plane fixture
    delegated_server,
    issue,
    running_control_plane,
)
from tests.fixtures.server import RunningServer, running_server

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas"
TOPPINGS = f"/apis/{GROUP}/v1beta1/toppings"
PROPAGATION_BOUND = 10.0  # a ConfigMap watch event reaches the server well within this


# --- front proxy (request header) ---------------------------------------------------------------


async def test_forged_remote_user_without_proxy_cert_is_not_believed(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    async with delegated_server(tmp_path / "data", plane) as server:
        forged = {"X-Remote-User": "mallory", "X-Remote-Group": "system:masters"}
        # No certificate at all: the caller is anonymous, the headers are ignored.
        status, body = await call(server, PIZZAS, headers=forged)
        assert status == 200, body
        assert plane.access_reviews[-1]["spec"]["user"] == "system:anonymous"
        assert plane.access_reviews[-1]["spec"]["groups"] == ["system:unauthenticated"]
        # A client certificate that is not the front proxy's: the certificate's user, not the header's.
        carol = await issue(plane.pki.cluster_client_ca, tmp_path / "certs", "carol", ["cooks"])
        status, body = await call(server, PIZZAS, cert=carol, headers=forged)
        assert status == 200, body
        spec = plane.access_reviews[-1]["spec"]
        assert (spec["user"], spec["groups"]) == ("carol", ["cooks", "system:authenticated"])
        # The admin certificate with forged headers stays admin (system:masters: no review at all).
        reviews = plane.calls["subjectaccessreviews"]
        status, _ = await call(server, PIZZAS, admin=True, headers={"X-Remote-User": "mallory"})
        assert status == 200 and plane.calls["subjectaccessreviews"] == reviews


async def test_front_proxy_headers_are_the_user(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    async with delegated_server(tmp_path / "data", plane) as server:
        headers = {
            "X-Remote-User": "alice",
            "X-Remote-Uid": "uid-1234",
            "X-Remote-Group": "cooks",
            "X-Remote-Extra-Scopes": "pizza",
            "X-Remote-Extra-Example.com%2fteam": "dough",
        }
        status, body = await call(server, PIZZAS, cert=plane.pki.front_proxy_client, headers=headers)
        assert status == 200, body
        spec = plane.access_reviews[-1]["spec"]
        assert spec["user"] == "alice"
        assert spec["uid"] == "uid-1234"
        assert spec["groups"] == ["cooks", "system:authenticated"]
        assert spec["extra"] == {"scopes": ["pizza"], "example.com/team": ["dough"]}
        assert spec["resourceAttributes"] == {
            "namespace": "default",
            "verb": "list",
            "group": GROUP,
            "version": "v1beta1",
            "resource": "pizzas",
        }

        # The aggregator's availability probe: system:masters through the proxy, no review needed.
        reviews = plane.calls["subjectaccessreviews"]
        probe = {"X-Remote-User": "system:kube-aggregator", "X-Remote-Group": "system:masters"}
        status, body = await call(
            server, f"/apis/{GROUP}/v1beta1", cert=plane.pki.front_proxy_client, headers=probe
        )
        assert status == 200 and body["kind"] == "APIResourceList"
        assert plane.calls["subjectaccessreviews"] == reviews
        # Streaming works on the request that had its headers stripped (a watch that times out at once).
        watch = f"{PIZZAS}?watch=1&timeoutSeconds=1"
        assert await call(server, watch, cert=plane.pki.front_proxy_client, headers=probe) == (200, "")


async def test_front_proxy_cert_with_a_cn_not_allowed_is_rejected(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    intruder = await issue(plane.pki.front_proxy_ca, tmp_path / "certs", "not-the-proxy")
    async with delegated_server(tmp_path / "data", plane) as server:
        status, body = await call(
            server,
            PIZZAS,
            cert=intruder,
            headers={"X-Remote-User": "alice", "X-Remote-Group": "system:masters"},
        )
        assert status == 401, body
        assert body["reason"] == "Unauthorized"
        assert plane.calls["subjectaccessreviews"] == 0


async def test_front_proxy_cert_without_username_header_is_not_a_user(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The proxy's certificate alone names nobody (and is not from the client CA): 401."""
    async with delegated_server(tmp_path / "data", control_plane) as server:
        status, body = await call(server, PIZZAS, cert=control_plane.pki.front_proxy_client)
        assert status == 401, body


async def test_requestheader_flags_override_the_configmap(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """--requestheader-client-ca-file: the front-proxy settings come from flags, not the ConfigMap."""
    plane = control_plane
    plane.sar_rule = allow_all
    flags = (
        "--requestheader-client-ca-file",
        str(plane.pki.front_proxy_ca.cert),
        "--requestheader-allowed-names",
        "other-proxy",
        "--requestheader-username-headers",
        "X-Proxied-User",
    )
    other = await issue(plane.pki.front_proxy_ca, tmp_path / "certs", "other-proxy")
    async with delegated_server(tmp_path / "data", plane, *flags) as server:
        # The ConfigMap's allowed name no longer applies...
        status, _ = await call(
            server, PIZZAS, cert=plane.pki.front_proxy_client, headers={"X-Proxied-User": "a"}
        )
        assert status == 401
        # ...the flags' name and header do; the standard X-Remote-User is not read.
        status, _ = await call(
            server, PIZZAS, cert=other, headers={"X-Proxied-User": "bea", "X-Remote-User": "x"}
        )
        assert status == 200
        assert plane.access_reviews[-1]["spec"]["user"] == "bea"


# --- client certificates of the cluster and the server's own admin --------------------------------


async def test_admin_kubeconfig_still_works_when_delegating(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with delegated_server(tmp_path / "data", control_plane) as server:
        topping = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Topping",
            "metadata": {"name": "salami"},
            "spec": {"cost": 1},
        }
        status, body = await call(server, TOPPINGS, method="POST", admin=True, body=topping)
        assert status == 201, body
        status, body = await call(server, f"{TOPPINGS}/salami", admin=True)
        assert status == 200 and body["spec"]["cost"] == 1
        assert control_plane.calls["subjectaccessreviews"] == 0
        assert control_plane.calls["tokenreviews"] == 0


async def test_configmap_change_switches_the_client_ca(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    new_ca = CA(*await asyncio.to_thread(_new_ca, tmp_path / "new-ca"))
    dave = await issue(new_ca, tmp_path / "certs", "dave", ["bakers"])
    erin = await issue(plane.pki.cluster_client_ca, tmp_path / "certs", "erin")
    async with delegated_server(tmp_path / "data", plane) as server:
        assert (await call(server, PIZZAS, cert=erin))[0] == 200
        assert await _rejected(server, dave)

        plane.set_configmap({**plane.default_configmap(), "client-ca-file": new_ca.pem()})
        async with asyncio.timeout(PROPAGATION_BOUND):
            while await _rejected(server, dave):
                await asyncio.sleep(0.05)
        status, body = await call(server, PIZZAS, cert=dave)
        assert status == 200, body
        assert plane.access_reviews[-1]["spec"]["user"] == "dave"
        # The old CA is gone from both TLS and the authenticator.
        assert await _rejected(server, erin)
        # The admin's own CA never depended on the ConfigMap.
        assert (await call(server, PIZZAS, admin=True))[0] == 200


async def test_configmap_change_switches_the_front_proxy(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    async with delegated_server(tmp_path / "data", plane) as server:
        headers = {"X-Remote-User": "alice", "X-Remote-Group": "cooks"}
        assert (await call(server, PIZZAS, cert=plane.pki.front_proxy_client, headers=headers))[0] == 200
        renamed = {
            **plane.default_configmap(),
            "requestheader-allowed-names": json.dumps(["aggregator"]),
            "requestheader-username-headers": json.dumps(["X-Forwarded-User"]),
        }
        plane.set_configmap(renamed)
        aggregator = await issue(plane.pki.front_proxy_ca, tmp_path / "certs", "aggregator")
        async with asyncio.timeout(PROPAGATION_BOUND):
            while (await call(server, PIZZAS, cert=aggregator, headers={"X-Forwarded-User": "zoe"}))[
                0
            ] != 200:
                await asyncio.sleep(0.05)
        assert plane.access_reviews[-1]["spec"]["user"] == "zoe"
        status, _ = await call(server, PIZZAS, cert=plane.pki.front_proxy_client, headers=headers)
        assert status == 401  # front-proxy-client is no longer an allowed name


async def test_client_ca_file_flag_is_reloaded(control_plane: ControlPlane, tmp_path: Path) -> None:
    """--client-ca-file replaces the ConfigMap's client CA, and a rewritten file takes effect live."""
    plane = control_plane
    plane.sar_rule = allow_all
    bundle = tmp_path / "client-ca.crt"
    bundle.write_bytes(plane.pki.cluster_client_ca.cert.read_bytes())
    new_ca = CA(*await asyncio.to_thread(_new_ca, tmp_path / "new-ca"))
    frank = await issue(new_ca, tmp_path / "certs", "frank")
    async with delegated_server(tmp_path / "data", plane, "--client-ca-file", str(bundle)) as server:
        assert await _rejected(server, frank)
        await asyncio.to_thread(bundle.write_bytes, new_ca.cert.read_bytes())
        async with asyncio.timeout(PROPAGATION_BOUND):
            while await _rejected(server, frank):
                await asyncio.sleep(0.1)
        assert plane.access_reviews[-1]["spec"]["user"] == "frank"


async def _rejected(server: RunningServer, cert: Pair, headers: dict[str, str] | None = None) -> bool:
    """A certificate the server does not accept: refused at the handshake, or a 401."""
    try:
        status, _ = await call(server, PIZZAS, cert=cert, headers=headers)
    except aiohttp.ClientError:
        return True
    return status == 401


def _new_ca(directory: Path) -> tuple[Path, Path]:
    from server.serving.certs import ensure_client_ca

    return ensure_client_ca(directory)


# --- bearer tokens (TokenReview) ----------------------------------------------------------------


async def test_tokens_are_reviewed_and_cached(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    plane.tokens["good"] = {"username": "tina", "uid": "42", "groups": ["cooks"], "extra": {"scopes": ["x"]}}
    async with delegated_server(tmp_path / "data", plane) as server:
        for _ in range(3):
            status, body = await call(server, PIZZAS, headers={"Authorization": "Bearer good"})
            assert status == 200, body
        assert plane.calls["tokenreviews"] == 1  # cached for the default 10s
        assert plane.token_reviews[0]["spec"] == {"token": "good"}
        assert plane.token_reviews[0]["kind"] == "TokenReview"
        spec = plane.access_reviews[-1]["spec"]
        assert (spec["user"], spec["uid"], spec["groups"], spec["extra"]) == (
            "tina",
            "42",
            ["cooks", "system:authenticated"],
            {"scopes": ["x"]},
        )

        # An unknown token is a 401, never anonymous; the failure is cached too.
        for _ in range(2):
            status, body = await call(server, PIZZAS, headers={"Authorization": "Bearer bad"})
            assert status == 401, body
        assert plane.calls["tokenreviews"] == 2

        # A review that reports an error is a 401 as well, and is not cached.
        plane.token_errors["broken"] = "token lookup failed"
        for _ in range(2):
            status, _ = await call(server, PIZZAS, headers={"Authorization": "Bearer broken"})
            assert status == 401
        assert plane.calls["tokenreviews"] == 4

        # Not a bearer scheme, or an empty token: no token at all (anonymous).
        reviews = plane.calls["tokenreviews"]
        status, _ = await call(server, PIZZAS, headers={"Authorization": "Basic Zm9vOmJhcg=="})
        assert status == 200 and plane.access_reviews[-1]["spec"]["user"] == "system:anonymous"
        assert plane.calls["tokenreviews"] == reviews


async def test_token_cache_ttl_zero_reviews_every_time(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    plane.tokens["good"] = {"username": "tina"}
    async with delegated_server(
        tmp_path / "data", plane, "--authentication-token-webhook-cache-ttl=0"
    ) as server:
        for _ in range(3):
            assert (await call(server, PIZZAS, headers={"Authorization": "Bearer good"}))[0] == 200
        assert plane.calls["tokenreviews"] == 3


async def test_token_cache_expires(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    plane.tokens["good"] = {"username": "tina"}
    async with delegated_server(
        tmp_path / "data", plane, "--authentication-token-webhook-cache-ttl=1s"
    ) as server:
        assert (await call(server, PIZZAS, headers={"Authorization": "Bearer good"}))[0] == 200
        assert (await call(server, PIZZAS, headers={"Authorization": "Bearer good"}))[0] == 200
        assert plane.calls["tokenreviews"] == 1
        await asyncio.sleep(1.1)
        # Revoked in the meantime: the next review says so.
        del plane.tokens["good"]
        assert (await call(server, PIZZAS, headers={"Authorization": "Bearer good"}))[0] == 401
        assert plane.calls["tokenreviews"] == 2


async def test_api_audiences_are_asked_for_and_checked(control_plane: ControlPlane, tmp_path: Path) -> None:
    plane = control_plane
    plane.sar_rule = allow_all
    plane.tokens["ours"] = {"username": "tina"}
    plane.token_audiences["ours"] = ["pizza-api"]
    plane.tokens["theirs"] = {"username": "tom"}
    plane.token_audiences["theirs"] = ["other-api"]
    async with delegated_server(tmp_path / "data", plane, "--api-audiences", "pizza-api") as server:
        assert (await call(server, PIZZAS, headers={"Authorization": "Bearer ours"}))[0] == 200
        assert plane.token_reviews[-1]["spec"] == {"token": "ours", "audiences": ["pizza-api"]}
        assert (await call(server, PIZZAS, headers={"Authorization": "Bearer theirs"}))[0] == 401


# --- anonymous, health, and the cluster connection -------------------------------------------------


async def test_anonymous_health_is_open_and_resources_are_reviewed(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    async with delegated_server(tmp_path / "data", control_plane) as server:
        assert await call(server, "/healthz") == (200, "ok")
        assert control_plane.calls["subjectaccessreviews"] == 0
        status, body = await call(server, TOPPINGS)
        assert status == 403, body
        assert body["message"] == (
            f'toppings.{GROUP} is forbidden: User "system:anonymous" cannot list resource "toppings" in API '
            f'group "{GROUP}" at the cluster scope'
        )


async def test_anonymous_auth_false_makes_anonymous_401(control_plane: ControlPlane, tmp_path: Path) -> None:
    async with delegated_server(tmp_path / "data", control_plane, "--anonymous-auth=false") as server:
        status, _ = await call(server, TOPPINGS)
        assert status == 401
        assert await call(server, "/healthz") == (200, "ok")


async def test_token_kubeconfig_from_an_exec_plugin(control_plane: ControlPlane, tmp_path: Path) -> None:
    """kubeconfig resolution is the `kubernetes` loader's: here an exec credential plugin supplies a token."""
    plane = control_plane
    plugin = tmp_path / "credential-plugin.py"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": plane.api_token},
    }
    plugin.write_text(f"import json\nprint(json.dumps({credential!r}))\n")
    kubeconfig = plane.write_kubeconfig(
        tmp_path / "exec.kubeconfig", exec_command=[sys.executable, str(plugin)]
    )
    plane.tokens["good"] = {"username": "tina"}
    plane.sar_rule = allow_all
    flags = ("--authentication-kubeconfig", str(kubeconfig), "--authorization-kubeconfig", str(kubeconfig))
    async with running_server(tmp_path / "data", *flags) as server:
        assert (await call(server, PIZZAS, headers={"Authorization": "Bearer good"}))[0] == 200
        assert plane.bearer_tokens_seen and set(plane.bearer_tokens_seen) == {plane.api_token}


async def test_missing_front_proxy_settings_stop_the_server(tmp_path: Path) -> None:
    """kube refuses to start without the request-header CA it was told to look up..."""
    async with running_control_plane(tmp_path / "cp") as plane:
        plane.set_configmap({"client-ca-file": plane.pki.cluster_client_ca.pem()})
        with pytest.raises(Exception, match="requestheader-client-ca-file"):
            async with delegated_server(tmp_path / "data", plane):
                pass
        # ...unless told to tolerate it; then the front proxy is simply not trusted.
        async with delegated_server(
            tmp_path / "data", plane, "--authentication-tolerate-lookup-failure"
        ) as server:
            assert await _rejected(server, plane.pki.front_proxy_client, {"X-Remote-User": "alice"})


async def test_unreachable_cluster_stops_the_server(tmp_path: Path) -> None:
    async with running_control_plane(tmp_path / "cp") as plane:
        kubeconfig = plane.kubeconfig
    # The control plane is gone now: the ConfigMap lookup at start fails.
    with pytest.raises(Exception, match="unable to load configmap"):
        async with running_server(tmp_path / "data", "--authentication-kubeconfig", str(kubeconfig)):
            pass


async def test_standalone_takes_ca_flags_through_the_same_chain(tmp_path: Path) -> None:
    """No cluster: --client-ca-file and --requestheader-client-ca-file work; only masters are allowed."""
    async with running_control_plane(tmp_path / "cp") as plane:  # used for its PKI only, never called
        pki = plane.pki
        flags = (
            "--client-ca-file",
            str(pki.cluster_client_ca.cert),
            "--requestheader-client-ca-file",
            str(pki.front_proxy_ca.cert),
        )
        root = await issue(pki.cluster_client_ca, tmp_path / "certs", "root", ["system:masters"])
        gina = await issue(pki.cluster_client_ca, tmp_path / "certs", "gina", ["cooks"])
        async with running_server(tmp_path / "data", *flags) as server:
            assert (await call(server, PIZZAS, cert=root))[0] == 200
            status, body = await call(server, PIZZAS, cert=gina)
            assert status == 403 and 'User "gina" cannot list' in body["message"]
            proxied = {"X-Remote-User": "hal", "X-Remote-Group": "system:masters"}
            assert (await call(server, PIZZAS, cert=pki.front_proxy_client, headers=proxied))[0] == 200
            assert (await call(server, PIZZAS))[0] == 401  # standalone: anonymous only on health paths
            assert (await call(server, PIZZAS, admin=True))[0] == 200
        assert sum(plane.calls.values()) == 0
