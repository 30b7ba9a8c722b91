"""The real kubectl through a front proxy, as kube-aggregator puts one in front of an aggregated server.

The proxy (tests/fixtures/front_proxy.py, aiohttp over real HTTPS) authenticates kubectl by its client
certificate (CN is the user, O the groups), then forwards each request to the pizza server with the
front-proxy client certificate and X-Remote-User / X-Remote-Group headers. The pizza server delegates
to the fake control plane: it trusts the proxy because the cluster's ConfigMap says so, and asks the
cluster (SubjectAccessReview) what users outside system:masters may do.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.front_proxy import ProxiedServer, proxied_server
from tests.fixtures.server import REPO

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"


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


def story(root: Path) -> AbstractAsyncContextManager[ProxiedServer]:
    return proxied_server(root, rbac)


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
