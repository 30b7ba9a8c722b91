"""Client-side `kubectl apply` and `kubectl patch --type=strategic` against a server that accepts SMP.

kubectl switches to strategic merge patch once the OpenAPI document lists it for the kind's PATCH
(KUBE-BEHAVIOUR.md), computing the patch from the published patch metadata: v1beta1 toppings by
name. The tests share one server of their own (module scope) and run in file order, like a session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
SMP = "application/strategic-merge-patch+json"


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    """This module's own server (server_process is module-scoped): no state shared with other e2e files."""
    return server_process


def pizza(server: ServerProcess, name: str, version: str = "v1beta1") -> dict:
    out = server.kubectl(
        "get", f"pizzas.{version}.{GROUP}", name, "-o", "json", "--show-managed-fields"
    ).stdout
    return json.loads(out)


def toppings(server: ServerProcess, name: str) -> list[tuple[str, int]]:
    return [(t["name"], t["quantity"]) for t in pizza(server, name)["spec"]["toppings"]]


def pizzas_manifest(tmp_path: Path, **quantities: dict[str, int | None]) -> Path:
    """examples/10-pizzas.yaml with some toppings' quantities changed (None drops the topping)."""
    docs = list(yaml.safe_load_all((REPO / "examples" / "10-pizzas.yaml").read_text()))
    for doc in docs:
        if doc and doc["metadata"]["name"] in quantities:
            changes = quantities[doc["metadata"]["name"]]
            kept = [t for t in doc["spec"]["toppings"] if changes.get(t["name"], 0) is not None]
            doc["spec"]["toppings"] = [{**t, "quantity": changes.get(t["name"], t["quantity"])} for t in kept]
    path = tmp_path / "pizzas.yaml"
    path.write_text(yaml.safe_dump_all([d for d in docs if d]))
    return path


def test_apply_examples_creates_them(kubectl_server: ServerProcess) -> None:
    out = kubectl_server.kubectl("apply", "-f", str(REPO / "examples")).stdout
    assert f"pizza.{GROUP}/hawaii created" in out and f"topping.{GROUP}/salami created" in out


def test_apply_twice_is_unchanged(kubectl_server: ServerProcess) -> None:
    out = kubectl_server.kubectl("apply", "-f", str(REPO / "examples")).stdout
    lines = [line for line in out.splitlines() if line]
    assert len(lines) == 10 and all(line.endswith(" unchanged") for line in lines), out


def test_apply_records_kubectl_as_the_manager(kubectl_server: ServerProcess) -> None:
    [entry] = pizza(kubectl_server, "hawaii")["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-client-side-apply", "Update")
    toppings_owned = entry["fieldsV1"]["f:spec"]["f:toppings"]
    assert 'k:{"name":"pineapple"}' in toppings_owned
    assert (
        "f:kubectl.kubernetes.io/last-applied-configuration"
        in entry["fieldsV1"]["f:metadata"]["f:annotations"]
    )


def test_changing_one_quantity_sends_a_strategic_patch_of_that_topping(
    kubectl_server: ServerProcess, tmp_path: Path
) -> None:
    before = toppings(kubectl_server, "hawaii")
    manifest = pizzas_manifest(tmp_path, hawaii={"pineapple": 4})
    result = kubectl_server.kubectl("apply", "-f", str(manifest), "-v=8")
    assert f"pizza.{GROUP}/hawaii configured" in result.stdout
    assert f"pizza.{GROUP}/margherita unchanged" in result.stdout
    assert f"Content-Type: {SMP}" in result.stderr
    assert "Content-Type: application/merge-patch+json" not in result.stderr
    body = next(
        line for line in result.stderr.splitlines() if "Request Body" in line and "setElementOrder" in line
    )
    assert '{\\"name\\":\\"pineapple\\",\\"quantity\\":4}' in body
    assert '\\"name\\":\\"ham\\",\\"quantity' not in body  # only the changed topping travels
    assert toppings(kubectl_server, "hawaii") == [(n, 4 if n == "pineapple" else q) for n, q in before]


def test_removing_a_topping_from_the_manifest_removes_it(
    kubectl_server: ServerProcess, tmp_path: Path
) -> None:
    manifest = pizzas_manifest(tmp_path, hawaii={"pineapple": 4, "ham": None})
    kubectl_server.kubectl("apply", "-f", str(manifest))
    assert [n for n, _ in toppings(kubectl_server, "hawaii")] == ["tomato", "mozzarella", "pineapple"]
    out = kubectl_server.kubectl("apply", "-f", str(manifest)).stdout
    assert f"pizza.{GROUP}/hawaii unchanged" in out


def test_defaults_inside_merged_items_do_not_reconfigure(
    kubectl_server: ServerProcess, tmp_path: Path
) -> None:
    # With JSON merge patch the whole list travels and a server-side default inside an item makes
    # every apply "configured"; a strategic patch merges by name and leaves the default alone.
    manifest = tmp_path / "lean.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "apiVersion": f"{GROUP}/v1beta1",
                "kind": "Pizza",
                "metadata": {"name": "lean"},
                "spec": {"toppings": [{"name": "tomato"}, {"name": "basil", "quantity": 2}]},
            }
        )
    )
    assert f"pizza.{GROUP}/lean created" in kubectl_server.kubectl("apply", "-f", str(manifest)).stdout
    assert f"pizza.{GROUP}/lean unchanged" in kubectl_server.kubectl("apply", "-f", str(manifest)).stdout
    assert toppings(kubectl_server, "lean") == [("tomato", 1), ("basil", 2)]


def test_kubectl_patch_strategic_adds_by_name(kubectl_server: ServerProcess) -> None:
    patch = json.dumps({"spec": {"toppings": [{"name": "basil", "quantity": 2}]}})
    out = kubectl_server.kubectl("patch", "pizza", "hawaii", "--type=strategic", "-p", patch).stdout
    assert f"pizza.{GROUP}/hawaii patched" in out
    assert toppings(kubectl_server, "hawaii")[0] == ("basil", 2)
    managers = {e["manager"]: e for e in pizza(kubectl_server, "hawaii")["metadata"]["managedFields"]}
    assert managers["kubectl-patch"]["fieldsV1"] == {
        "f:spec": {"f:toppings": {'k:{"name":"basil"}': {".": {}, "f:name": {}, "f:quantity": {}}}}
    }


def test_kubectl_patch_strategic_v1alpha1_replaces(kubectl_server: ServerProcess) -> None:
    patch = json.dumps({"spec": {"toppings": ["tomato", "basil"]}})
    kubectl_server.kubectl("patch", f"pizzas.v1alpha1.{GROUP}", "margherita", "--type=strategic", "-p", patch)
    assert pizza(kubectl_server, "margherita", "v1alpha1")["spec"]["toppings"] == ["tomato", "basil"]


def test_kubectl_patch_without_merge_key_fails_like_kube(kubectl_server: ServerProcess) -> None:
    patch = json.dumps({"spec": {"toppings": [{"quantity": 2}]}})
    result = kubectl_server.kubectl("patch", "pizza", "hawaii", "--type=strategic", "-p", patch, check=False)
    assert result.returncode != 0
    assert "map: map[quantity:2] does not contain declared merge key: name" in result.stderr


def test_get_hides_managed_fields_unless_asked(kubectl_server: ServerProcess) -> None:
    plain = yaml.safe_load(kubectl_server.kubectl("get", "pizza", "hawaii", "-o", "yaml").stdout)
    assert "managedFields" not in plain["metadata"]
    shown = yaml.safe_load(
        kubectl_server.kubectl("get", "pizza", "hawaii", "-o", "yaml", "--show-managed-fields").stdout
    )
    assert {e["manager"] for e in shown["metadata"]["managedFields"]} == {
        "kubectl-client-side-apply",
        "kubectl-patch",
    }
