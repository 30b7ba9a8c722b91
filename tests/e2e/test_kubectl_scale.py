"""`kubectl scale` on pizzas: discovery lists pizzas/scale (autoscaling/v1 Scale) and kubectl patches it."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    server_process.kubectl("apply", "-f", str(REPO / "examples"))
    return server_process


def _pizza(server: ServerProcess, name: str) -> dict:
    return json.loads(server.kubectl("get", "pizza", name, "-o", "json").stdout)


def test_kubectl_scale_sets_spec_replicas(kubectl_server: ServerProcess) -> None:
    out = kubectl_server.kubectl("scale", "pizza", "margherita", "--replicas=3").stdout
    assert f"pizza.{GROUP}/margherita scaled" in out
    assert _pizza(kubectl_server, "margherita")["spec"]["replicas"] == 3
    # With a precondition on the current replicas (kubectl GETs the Scale first).
    out = kubectl_server.kubectl(
        "scale", "pizza", "margherita", "--current-replicas=3", "--replicas=5"
    ).stdout
    assert "scaled" in out
    assert _pizza(kubectl_server, "margherita")["spec"]["replicas"] == 5
    failed = kubectl_server.kubectl(
        "scale", "pizza", "margherita", "--current-replicas=1", "--replicas=2", check=False
    )
    assert failed.returncode != 0 and "Expected replicas to be 1, was 5" in failed.stderr


def test_kubectl_scale_beyond_the_bound_is_refused(kubectl_server: ServerProcess) -> None:
    failed = kubectl_server.kubectl("scale", "pizza", "margherita", "--replicas=101", check=False)
    assert failed.returncode != 0
    assert "spec.replicas in body should be less than or equal to 100" in failed.stderr
    assert _pizza(kubectl_server, "margherita")["spec"]["replicas"] == 5


def test_api_resources_lists_the_scale_subresource(kubectl_server: ServerProcess) -> None:
    raw = kubectl_server.kubectl("get", "--raw", f"/apis/{GROUP}/v1beta1").stdout
    scale = next(r for r in json.loads(raw)["resources"] if r["name"] == "pizzas/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
