"""`kubectl delete --grace-period` through the aggregator stand-in (tests/fixtures/front_proxy.py), by a
user the cluster's RBAC (SubjectAccessReview) allows to delete pizzas: the pizza is marked and stays
readable, `kubectl delete` waits (GET, then a watch through the proxy) until the server removes it at
the end of the period, and `--grace-period=0 --force` removes one at once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.front_proxy import proxied_server
from tests.fixtures.server import REPO

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
ADMIN = ("alice", ["system:masters"])
COOK = ("carol", ["cooks"])


def rbac(spec: dict[str, Any]) -> dict[str, Any]:
    """Discovery for everyone; cooks may read and delete pizzas."""
    if "nonResourceAttributes" in spec:
        return {"allowed": spec["nonResourceAttributes"]["verb"] == "get", "reason": "system:discovery"}
    attrs = spec["resourceAttributes"]
    allowed = attrs["verb"] in ("get", "list", "watch", "delete") and attrs["resource"] == "pizzas"
    if "cooks" in spec.get("groups", []) and attrs.get("group") == GROUP and allowed:
        return {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "cooks"'}
    return {"allowed": False}


async def test_kubectl_graceful_delete_through_the_aggregator(tmp_path: Path) -> None:
    async with proxied_server(tmp_path, rbac) as s:
        code, _, err = await s.kubectl(*ADMIN, "apply", "-f", str(REPO / "examples"))
        assert code == 0, err

        code, out, err = await s.kubectl(
            *COOK, "delete", "pizza", "margherita", "--grace-period=600", "--wait=false"
        )
        assert code == 0, err
        assert f'pizza.{GROUP} "margherita" deleted' in out
        code, out, err = await s.kubectl(*COOK, "get", "pizza", "margherita", "-o", "yaml")
        assert code == 0, err
        meta = yaml.safe_load(out)["metadata"]
        assert meta["deletionGracePeriodSeconds"] == 600 and meta["deletionTimestamp"]
        carols = [r["spec"] for r in s.plane.access_reviews if r["spec"]["user"] == "carol"]
        resources = [spec["resourceAttributes"] for spec in carols if "resourceAttributes" in spec]
        deletes = [attrs for attrs in resources if attrs["verb"] == "delete"]
        assert deletes and deletes[0]["resource"] == "pizzas" and deletes[0]["name"] == "margherita"

        force = ("--grace-period=0", "--force")
        code, out, err = await s.kubectl(*COOK, "delete", "pizza", "margherita", *force)
        assert code == 0, err
        assert "force deleted" in out
        code, _, err = await s.kubectl(*COOK, "get", "pizza", "margherita")
        assert code != 0 and "NotFound" in err

        # kubectl's own wait follows the pizza until the server removes it.
        started = time.monotonic()
        code, out, err = await s.kubectl(*COOK, "delete", "pizza", "hawaii", "--grace-period=2", timeout=60)
        assert code == 0, err
        assert time.monotonic() - started >= 1.0
        code, _, err = await s.kubectl(*COOK, "get", "pizza", "hawaii")
        assert code != 0 and "NotFound" in err
