"""A fourth API group declares a custom subresource and a resource without storage, touching nothing
generic.

A fork (tests/fixtures/fork.py) adds `kitchen.example.com`: a stored `Order`, its `orders/receipt`
(a getter, kube's rest.Getter: what an order costs, computed per request) and `ordercounts` (a
resource computed from the orders in the watch cache, never stored: one `OrderCount` per namespace).
Each is a few declared lines in `apis/kitchen/` and `registry/kitchen/`; the test checks the fork
changes nothing else, then drives the new group with the real kubectl.

One server for the module; tests run in file order like a user session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.fork import (
    added_pyproject_lines,
    changed_files,
    entry_point,
    fork_server,
    make_fork,
)
from tests.fixtures.server import ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "kitchen.example.com"
ENTRY_POINT = entry_point(GROUP, "kitchen")
PRICE_PER_DISH = 7

GROUP_FILES = {
    "apis/kitchen/__init__.py": '"""kitchen.example.com: the fourth group."""\n',
    "apis/kitchen/install.py": '''"""Order, its Receipt (a subresource), OrderCount (never stored)."""

from apis.meta.schemas import object_schema
from apis.runtime.declare import Version, declare_kind
from apis.runtime.kinds import READ_VERBS, Column, GroupInfo
from apis.schema.build import struct

DISHES = {"type": "integer", "minimum": 1, "default": 1, "description": "How many dishes."}
ORDER = object_schema("Order is what a table asked for.", {"spec": struct("OrderSpec.", dishes=DISHES)})
TOTAL = {"type": "integer", "description": "What the order costs."}
RECEIPT = object_schema("Receipt is what an order costs now.", {"total": TOTAL})
COUNT = {"type": "integer", "description": "How many orders."}
ORDER_COUNT = object_schema("OrderCount is how many orders a namespace has.", {"count": COUNT})

ORDER_KIND, Order = declare_kind(
    "Order",
    hub_version="v1",
    versions={"v1": Version(ORDER)},
    storage_version="v1",
    namespaced=True,
    module=__name__,
)
ORDER_COUNT_KIND, OrderCount = declare_kind(
    "OrderCount",
    hub_version="v1",
    versions={"v1": Version(ORDER_COUNT)},
    storage_version="v1",
    namespaced=True,
    module=__name__,
    columns=(Column("Count", "integer", "How many orders.", lambda count: count.count),),
    verbs=READ_VERBS,
    stored=False,
)
GROUP = GroupInfo("kitchen.example.com", versions=("v1",), kinds=(ORDER_KIND, ORDER_COUNT_KIND))
''',
    "registry/kitchen/__init__.py": '"""The kitchen.example.com registry."""\n',
    "registry/kitchen/receipt.py": '''"""GET orders/{name}/receipt: what an order costs, per request."""

from apis.kitchen.install import RECEIPT
from registry.generic.custom_subresources import Getter, SubresourceRequest

PRICE_PER_DISH = 7


class Receipt(Getter):
    kind = "Receipt"
    schema = RECEIPT

    def __init__(self, orders):
        self.orders = orders

    async def get(self, request: SubresourceRequest) -> dict:
        order = await self.orders.get(request.namespace, request.name)
        metadata = {"name": request.name, "namespace": request.namespace}
        return {"metadata": metadata, "total": order.spec.dishes * PRICE_PER_DISH}
''',
    "registry/kitchen/counts.py": '''"""ordercounts: an OrderCount per namespace, from the cache."""

from collections import Counter

from storage.interface import EventType

NAME = "orders"


class OrderCounts:
    """The Derivation (registry/generic/cache/derived.py) of the counts from the orders."""

    sources = ("orders",)

    def __init__(self):
        self.counts = Counter()

    def reset(self, sources):
        self.counts = Counter(order.namespace for order in sources["orders"])
        return [(namespace, NAME) for namespace in self.counts]

    def changed(self, resource, event):
        if event.type is EventType.MODIFIED:
            return ()
        self.counts[event.object.namespace] += 1 if event.type is EventType.ADDED else -1
        return [(event.object.namespace, NAME)]

    def derive(self, namespace, name):
        count = self.counts.get(namespace, 0)
        if name != NAME or count <= 0:
            return None
        return {"metadata": {"name": name, "namespace": namespace}, "count": count}
''',
    "registry/kitchen/install.py": '''"""Installs kitchen.example.com: orders, their receipt, the counts."""

from apis.kitchen.install import GROUP, ORDER_COUNT_KIND, ORDER_KIND
from apis.runtime.codec import Codec
from registry.generic.derived import DerivedResource
from registry.generic.installation import GroupInstallation
from registry.generic.store import Store
from registry.generic.strategy import PlainStrategy
from registry.kitchen.counts import OrderCounts
from registry.kitchen.receipt import Receipt


def install(storage):
    orders = Store(Codec(GROUP.group, ORDER_KIND), PlainStrategy(namespaced=True), storage)
    return GroupInstallation(
        group=GROUP,
        stores={"orders": orders},
        custom_subresources={"orders": {"receipt": Receipt(orders)}},
        resources={"ordercounts": DerivedResource(Codec(GROUP.group, ORDER_COUNT_KIND), OrderCounts())},
    )
''',
}


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fork = tmp_path_factory.mktemp("fork")
    make_fork(fork, GROUP_FILES, ENTRY_POINT)
    return fork


@pytest.fixture(scope="module")
def server(fork: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data = tmp_path_factory.mktemp("fourth-group") / "data"
    with fork_server(fork, tmp_path_factory.mktemp("site"), data) as proc:
        yield proc


def order(name: str, namespace: str, dishes: int) -> str:
    return json.dumps(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Order",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"dishes": dishes},
        }
    )


def raw(server: ServerProcess, path: str, *, verb: str = "get", check: bool = True) -> tuple[int, str]:
    result = server.kubectl(
        verb, "--raw", path, *(("-f", "-") if verb != "get" else ()), input="{}", check=check
    )
    return result.returncode, result.stdout + result.stderr


def test_the_fork_changes_only_the_groups_folders_and_the_entry_point(fork: Path) -> None:
    assert changed_files(fork) == {*GROUP_FILES, "pyproject.toml"}
    assert added_pyproject_lines(fork) == ([ENTRY_POINT], 1)


def test_discovery_lists_the_subresource_and_the_read_only_resource(server: ServerProcess) -> None:
    body = json.loads(server.kubectl("get", "--raw", f"/apis/{GROUP}/v1").stdout)
    by_name = {res["name"]: res for res in body["resources"]}
    assert set(by_name) == {"orders", "orders/receipt", "ordercounts"}
    assert (by_name["orders/receipt"]["kind"], by_name["orders/receipt"]["verbs"]) == ("Receipt", ["get"])
    assert by_name["ordercounts"]["verbs"] == ["get", "list", "watch"]
    assert "storageVersionHash" not in by_name["ordercounts"]


def test_the_receipt_is_computed_from_the_order_now(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", input=order("o1", "default", 2))
    server.kubectl("apply", "-f", "-", input=order("o2", "default", 1))
    path = f"/apis/{GROUP}/v1/namespaces/default/orders/o1/receipt"
    receipt = json.loads(server.kubectl("get", "--raw", path).stdout)
    assert receipt == {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Receipt",
        "metadata": {"name": "o1", "namespace": "default"},
        "total": 2 * PRICE_PER_DISH,
    }
    server.kubectl("patch", "order", "o1", "--type=merge", "-p", '{"spec":{"dishes":5}}')
    assert json.loads(server.kubectl("get", "--raw", path).stdout)["total"] == 5 * PRICE_PER_DISH


def test_the_subresource_answers_404_and_405_as_kube(server: ServerProcess) -> None:
    missing = server.kubectl(
        "get", "--raw", f"/apis/{GROUP}/v1/namespaces/default/orders/nope/receipt", check=False
    )
    assert missing.returncode != 0 and "NotFound" in missing.stderr
    unknown = server.kubectl(
        "get", "--raw", f"/apis/{GROUP}/v1/namespaces/default/orders/o1/tip", check=False
    )
    assert unknown.returncode != 0 and "NotFound" in unknown.stderr
    posted = server.kubectl(
        "create",
        "--raw",
        f"/apis/{GROUP}/v1/namespaces/default/orders/o1/receipt",
        "-f",
        "-",
        input="{}",
        check=False,
    )
    assert posted.returncode != 0 and "MethodNotAllowed" in posted.stderr


def test_the_counts_follow_the_orders_and_are_read_only(server: ServerProcess) -> None:
    lines = server.kubectl("get", "ordercounts", "-n", "default").stdout.splitlines()
    assert lines[0].split() == ["NAME", "COUNT", "AGE"]
    assert lines[1].split()[:2] == ["orders", "2"]
    server.kubectl("apply", "-f", "-", input=order("o3", "patio", 1))
    counts = json.loads(server.kubectl("get", "ordercounts", "-A", "-o", "json").stdout)["items"]
    assert {(c["metadata"]["namespace"], c["count"]) for c in counts} == {("default", 2), ("patio", 1)}
    server.kubectl("delete", "order", "o2", "--wait=true", timeout=60)
    count = json.loads(server.kubectl("get", "ordercounts", "orders", "-n", "default", "-o", "json").stdout)
    assert count["count"] == 1
    refused = server.kubectl("delete", "ordercounts", "orders", "-n", "default", check=False)
    assert refused.returncode != 0 and "MethodNotAllowed" in refused.stderr
