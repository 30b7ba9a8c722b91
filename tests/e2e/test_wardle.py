"""The wardle group of k8s.io/sample-apiserver next to restaurant, driven by the real kubectl.

Tests share one server process (module scope) and run in file order, like a user session.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

WARDLE = "wardle.example.com"
RESTAURANT = "restaurant.programming-kubernetes.info"


def test_api_resources_shows_both_groups(server_process: ServerProcess) -> None:
    out = server_process.kubectl("api-resources", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert {"pizzas", "toppings", "flunders", "fischers"} <= set(rows)
    assert f"{RESTAURANT}/v1beta1" in rows["pizzas"]
    # Flunder: namespaced, preferred v1beta1; Fischer: cluster-scoped, v1alpha1 only.
    assert f"{WARDLE}/v1beta1" in rows["flunders"] and "true" in rows["flunders"]
    assert f"{WARDLE}/v1alpha1" in rows["fischers"] and "false" in rows["fischers"]


def test_apply_wardle_examples(server_process: ServerProcess) -> None:
    out = server_process.kubectl("apply", "-f", str(REPO / "examples" / "wardle")).stdout
    assert f"fischer.{WARDLE}/strict-fischer created" in out
    assert f"flunder.{WARDLE}/my-first-flunder created" in out
    assert f"flunder.{WARDLE}/fischer-watcher created" in out
    again = server_process.kubectl("apply", "-f", str(REPO / "examples" / "wardle")).stdout
    assert "configured" not in again, again


def test_flunder_in_both_versions(server_process: ServerProcess) -> None:
    beta = json.loads(server_process.kubectl("get", "flunder", "fischer-watcher", "-o", "json").stdout)
    assert beta["spec"] == {"fischerReference": "strict-fischer", "referenceType": "Fischer"}
    alpha = server_process.kubectl(
        "get", f"flunders.v1alpha1.{WARDLE}", "my-first-flunder", "-o", "json"
    ).stdout
    assert json.loads(alpha)["metadata"]["labels"] == {"sample-label": "true"}


def test_get_prints_tables_for_both_kinds(server_process: ServerProcess) -> None:
    # sample-apiserver's kinds have no table convertor of their own: kube's default one shows the
    # creation timestamp itself under CREATED AT, not an AGE.
    flunders = server_process.kubectl("get", "flunders").stdout.splitlines()
    assert flunders[0].split() == ["NAME", "CREATED", "AT"]
    assert sorted(line.split()[0] for line in flunders[1:]) == ["fischer-watcher", "my-first-flunder"]
    for line in flunders[1:]:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line.split()[1]), line
    fischers = server_process.kubectl("get", "fischers").stdout.splitlines()
    assert [line.split()[0] for line in fischers[1:]] == ["strict-fischer"]


def test_ban_flunder_refuses_a_disallowed_name(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {WARDLE}/v1beta1
kind: Flunder
metadata: {{name: forbidden-flunder, namespace: default}}
"""
    result = server_process.kubectl("create", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert (
        f'flunders.{WARDLE} "forbidden-flunder" is forbidden: '
        "this name may not be used, please change the resource name"
    ) in result.stderr


def test_label_a_kind_without_spec(server_process: ServerProcess) -> None:
    """`kubectl label fischer x a=b` was a 500: the strategy assumed every kind has a spec."""
    out = server_process.kubectl("label", "fischer", "strict-fischer", "a=b").stdout
    assert f"fischer.{WARDLE}/strict-fischer labeled" in out
    names = server_process.kubectl("get", "fischers", "-l", "a=b", "-o", "name").stdout.split()
    assert names == [f"fischer.{WARDLE}/strict-fischer"]


def test_server_side_apply_a_kind_without_spec(server_process: ServerProcess) -> None:
    manifest = f"""
apiVersion: {WARDLE}/v1alpha1
kind: Fischer
metadata: {{name: applied-fischer}}
disallowedFlunders: [a]
"""
    out = server_process.kubectl("apply", "--server-side", "-f", "-", input=manifest).stdout
    assert out.strip() == f"fischer.{WARDLE}/applied-fischer serverside-applied"
    other = manifest.replace("[a]", "[a, b]")
    result = server_process.kubectl(
        "apply", "--server-side", "--field-manager=other", "-f", "-", input=other, check=False
    )
    assert result.returncode != 0
    assert 'conflict with "kubectl": .disallowedFlunders' in result.stderr
    server_process.kubectl(
        "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-", input=other
    )
    out = server_process.kubectl(
        "get", "fischer", "applied-fischer", "-o", "json", "--show-managed-fields"
    ).stdout
    fischer = json.loads(out)
    assert fischer["disallowedFlunders"] == ["a", "b"]
    assert {e["manager"] for e in fischer["metadata"]["managedFields"]} == {"other"}


def test_explain_flunder(server_process: ServerProcess) -> None:
    out = server_process.kubectl("explain", "flunder.spec").stdout
    assert "fischerReference" in out and f"GROUP:      {WARDLE}" in out


def test_kubectl_prints_the_deprecation_warning(server_process: ServerProcess) -> None:
    result = server_process.kubectl("get", f"flunders.v1alpha1.{WARDLE}")
    assert (
        f"Warning: {WARDLE}/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+" in result.stderr
    )
    assert "deprecated" not in server_process.kubectl("get", "flunders").stderr
