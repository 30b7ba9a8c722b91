"""`kubectl apply --server-side` with the real kubectl: create, update, conflict, --force-conflicts, and
the migration of a client-side-applied object to server-side apply.

kubectl sends PATCH application/apply-patch+yaml with fieldManager=kubectl (force when asked) and
prints the server's 409 itself; after a client-side apply it also rewrites managedFields (csaupgrade)
so the `kubectl` applier takes over what `kubectl-client-side-apply` owned. One server of its own per
module, tests run in file order like a session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    server_process.kubectl("apply", "--server-side", "-f", str(REPO / "examples" / "00-toppings.yaml"))
    return server_process


def pizza(server: ServerProcess, name: str) -> dict:
    out = server.kubectl("get", f"pizzas.v1beta1.{GROUP}", name, "-o", "json", "--show-managed-fields").stdout
    return json.loads(out)


def managers(obj: dict) -> dict[str, str]:
    return {e["manager"]: e["operation"] for e in obj["metadata"].get("managedFields", [])}


def manifest(tmp_path: Path, name: str, toppings: dict[str, int], **labels: str) -> Path:
    doc = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Pizza",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {"toppings": [{"name": t, "quantity": q} for t, q in toppings.items()]},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(doc))
    return path


def test_server_side_apply_creates(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    path = manifest(tmp_path, "ssa", {"tomato": 1, "mozzarella": 2}, team="a")
    out = kubectl_server.kubectl("apply", "--server-side", "-f", str(path)).stdout
    assert out.strip() == f"pizza.{GROUP}/ssa serverside-applied"
    obj = pizza(kubectl_server, "ssa")
    assert managers(obj) == {"kubectl": "Apply"}
    assert [(t["name"], t["quantity"]) for t in obj["spec"]["toppings"]] == [("tomato", 1), ("mozzarella", 2)]


def test_toppings_were_applied_server_side_too(kubectl_server: ServerProcess) -> None:
    out = kubectl_server.kubectl(
        "get", f"toppings.{GROUP}", "salami", "-o", "json", "--show-managed-fields"
    ).stdout
    assert managers(json.loads(out)) == {"kubectl": "Apply"}


def test_server_side_apply_updates_and_prunes(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    path = manifest(tmp_path, "ssa", {"tomato": 3})
    kubectl_server.kubectl("apply", "--server-side", "-f", str(path))
    obj = pizza(kubectl_server, "ssa")
    assert [(t["name"], t["quantity"]) for t in obj["spec"]["toppings"]] == [("tomato", 3)]
    assert "labels" not in obj["metadata"]  # dropped from the manifest, owned by nobody else


def test_conflict_is_reported_by_kubectl(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    path = manifest(tmp_path, "ssa", {"tomato": 5})
    result = kubectl_server.kubectl(
        "apply", "--server-side", "--field-manager", "chef", "-f", str(path), check=False
    )
    assert result.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl": .spec.toppings[name="tomato"].quantity'
        in (result.stderr)
    ), result.stderr
    assert "--force-conflicts" in result.stderr  # kubectl's own advice, printed for a 409 from apply
    assert [t["quantity"] for t in pizza(kubectl_server, "ssa")["spec"]["toppings"]] == [3]


def test_force_conflicts_takes_the_field(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    path = manifest(tmp_path, "ssa", {"tomato": 5})
    kubectl_server.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager", "chef", "-f", str(path)
    )
    obj = pizza(kubectl_server, "ssa")
    assert [t["quantity"] for t in obj["spec"]["toppings"]] == [5]
    chef = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "chef")
    kubectl = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "kubectl")
    item = 'k:{"name":"tomato"}'
    assert "f:quantity" in chef["fieldsV1"]["f:spec"]["f:toppings"][item]
    assert "f:quantity" not in kubectl["fieldsV1"]["f:spec"]["f:toppings"][item]


def test_client_side_apply_migrates_to_server_side(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    kubectl_server.kubectl("apply", "-f", str(manifest(tmp_path, "csa", {"tomato": 1, "basil": 1}, team="a")))
    before = pizza(kubectl_server, "csa")
    assert managers(before) == {"kubectl-client-side-apply": "Update"}
    # The next manifest changes a quantity and drops a topping and the label.
    result = kubectl_server.kubectl(
        "apply", "--server-side", "-f", str(manifest(tmp_path, "csa", {"tomato": 2}))
    )
    assert "serverside-applied" in result.stdout
    assert "migrat" not in result.stderr.lower(), result.stderr  # kubectl warns when a migration step fails
    after = pizza(kubectl_server, "csa")
    # kubectl first applies the annotation alone as "kubectl-last-applied", then its JSON patch of
    # managedFields (csaupgrade) hands the client-side entry to "kubectl", then it applies again.
    assert managers(after) == {"kubectl": "Apply", "kubectl-last-applied": "Apply"}, after["metadata"]
    assert [(t["name"], t["quantity"]) for t in after["spec"]["toppings"]] == [("tomato", 2)]
    assert "labels" not in after["metadata"]
    last = json.loads(after["metadata"]["annotations"][LAST_APPLIED])
    assert last["spec"]["toppings"] == [{"name": "tomato", "quantity": 2}]


def test_readme_story_client_side_then_server_side(kubectl_server: ServerProcess) -> None:
    kubectl_server.kubectl("apply", "-f", str(REPO / "examples"))
    result = kubectl_server.kubectl("apply", "--server-side", "-f", str(REPO / "examples"))
    lines = [line for line in result.stdout.splitlines() if line]
    assert len(lines) == 10 and all(line.endswith(" serverside-applied") for line in lines), result.stdout
    assert "migrat" not in result.stderr.lower(), result.stderr
    hawaii = pizza(kubectl_server, "hawaii")
    assert "kubectl-client-side-apply" not in managers(hawaii)
    assert managers(hawaii)["kubectl"] == "Apply"
