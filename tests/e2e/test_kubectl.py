"""The README's user story, driven by the real kubectl against a real server process.

Tests in this module share one server (module scope) and run in file order, like a user session:
discover, apply the examples, read them in both versions, be refused, delete.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
import yaml

from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"


def test_api_resources_lists_every_kind(server_process: ServerProcess) -> None:
    out = server_process.kubectl("api-resources", f"--api-group={GROUP}", "-o", "wide").stdout
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert set(lines) == {"menuitems", "pizzas", "toppings"}
    assert f"{GROUP}/v1beta1" in lines["pizzas"] and "true" in lines["pizzas"].split()
    assert "false" in lines["toppings"].split()
    assert "create,delete,deletecollection,get,list,patch,update,watch" in lines["pizzas"].replace(" ", ",")
    # The menu is read-only.
    assert lines["menuitems"].split()[4] == "get,list,watch", lines["menuitems"]


def test_apply_examples_creates_everything(server_process: ServerProcess) -> None:
    out = server_process.kubectl("apply", "-f", str(REPO / "examples")).stdout
    for name in ("salami", "mozzarella", "tomato", "basil"):
        assert f"topping.{GROUP}/{name} created" in out
    for name in ("margherita", "margherita-extra-cheese", "hawaii", "house-special"):
        assert f"pizza.{GROUP}/{name} created" in out


def test_apply_again_is_unchanged(server_process: ServerProcess) -> None:
    out = server_process.kubectl("apply", "-f", str(REPO / "examples")).stdout
    lines = [line for line in out.splitlines() if line]
    assert lines and all(line.endswith("unchanged") for line in lines), out


def test_get_pizzas_all_namespaces_prints_columns(server_process: ServerProcess) -> None:
    out = server_process.kubectl("get", "pizzas", "-A").stdout
    header, *rows = out.splitlines()
    assert header.split() == ["NAMESPACE", "NAME", "TOPPINGS", "COST", "AGE"]
    by_name = {row.split()[1]: row for row in rows}
    assert "2x mozzarella, tomato" in by_name["margherita-extra-cheese"]
    assert by_name["house-special"].split()[0] == "default"


def test_margherita_in_both_versions(server_process: ServerProcess) -> None:
    alpha = yaml.safe_load(
        server_process.kubectl(
            "get", f"pizzas.v1alpha1.{GROUP}", "margherita-extra-cheese", "-o", "yaml"
        ).stdout
    )
    beta = yaml.safe_load(
        server_process.kubectl(
            "get", f"pizzas.v1beta1.{GROUP}", "margherita-extra-cheese", "-o", "yaml"
        ).stdout
    )
    assert alpha["apiVersion"] == f"{GROUP}/v1alpha1"
    assert alpha["spec"]["toppings"] == ["mozzarella", "mozzarella", "tomato"]
    assert beta["apiVersion"] == f"{GROUP}/v1beta1"
    assert beta["spec"]["toppings"] == [
        {"name": "mozzarella", "quantity": 2},
        {"name": "tomato", "quantity": 1},
    ]
    assert alpha["metadata"]["uid"] == beta["metadata"]["uid"]
    assert alpha["metadata"]["resourceVersion"] == beta["metadata"]["resourceVersion"]


def test_defaults_are_visible(server_process: ServerProcess) -> None:
    beta = json.loads(
        server_process.kubectl("get", f"pizzas.v1beta1.{GROUP}", "house-special", "-o", "json").stdout
    )
    assert beta["spec"]["toppings"] == [
        {"name": "salami", "quantity": 1},
        {"name": "mozzarella", "quantity": 1},
        {"name": "tomato", "quantity": 1},
    ]


def test_unknown_topping_is_refused(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {GROUP}/v1alpha1
kind: Pizza
metadata: {{name: fishy}}
spec: {{toppings: [tomato, anchovy]}}
"""
    result = server_process.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert "Forbidden" in result.stderr and "unknown topping: anchovy" in result.stderr
    missing = server_process.kubectl("get", "pizza", "fishy", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_unknown_field_is_refused_by_server_side_validation(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: olive}}
spec: {{cost: 1, colour: black}}
"""
    result = server_process.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert 'unknown field "spec.colour"' in result.stderr


def test_invalid_object_names_the_field(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: gold}}
spec: {{cost: -3}}
"""
    result = server_process.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert "spec.cost" in result.stderr and "Invalid value: -3" in result.stderr


def test_label_patch_and_selector(server_process: ServerProcess) -> None:
    server_process.kubectl("label", "pizza", "hawaii", "fruit=yes")
    out = server_process.kubectl("get", "pizzas", "-l", "fruit=yes", "-o", "name").stdout.split()
    assert out == [f"pizza.{GROUP}/hawaii"]
    server_process.kubectl(
        "patch", "pizza", "hawaii", "--type=merge", "-p", '{"metadata":{"annotations":{"a":"b"}}}'
    )
    got = json.loads(server_process.kubectl("get", "pizza", "hawaii", "-o", "json").stdout)
    assert got["metadata"]["annotations"]["a"] == "b" and got["metadata"]["generation"] == 1


def test_server_side_dry_run_persists_nothing(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {GROUP}/v1beta1
kind: Topping
metadata: {{name: truffle}}
spec: {{cost: 9}}
"""
    out = server_process.kubectl("create", "--dry-run=server", "-f", "-", input=manifest).stdout
    assert "created (server dry run)" in out
    assert server_process.kubectl("get", "topping", "truffle", check=False).returncode != 0


def test_watch_streams_changes(server_process: ServerProcess) -> None:
    watcher = subprocess.Popen(
        ["kubectl", "get", "toppings", "-w", "--output-watch-events", "--request-timeout=20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_process.env,
    )
    try:
        time.sleep(1.5)
        server_process.kubectl("patch", "topping", "basil", "--type=merge", "-p", '{"spec":{"cost":0.3}}')
        time.sleep(1.0)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    events = [line.split() for line in out.splitlines()]
    assert events[0][:3] == ["EVENT", "NAME", "COST"], out
    assert ["ADDED", "basil", "0.25"] in [e[:3] for e in events], out
    assert ["MODIFIED", "basil", "0.3"] in [e[:3] for e in events], out


def test_explain_uses_published_schema(server_process: ServerProcess) -> None:
    out = server_process.kubectl("explain", "pizza.spec.toppings").stdout
    assert "quantity" in out and f"GROUP:      {GROUP}" in out


def test_delete_waits_until_gone(server_process: ServerProcess) -> None:
    out = server_process.kubectl("delete", "pizza", "margherita", "--wait=true", "--timeout=20s").stdout
    assert f'pizza.{GROUP} "margherita" deleted' in out
    gone = server_process.kubectl("get", "pizza", "margherita", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
