"""menuitems, a resource without storage, with the real kubectl, the `kubernetes` client and behind
the aggregator stand-in."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from controller.connection import api_client
from tests.fixtures.front_proxy import proxied_server
from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
WAIT = 60.0  # a loaded machine: an upper bound on waiting, not a target


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    server_process.kubectl("apply", "-f", str(REPO / "examples"))
    return server_process


def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[1]: line.split() for line in out.splitlines()[1:] if line.strip()}


def test_kubectl_get_and_explain(kubectl_server: ServerProcess) -> None:
    out = kubectl_server.kubectl("get", "menuitems", "-A").stdout
    assert out.splitlines()[0].split() == ["NAMESPACE", "NAME", "PRICE", "AVAILABLE", "AGE"]
    rows = _rows(out)
    assert rows["margherita"][:4] == ["default", "margherita", "1.75", "true"]
    assert rows["hawaii"][:4] == ["default", "hawaii", "9.75", "true"]
    out = kubectl_server.kubectl("get", "menuitems", "-l", f"{GROUP}/controversial=true", "-o", "name").stdout
    assert out.split() == [f"menuitem.{GROUP}/hawaii"]
    out = kubectl_server.kubectl("explain", "menuitems.price").stdout
    assert "price is the sum of the current cost" in out
    # Read-only: kubectl's delete is refused with kube's 405.
    failed = kubectl_server.kubectl("delete", "menuitem", "margherita", check=False)
    assert failed.returncode != 0
    assert "(MethodNotAllowed): the server does not allow this method" in failed.stderr, failed.stderr


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _until(lines: queue.Queue[str], wanted: set[str]) -> list[str]:
    """Lines read until one starting with each of `wanted` (namespace and name) has been seen."""
    seen: list[str] = []
    deadline = time.monotonic() + WAIT
    while wanted:
        line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
        seen.append(line)
        wanted.discard(" ".join(line.split()[:2]))
    return seen


def test_kubectl_get_watch_all_namespaces(kubectl_server: ServerProcess) -> None:
    process = subprocess.Popen(
        ["kubectl", "get", "menuitems", "-A", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl_server.env,
    )
    try:
        lines = _lines(process)
        _until(lines, {"default margherita", "default hawaii", "default margherita-extra-cheese"})
        # Basil's new price reaches the one pizza with basil, and no other.
        kubectl_server.kubectl("patch", "topping", "basil", "--type=merge", "-p", '{"spec":{"cost":0.5}}')
        changed = _until(lines, {"default margherita"})
        assert changed[-1].split()[:4] == ["default", "margherita", "2", "true"], changed
        # A new pizza in another namespace, then its deletion.
        kubectl_server.kubectl("create", "namespace", "kitchen", check=False)
        pizza = f"""apiVersion: {GROUP}/v1beta1
kind: Pizza
metadata: {{name: funghi, namespace: kitchen}}
spec: {{toppings: [{{name: tomato, quantity: 2}}]}}
"""
        kubectl_server.kubectl("apply", "-f", "-", input=pizza)
        added = _until(lines, {"kitchen funghi"})
        assert added[-1].split()[:4] == ["kitchen", "funghi", "1", "true"], added
        assert not any("margherita " in line for line in added), added
    finally:
        process.kill()
        process.wait(10)
        kubectl_server.kubectl("patch", "topping", "basil", "--type=merge", "-p", '{"spec":{"cost":0.25}}')


def test_python_client_list_and_watch(kubectl_server: ServerProcess) -> None:
    api = api_client(kubectl_server.kubeconfig)
    try:
        objects = client.CustomObjectsApi(api)
        listed = objects.list_namespaced_custom_object(GROUP, "v1beta1", "default", "menuitems")
        prices = {item["metadata"]["name"]: item["price"] for item in listed["items"]}
        assert prices["margherita-extra-cheese"] == 2.5
        item = objects.get_namespaced_custom_object(GROUP, "v1alpha1", "default", "menuitems", "hawaii")
        assert item["kind"] == "MenuItem" and item["available"] is True

        def cheaper_ham() -> None:
            time.sleep(0.5)
            objects.patch_cluster_custom_object(GROUP, "v1beta1", "toppings", "ham", {"spec": {"cost": 1.5}})

        changer = threading.Thread(target=cheaper_ham)
        stream = watch.Watch()
        events: list[dict[str, Any]] = []
        changer.start()
        for event in stream.stream(
            objects.list_namespaced_custom_object,
            GROUP,
            "v1beta1",
            "default",
            "menuitems",
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=int(WAIT),
        ):
            events.append(event)
            stream.stop()
        changer.join(WAIT)
        assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["price"]) for e in events] == [
            ("MODIFIED", "hawaii", 9.25)
        ]
    finally:
        api.close()


def rbac(spec: dict[str, Any]) -> dict[str, Any]:
    """Discovery for everyone; readers may get, list and watch the restaurant's resources."""
    if "nonResourceAttributes" in spec:
        return {"allowed": spec["nonResourceAttributes"]["verb"] == "get", "reason": "system:discovery"}
    attrs = spec["resourceAttributes"]
    if "readers" in spec.get("groups", []) and attrs["verb"] in ("get", "list", "watch"):
        return {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "readers"'}
    return {"allowed": False}


async def test_menu_items_behind_the_aggregator(tmp_path: Path) -> None:
    async with proxied_server(tmp_path, rbac) as s:
        code, _, err = await s.kubectl("alice", ["system:masters"], "apply", "-f", str(REPO / "examples"))
        assert code == 0, err
        code, out, err = await s.kubectl("bob", ["readers"], "get", "menuitems", "-A")
        assert code == 0, err
        assert _rows(out)["hawaii"][:4] == ["default", "hawaii", "9.75", "true"]
        # The reader's request was authorized by the cluster as `list menuitems`.
        reviews = [r["spec"] for r in s.plane.access_reviews if r["spec"]["user"] == "bob"]
        assert any(
            spec.get("resourceAttributes", {}).get("resource") == "menuitems"
            and spec["resourceAttributes"]["verb"] == "list"
            for spec in reviews
        ), reviews
        code, out, err = await s.kubectl("alice", ["system:masters"], "delete", "menuitem", "hawaii")
        assert code != 0 and "does not allow this method" in err, (out, err)
