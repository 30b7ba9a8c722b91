"""pizza-controller as it runs in a cluster: through the aggregator, with a Lease, under RBAC.

The controller is a real process with the flags deploy/controller/ gives it (leader election on),
and a kubeconfig for the aggregator stand-in (tests/fixtures/front_proxy.py) that names its service
account. Its pizza and topping requests go through the proxy to the pizza server, which asks the
cluster (SubjectAccessReview) whether the service account may; its Lease requests go to the cluster
itself (the control-plane stand-in), as kube-apiserver serves coordination.k8s.io.

The cluster's RBAC first lacks `patch pizzas/status`: every status write is refused, and the
controller retries with backoff. Once granted, a retry succeeds with no new event about the pizza.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.admission import eventually
from tests.fixtures.front_proxy import ProxiedServer, proxied_server
from tests.fixtures.server import REPO

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
NAMESPACE = "bakery"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:pizza-controller"
ACCOUNT_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"]
ADMIN = ("alice", ["system:masters"])
WAIT = 90.0  # a loaded machine: an upper bound on waiting, not a target


class ClusterRbac:
    """The service account's ClusterRole as deploy/controller/rbac.yaml grants it, the status write
    only once `status_granted` (cached denials expire after the server's unauthorized TTL)."""

    def __init__(self) -> None:
        self.status_granted = False

    def __call__(self, spec: dict[str, Any]) -> dict[str, Any]:
        if "nonResourceAttributes" in spec:
            return {"allowed": spec["nonResourceAttributes"]["verb"] == "get", "reason": "system:discovery"}
        attrs = spec["resourceAttributes"]
        if spec["user"] != ACCOUNT or attrs.get("group") != GROUP:
            return {"allowed": False}
        reads = attrs["verb"] in ("get", "list", "watch") and not attrs.get("subresource")
        if reads and attrs["resource"] in ("pizzas", "toppings"):
            return {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "pizza-controller"'}
        status = (attrs["resource"], attrs.get("subresource"), attrs["verb"]) == ("pizzas", "status", "patch")
        if status and self.status_granted:
            return {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "pizza-controller"'}
        return {"allowed": False}


def start_controller(cluster: ProxiedServer, log: Path) -> subprocess.Popen[bytes]:
    kubeconfig = cluster.kubeconfig(ACCOUNT, ACCOUNT_GROUPS)
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller",
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=true",
                f"--leader-elect-resource-namespace={NAMESPACE}",
                "--identity=bakery-0",
                "--watch-timeout=30s",
            ],
            cwd=cluster.root,
            stdout=out,
            stderr=out,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(cluster.root)},
        )


async def test_controller_through_the_aggregator_with_a_lease_and_retries(tmp_path: Path) -> None:
    rbac = ClusterRbac()
    flags = ("--authorization-webhook-cache-unauthorized-ttl=1s",)
    async with proxied_server(tmp_path, rbac, *flags, cluster_groups=("coordination.k8s.io",)) as cluster:
        code, _, err = await cluster.kubectl(*ADMIN, "apply", "-f", str(REPO / "examples"))
        assert code == 0, err
        log = tmp_path / "controller.log"
        controller = await asyncio.to_thread(start_controller, cluster, log)
        try:

            async def leads() -> bool:
                lease = cluster.plane.leases.get((NAMESPACE, "pizza-controller"))
                return lease is not None and lease["spec"]["holderIdentity"] == "bakery-0"

            await eventually(leads, "the controller holding its Lease in the cluster", WAIT)

            async def retried() -> bool:
                text = log.read_text(errors="replace")
                return text.count("reconciling default/margherita failed") >= 3

            await eventually(retried, "three refused status writes for margherita", WAIT)
            # Each retry of the key waits twice as long as the one before (client-go's item backoff).
            delays = [
                float(d)
                for d in re.findall(r"margherita failed .*?; retry in ([0-9.]+)s", log.read_text(), re.S)
            ]
            assert delays[:3] == [0.005, 0.01, 0.02], delays
            code, out, err = await cluster.kubectl(
                *ADMIN, "get", "pizza", "margherita", "-o", "jsonpath={.status.cost}"
            )
            assert code == 0 and out == "", (out, err)
            # What was refused is the subresource: the review names pizzas/status.
            writes = [
                r["spec"]["resourceAttributes"]
                for r in cluster.plane.access_reviews
                if r["spec"]["user"] == ACCOUNT and r["spec"]["resourceAttributes"]["verb"] == "patch"
            ]
            assert writes and all((w["resource"], w["subresource"]) == ("pizzas", "status") for w in writes)

            rbac.status_granted = True
            # No event about margherita follows: the next retry of the queued key does it.
            code, out, err = await cluster.kubectl(
                *ADMIN,
                "wait",
                "--for=jsonpath={.status.cost}=1.75",
                "pizza/margherita",
                f"--timeout={int(WAIT)}s",
                timeout=WAIT + 30,
            )
            assert code == 0, (out, err, log.read_text()[-3000:])
            code, out, err = await cluster.kubectl(
                *ADMIN, "get", "pizza", "margherita", "-o", "json", "--show-managed-fields"
            )
            assert code == 0, err
            assert '"manager": "pizza-controller"' in out and '"subresource": "status"' in out

            controller.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(controller.wait, WAIT) == 0
            # Released on the way out (client-go's ReleaseOnCancel): a successor need not wait.
            assert cluster.plane.leases[(NAMESPACE, "pizza-controller")]["spec"]["holderIdentity"] == ""
        finally:
            if controller.poll() is None:
                controller.kill()
                await asyncio.to_thread(controller.wait, 15)
