"""Allocation at create with real clients: kubectl shows and keeps a pizza's order number, the Python
`kubernetes` client gets it back from create, and two servers (two workers each) on one etcd never
give two pizzas the same number under concurrent creates."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller.connection import api_client
from storage.etcd import EtcdConfig, open_etcd
from tests.fixtures.etcd import unique_prefix
from tests.fixtures.server import REPO, ServerProcess, start_server_process

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
NUMBERS = f"/_allocations/{GROUP}/pizzas/spec.orderNumber/"
CONCURRENT = 60


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    server_process.kubectl("apply", "-f", str(REPO / "examples"))
    return server_process


def _number(server: ServerProcess, name: str) -> str:
    return server.kubectl("get", "pizza", name, "-o", "jsonpath={.spec.orderNumber}").stdout


def test_kubectl_apply_shows_the_number_and_apply_again_keeps_it(kubectl_server: ServerProcess) -> None:
    number = _number(kubectl_server, "margherita")
    assert number.isdigit() and 1 <= int(number) <= 999999
    out = kubectl_server.kubectl("apply", "-f", str(REPO / "examples")).stdout
    assert f"pizza.{GROUP}/margherita unchanged" in out
    assert _number(kubectl_server, "margherita") == number
    # kubectl replace of a manifest without the number keeps it too.
    manifest = json.loads(kubectl_server.kubectl("get", "pizza", "margherita", "-o", "json").stdout)
    del manifest["spec"]["orderNumber"]
    kubectl_server.kubectl("replace", "-f", "-", input=json.dumps(manifest))
    assert _number(kubectl_server, "margherita") == number


def test_kubectl_create_asking_for_a_number(kubectl_server: ServerProcess) -> None:
    manifest = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Pizza",
        "metadata": {"name": "asked", "namespace": "default"},
        "spec": {"orderNumber": 4242, "toppings": [{"name": "tomato"}]},
    }
    kubectl_server.kubectl("create", "-f", "-", input=json.dumps(manifest))
    assert _number(kubectl_server, "asked") == "4242"
    manifest["metadata"]["name"] = "asked-again"
    failed = kubectl_server.kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert failed.returncode != 0
    assert (
        "spec.orderNumber: Invalid value: 4242: failed to allocate order number 4242: "
        "provided order number is already allocated" in failed.stderr
    )
    failed = kubectl_server.kubectl(
        "patch", "pizza", "asked", "--type=merge", "-p", '{"spec":{"orderNumber":1}}', check=False
    )
    assert failed.returncode != 0
    assert "spec.orderNumber: Invalid value: 1: field is immutable" in failed.stderr
    kubectl_server.kubectl("delete", "pizza", "asked")
    manifest["metadata"]["name"] = "asked-after-delete"
    kubectl_server.kubectl("create", "-f", "-", input=json.dumps(manifest))
    assert _number(kubectl_server, "asked-after-delete") == "4242"


def test_the_python_client_gets_the_number_from_create(kubectl_server: ServerProcess) -> None:
    api = api_client(kubectl_server.kubeconfig)
    try:
        objects = client.CustomObjectsApi(api)
        body = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Pizza",
            "metadata": {"name": "from-python"},
            "spec": {"toppings": [{"name": "tomato", "quantity": 2}]},
        }
        created = objects.create_namespaced_custom_object(GROUP, "v1beta1", "default", "pizzas", body)
        number = created["spec"]["orderNumber"]
        assert isinstance(number, int) and 1 <= number <= 999999
        got = objects.get_namespaced_custom_object(GROUP, "v1beta1", "default", "pizzas", "from-python")
        assert got["spec"]["orderNumber"] == number
    finally:
        api.close()


# --- two servers, two workers each, one etcd --------------------------------------------------------


@dataclass
class TwoServers:
    servers: list[ServerProcess]
    etcd_url: str
    prefix: str

    def number_keys(self) -> list[int]:
        """The number keys in etcd, read through the storage backend itself."""

        async def read() -> list[int]:
            config = EtcdConfig([self.etcd_url], prefix=self.prefix, compaction_interval=0)
            store = await open_etcd(config)
            try:
                listed = await store.list(NUMBERS)
            finally:
                await store.close()
            return [int(kv.key.rpartition("/")[2]) for kv in listed.items]

        return asyncio.run(read())


@pytest.fixture
def two_servers(etcd_server, tmp_path: Path) -> Iterator[TwoServers]:
    prefix = unique_prefix()
    # A range barely larger than the creates: four workers picking at once often pick the same number,
    # so the lost races (another number, tried again) are exercised, not only the easy path.
    flags = [
        *("--etcd-servers", etcd_server.client_url, "--etcd-prefix", prefix),
        *("--workers", "2", "--order-numbers", f"1-{CONCURRENT + 10}"),
    ]
    servers: list[ServerProcess] = []
    try:
        for name in ("one", "two"):
            servers.append(start_server_process(tmp_path / name, *flags))
        yield TwoServers(servers, etcd_server.client_url, prefix)
    finally:
        for server in servers:
            server.stop()


def _pizza(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Pizza",
        "metadata": {"name": name},
        "spec": {"toppings": [{"name": "tomato"}]},
    }


def test_concurrent_creates_on_two_servers_get_distinct_numbers(two_servers: TwoServers) -> None:
    apis = [api_client(server.kubeconfig) for server in two_servers.servers]
    try:
        clients = [client.CustomObjectsApi(api) for api in apis]
        topping = {"apiVersion": f"{GROUP}/v1beta1", "kind": "Topping", "metadata": {"name": "tomato"}}
        clients[0].create_cluster_custom_object(
            GROUP, "v1beta1", "toppings", {**topping, "spec": {"cost": 1}}
        )

        def create(i: int) -> int:
            objects = clients[i % 2]
            created = objects.create_namespaced_custom_object(
                GROUP, "v1beta1", "default", "pizzas", _pizza(f"p{i}")
            )
            return created["spec"]["orderNumber"]

        with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
            numbers = list(pool.map(create, range(CONCURRENT), timeout=120))
        assert len(set(numbers)) == CONCURRENT
        assert all(1 <= n <= CONCURRENT + 10 for n in numbers)
        listed = clients[1].list_namespaced_custom_object(GROUP, "v1beta1", "default", "pizzas")
        assert sorted(p["spec"]["orderNumber"] for p in listed["items"]) == sorted(numbers)
    finally:
        for api in apis:
            api.close()
    assert sorted(two_servers.number_keys()) == sorted(numbers)
