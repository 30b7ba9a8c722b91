"""Graceful deletion of pizzas with the real kubectl and the Python `kubernetes` client.

`kubectl delete --grace-period=N --wait=false` leaves the pizza marked (deletionTimestamp in
`-o yaml`), `--grace-period=0 --force` removes it at once, and a plain `kubectl delete
--grace-period=N` waits until the server removed it at the end of the period.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from controller.connection import api_client
from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
# Bounds on a loaded machine, not targets.
REMOVAL_BOUND = 30.0


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    server_process.kubectl("apply", "-f", str(REPO / "examples" / "00-toppings.yaml"))
    return server_process


def _bake(server: ServerProcess, name: str) -> None:
    pizza = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Pizza",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"toppings": [{"name": "tomato", "quantity": 1}]},
    }
    server.kubectl("create", "-f", "-", input=yaml.safe_dump(pizza))


def _get(server: ServerProcess, name: str) -> dict | None:
    got = server.kubectl("get", "pizza", name, "-o", "yaml", check=False)
    if got.returncode != 0:
        assert "NotFound" in got.stderr, got.stderr
        return None
    return yaml.safe_load(got.stdout)


def test_a_grace_period_shows_in_yaml_until_the_server_removes_it(kubectl_server: ServerProcess) -> None:
    _bake(kubectl_server, "margherita")
    out = kubectl_server.kubectl("delete", "pizza", "margherita", "--grace-period=5", "--wait=false").stdout
    assert f'pizza.{GROUP} "margherita" deleted' in out
    pizza = _get(kubectl_server, "margherita")
    assert pizza is not None
    assert pizza["metadata"]["deletionGracePeriodSeconds"] == 5
    assert pizza["metadata"]["deletionTimestamp"]
    # Listed with the others meanwhile.
    assert "margherita" in kubectl_server.kubectl("get", "pizzas").stdout
    kubectl_server.kubectl("wait", "--for=delete", "pizza/margherita", "--timeout=30s", timeout=40)
    assert _get(kubectl_server, "margherita") is None


def test_kubectl_delete_waits_for_the_period_and_force_removes_at_once(kubectl_server: ServerProcess) -> None:
    _bake(kubectl_server, "funghi")
    started = time.monotonic()
    # kubectl waits (its default) for the DELETED that the server's finisher causes.
    kubectl_server.kubectl("delete", "pizza", "funghi", "--grace-period=2", timeout=40)
    assert time.monotonic() - started >= 1.0
    assert _get(kubectl_server, "funghi") is None

    _bake(kubectl_server, "diavola")
    kubectl_server.kubectl("delete", "pizza", "diavola", "--grace-period=600", "--wait=false")
    assert _get(kubectl_server, "diavola") is not None
    forced = kubectl_server.kubectl("delete", "pizza", "diavola", "--grace-period=0", "--force", timeout=30)
    assert f'pizza.{GROUP} "diavola" force deleted' in forced.stdout
    assert _get(kubectl_server, "diavola") is None


def test_kubectl_sees_a_negative_period_refused(kubectl_server: ServerProcess) -> None:
    _bake(kubectl_server, "hawaii")
    path = f"/apis/{GROUP}/v1beta1/namespaces/default/pizzas/hawaii?gracePeriodSeconds=-3"
    failed = kubectl_server.kubectl("delete", "--raw", path, check=False)
    assert failed.returncode != 0
    assert "gracePeriodSeconds: Invalid value: -3: must be greater than or equal to 0" in failed.stderr
    pizza = _get(kubectl_server, "hawaii")
    assert pizza is not None and "deletionTimestamp" not in pizza["metadata"]


@pytest.fixture
def objects(kubectl_server: ServerProcess) -> Iterator[client.CustomObjectsApi]:
    api = api_client(kubectl_server.kubeconfig)
    try:
        yield client.CustomObjectsApi(api)
    finally:
        api.close()


def test_the_python_client_deletes_with_a_grace_period(
    kubectl_server: ServerProcess, objects: client.CustomObjectsApi
) -> None:
    _bake(kubectl_server, "calzone")
    args = (GROUP, "v1beta1", "default", "pizzas", "calzone")
    marked = objects.delete_namespaced_custom_object(*args, grace_period_seconds=3)
    assert marked["kind"] == "Pizza"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 3
    assert objects.get_namespaced_custom_object(*args)["metadata"]["deletionTimestamp"]
    # A longer period is not taken; a negative one is invalid.
    again = objects.delete_namespaced_custom_object(*args, grace_period_seconds=300)
    assert again["metadata"] == marked["metadata"]
    with pytest.raises(ApiException) as refused:
        objects.delete_namespaced_custom_object(*args, grace_period_seconds=-1)
    assert refused.value.status == 422
    deadline = time.monotonic() + REMOVAL_BOUND
    while True:
        try:
            objects.get_namespaced_custom_object(*args)
        except ApiException as e:
            assert e.status == 404
            break
        assert time.monotonic() < deadline, "never removed"
        time.sleep(0.2)
