"""kubectl against the OpenAPI documents in every format: mixed manifests, explain, diff and edit.

kubectl's client-side validation looks a kind up in /openapi/v3 and, for a kind no group version
there serves, falls back to /openapi/v2 as gnostic protobuf (KUBE-BEHAVIOUR.md). With a JSON answer
it failed with "proto: cannot parse invalid wire-format data"; with protobuf it reports kubectl's own
"no matches for kind" for what the server does not serve and applies the rest.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.fixtures.server import REPO, ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"

MIXED = f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  oven: hot
---
apiVersion: {GROUP}/v1beta1
kind: Pizza
metadata:
  name: funghi
spec:
  toppings:
  - name: tomato
    quantity: 1
"""


@pytest.fixture(scope="module")
def kubectl_server(server_process: ServerProcess) -> ServerProcess:
    server_process.kubectl("apply", "-f", str(REPO / "examples" / "00-toppings.yaml"))
    return server_process


def test_mixed_manifest_applies_what_is_served(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    manifest = tmp_path / "mixed.yaml"
    manifest.write_text(MIXED)
    result = kubectl_server.kubectl("apply", "-f", str(manifest), check=False)
    assert "proto: cannot parse" not in result.stderr, result.stderr
    assert 'no matches for kind "ConfigMap" in version "v1"' in result.stderr, result.stderr
    assert f"pizza.{GROUP}/funghi created" in result.stdout, result.stdout
    assert result.returncode != 0  # kubectl reports the kind it could not apply
    kubectl_server.kubectl("get", "pizza", "funghi")


def test_explain_pizza_spec(kubectl_server: ServerProcess) -> None:
    out = kubectl_server.kubectl("explain", "pizza.spec").stdout
    assert "toppings" in out and "replicas" in out


def test_diff_shows_a_change_and_writes_nothing(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    manifest = tmp_path / "funghi.yaml"
    manifest.write_text(MIXED.split("---\n", 1)[1].replace("quantity: 1", "quantity: 2"))
    result = kubectl_server.kubectl("diff", "-f", str(manifest), check=False)
    assert result.returncode == 1, result.stderr  # 1: differences found
    assert "quantity: 2" in result.stdout
    pizza = json.loads(kubectl_server.kubectl("get", "pizza", "funghi", "-o", "json").stdout)
    assert pizza["spec"]["toppings"] == [{"name": "tomato", "quantity": 1}]


def test_edit_with_an_editor_script(kubectl_server: ServerProcess, tmp_path: Path) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/quantity: 1/quantity: 3/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    env = {**kubectl_server.env, "EDITOR": str(editor), "KUBE_EDITOR": str(editor)}
    saved, kubectl_server.env = kubectl_server.env, env
    try:
        out = kubectl_server.kubectl("edit", f"pizzas.v1beta1.{GROUP}", "funghi").stdout
    finally:
        kubectl_server.env = saved
    assert "edited" in out
    pizza = json.loads(kubectl_server.kubectl("get", "pizza", "funghi", "-o", "json").stdout)
    assert pizza["spec"]["toppings"] == [{"name": "tomato", "quantity": 3}]
