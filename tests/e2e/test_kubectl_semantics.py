"""The API semantics kubectl relies on, driven by the real kubectl against a real server process.

One server for the module; every test uses its own object names so the tests do not depend on order.
kubectl's -v=6 request log is used where it matters which requests kubectl sends.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.fixtures.objects import topping
from tests.fixtures.server import ServerProcess

pytestmark = pytest.mark.e2e

GROUP = "restaurant.programming-kubernetes.info"
HOLD = "example.com/hold"


@pytest.fixture(scope="module")
def kube(server_process: ServerProcess) -> ServerProcess:
    """This module's own server (server_process is module-scoped): no state shared with other e2e files."""
    return server_process


def _topping(name: str, cost: float = 1, labels: dict | None = None, finalizers: list | None = None) -> str:
    """A Topping manifest for kubectl's stdin."""
    meta = {key: value for key, value in (("labels", labels), ("finalizers", finalizers)) if value}
    return yaml.safe_dump(topping(name, cost, **meta))


def _get(kube: ServerProcess, *args: str) -> dict:
    return json.loads(kube.kubectl("get", *args, "-o", "json").stdout)


def _missing(kube: ServerProcess, *args: str) -> bool:
    result = kube.kubectl("get", *args, check=False)
    return result.returncode != 0 and "NotFound" in result.stderr


def _requests(stderr: str) -> list[str]:
    """The "METHOD URL STATUS" lines kubectl -v=6 logs, without the host."""
    lines = []
    for line in stderr.splitlines():
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            marker = f"] {method} https://"
            if marker in line:
                rest = line.split(marker, 1)[1]
                path_and_status = rest.split("/", 1)[1]
                lines.append(f"{method} /{path_and_status.split(' in ')[0]}")
    return lines


def test_get_shows_the_columns(kube: ServerProcess) -> None:
    kube.kubectl("create", "-f", "-", input=_topping("col-anchovy", 2.5, {"salty": "yes"}))
    kube.kubectl("create", "-f", "-", input=_topping("col-basil", 0.25))
    out = kube.kubectl("get", "toppings", "-l", "salty", "--show-labels").stdout
    header, row = out.splitlines()
    assert header.split() == ["NAME", "COST", "AGE", "LABELS"]
    assert row.split()[:2] == ["col-anchovy", "2.5"] and row.split()[-1] == "salty=yes"
    out = kube.kubectl("get", "toppings", "col-basil", "col-anchovy", "-L", "salty").stdout
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "COST", "AGE", "SALTY"]
    assert [r.split()[0] for r in rows] == ["col-basil", "col-anchovy"]
    manifest = f"""
apiVersion: {GROUP}/v1alpha1
kind: Pizza
metadata: {{name: col-pizza, namespace: cols}}
spec: {{toppings: [col-anchovy, col-anchovy, col-basil]}}
"""
    kube.kubectl("create", "-f", "-", input=manifest)
    out = kube.kubectl("get", "pizzas", "-n", "cols", "-o", "wide").stdout
    header, row = out.splitlines()
    assert header.split() == ["NAME", "TOPPINGS", "COST", "AGE"]
    assert "2x col-anchovy, col-basil" in row
    out = kube.kubectl("get", "pizzas", "-A", "--no-headers").stdout
    assert out.split()[:2] == ["cols", "col-pizza"]


def test_get_watch_streams_changes_and_selector_moves(kube: ServerProcess) -> None:
    kube.kubectl("create", "-f", "-", input=_topping("w-olive", 1, {"watched": "yes"}))
    watcher = subprocess.Popen(
        [
            "kubectl",
            "get",
            "toppings",
            "-l",
            "watched=yes",
            "-w",
            "--output-watch-events",
            "--request-timeout=30s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kube.env,
    )
    try:
        time.sleep(1.5)
        kube.kubectl("create", "-f", "-", input=_topping("w-caper", 2, {"watched": "yes"}))
        kube.kubectl("patch", "topping", "w-caper", "--type=merge", "-p", '{"spec":{"cost":3}}')
        kube.kubectl("label", "topping", "w-olive", "watched=no", "--overwrite")
        kube.kubectl("delete", "topping", "w-caper")
        time.sleep(1.5)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    events = [line.split()[:3] for line in out.splitlines()]
    assert events[0] == ["EVENT", "NAME", "COST"], out
    assert events[1:] == [
        ["ADDED", "w-olive", "1"],
        ["ADDED", "w-caper", "2"],
        ["MODIFIED", "w-caper", "3"],
        ["DELETED", "w-olive", "1"],
        ["DELETED", "w-caper", "3"],
    ], out


def test_diff_exit_codes_and_nothing_persisted(kube: ServerProcess, tmp_path: Path) -> None:
    manifest = tmp_path / "diff.yaml"
    manifest.write_text(_topping("diff-salt", 3))
    result = kube.kubectl("diff", "-f", str(manifest), check=False)
    assert result.returncode == 1, result.stderr
    assert "+  name: diff-salt" in result.stdout and "+  cost: 3" in result.stdout
    assert _missing(kube, "topping", "diff-salt")

    kube.kubectl("apply", "-f", str(manifest))
    result = kube.kubectl("diff", "-f", str(manifest), check=False)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr

    manifest.write_text(_topping("diff-salt", 4))
    result = kube.kubectl("diff", "-f", str(manifest), "-v=6", check=False)
    assert result.returncode == 1, result.stderr
    assert "-  cost: 3" in result.stdout and "+  cost: 4" in result.stdout
    assert "-  generation: 1" in result.stdout and "+  generation: 2" in result.stdout
    # Every write kubectl diff sends is a dry run.
    writes = [r for r in _requests(result.stderr) if not r.startswith("GET")]
    assert writes and all("dryRun=All" in r for r in writes), writes
    assert _get(kube, "topping", "diff-salt")["spec"] == {"cost": 3}


def test_create_dry_run_server(kube: ServerProcess) -> None:
    out = kube.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=_topping("dry-truffle", 9)
    ).stdout
    dry = json.loads(out)
    assert dry["metadata"]["uid"] and dry["metadata"]["creationTimestamp"]
    assert dry["metadata"]["generation"] == 1 and dry["spec"] == {"cost": 9}
    assert _missing(kube, "topping", "dry-truffle")
    kube.kubectl("create", "-f", "-", input=_topping("dry-truffle", 9))
    result = kube.kubectl(
        "create", "--dry-run=server", "-f", "-", input=_topping("dry-truffle", 9), check=False
    )
    assert result.returncode != 0 and "AlreadyExists" in result.stderr
    result = kube.kubectl(
        "create", "--dry-run=server", "-f", "-", input=_topping("dry-gold", -1), check=False
    )
    assert result.returncode != 0 and "spec.cost" in result.stderr


def test_label_annotate_patch(kube: ServerProcess) -> None:
    kube.kubectl("create", "-f", "-", input=_topping("lap-pepper", 1))
    kube.kubectl("label", "topping", "lap-pepper", "heat=mild")
    result = kube.kubectl("label", "topping", "lap-pepper", "heat=hot", check=False)
    assert result.returncode != 0 and "already has a value (mild)" in result.stderr
    kube.kubectl("label", "topping", "lap-pepper", "heat=hot", "--overwrite")
    kube.kubectl("label", "topping", "lap-pepper", "extra=1")
    out = kube.kubectl("label", "topping", "lap-pepper", "extra-").stdout
    assert "unlabeled" in out
    kube.kubectl("annotate", "topping", "lap-pepper", "note=spicy")
    out = kube.kubectl("label", "topping", "lap-pepper", "dry=run", "--dry-run=server").stdout
    assert "labeled (server dry run)" in out
    got = _get(kube, "topping", "lap-pepper")
    assert got["metadata"]["labels"] == {"heat": "hot"}
    assert got["metadata"]["annotations"] == {"note": "spicy"}
    assert got["metadata"]["generation"] == 1  # metadata changes do not move generation

    kube.kubectl("patch", "topping", "lap-pepper", "--type=merge", "-p", '{"spec":{"cost":2}}')
    kube.kubectl(
        "patch",
        "topping",
        "lap-pepper",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/cost","value":3}]',
    )
    result = kube.kubectl(
        "patch",
        "topping",
        "lap-pepper",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/cost","value":99}]',
        check=False,
    )
    assert result.returncode != 0
    got = _get(kube, "topping", "lap-pepper")
    assert (got["spec"], got["metadata"]["generation"]) == ({"cost": 3}, 3)


def test_edit(kube: ServerProcess, tmp_path: Path) -> None:
    kube.kubectl("create", "-f", "-", input=_topping("edit-dill", 3))
    editor = tmp_path / "editor.sh"
    # At most double in one update (the transition rule on spec.cost).
    editor.write_text('#!/bin/sh\nsed -i "s/cost: 3/cost: 6/" "$1"\n')
    editor.chmod(0o755)
    env = {**kube.env, "KUBE_EDITOR": str(editor)}
    result = subprocess.run(
        ["kubectl", "edit", "topping", "edit-dill"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert f"topping.{GROUP}/edit-dill edited" in result.stdout
    got = _get(kube, "topping", "edit-dill")
    assert (got["spec"], got["metadata"]["generation"]) == ({"cost": 6}, 2)
    # An edit the server refuses leaves the object as it was.
    editor.write_text('#!/bin/sh\nsed -i "s/cost: 6/cost: -6/" "$1"\n')
    result = subprocess.run(
        ["kubectl", "edit", "topping", "edit-dill"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode != 0
    assert f'toppings.{GROUP} "edit-dill" is invalid' in result.stderr
    assert _get(kube, "topping", "edit-dill")["spec"] == {"cost": 6}


def test_apply_twice_is_unchanged(kube: ServerProcess, tmp_path: Path) -> None:
    manifest = tmp_path / "apply.yaml"
    docs = [
        yaml.safe_load(_topping("apply-ham", 1.75)),
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "Pizza",
            "metadata": {"name": "apply-alpha"},
            "spec": {"toppings": ["apply-ham", "apply-ham"]},
        },
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Pizza",
            "metadata": {"name": "apply-beta"},
            "spec": {"toppings": [{"name": "apply-ham", "quantity": 2}]},
        },
    ]
    manifest.write_text(yaml.safe_dump_all(docs))
    out = kube.kubectl("apply", "-f", str(manifest)).stdout
    assert out.count(" created") == 3, out
    rvs = {
        n: _get(kube, k, n)["metadata"]["resourceVersion"]
        for k, n in (("topping", "apply-ham"), ("pizza", "apply-alpha"), ("pizza", "apply-beta"))
    }
    out = kube.kubectl("apply", "-f", str(manifest)).stdout
    assert [line.rsplit(" ", 1)[1] for line in out.splitlines()] == ["unchanged"] * 3, out
    assert rvs == {
        n: _get(kube, k, n)["metadata"]["resourceVersion"]
        for k, n in (("topping", "apply-ham"), ("pizza", "apply-alpha"), ("pizza", "apply-beta"))
    }
    docs[0]["spec"]["cost"] = 2
    manifest.write_text(yaml.safe_dump_all(docs))
    out = kube.kubectl("apply", "-f", str(manifest)).stdout
    assert f"topping.{GROUP}/apply-ham configured" in out
    assert f"pizza.{GROUP}/apply-alpha unchanged" in out


def test_delete_waits(kube: ServerProcess) -> None:
    kube.kubectl("create", "-f", "-", input=_topping("del-sage", 1))
    result = kube.kubectl("delete", "topping", "del-sage", "--wait=true", "--timeout=20s", "-v=6")
    assert f'topping.{GROUP} "del-sage" deleted' in result.stdout
    requests = _requests(result.stderr)
    assert any(r.startswith(f"DELETE /apis/{GROUP}/v1beta1/toppings/del-sage 200") for r in requests), (
        requests
    )
    assert _missing(kube, "topping", "del-sage")


def test_delete_held_by_a_finalizer(kube: ServerProcess) -> None:
    kube.kubectl("create", "-f", "-", input=_topping("fin-thyme", 1, finalizers=[HOLD]))
    # kubectl waits for the object to go; it cannot while the finalizer holds it.
    result = kube.kubectl("delete", "topping", "fin-thyme", "--timeout=2s", check=False)
    assert result.returncode != 0 and "timed out waiting" in result.stderr
    held = _get(kube, "topping", "fin-thyme")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert held["metadata"]["finalizers"] == [HOLD]
    # A waiting delete completes once the finalizer is removed.
    waiting = subprocess.Popen(
        ["kubectl", "delete", "topping", "fin-thyme", "--timeout=30s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kube.env,
    )
    try:
        time.sleep(1.5)
        assert waiting.poll() is None, "kubectl delete must still be waiting"
        kube.kubectl(
            "patch",
            "topping",
            "fin-thyme",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
        )
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert f'topping.{GROUP} "fin-thyme" deleted' in out
    assert _missing(kube, "topping", "fin-thyme")


def test_delete_by_selector_and_all_sends_one_delete_per_object(kube: ServerProcess) -> None:
    for name, group in (("sel-a1", "a"), ("sel-a2", "a"), ("sel-b1", "b")):
        kube.kubectl("create", "-f", "-", input=_topping(name, 1, {"sel": group}))
    result = kube.kubectl("delete", "toppings", "-l", "sel=a", "-v=6")
    requests = _requests(result.stderr)
    deletes = [r for r in requests if r.startswith("DELETE")]
    assert [d.split()[1].rsplit("/", 1)[1] for d in deletes] == ["sel-a1", "sel-a2"], requests
    assert any("labelSelector=sel%3Da" in r for r in requests if r.startswith("GET"))
    assert kube.kubectl("get", "toppings", "-l", "sel", "-o", "name").stdout.split() == [
        f"topping.{GROUP}/sel-b1"
    ]

    for ns, name in (("all-1", "p1"), ("all-1", "p2"), ("all-2", "p3")):
        pizza = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Pizza",
            "metadata": {"name": name, "namespace": ns},
        }
        manifest = yaml.safe_dump({**pizza, "spec": {"toppings": []}})
        kube.kubectl("create", "-f", "-", input=manifest)
    result = kube.kubectl("delete", "pizzas", "--all", "-n", "all-1", "-v=6")
    deletes = [r for r in _requests(result.stderr) if r.startswith("DELETE")]
    assert [d.split()[1] for d in deletes] == [
        f"/apis/{GROUP}/v1beta1/namespaces/all-1/pizzas/p1",
        f"/apis/{GROUP}/v1beta1/namespaces/all-1/pizzas/p2",
    ]
    assert kube.kubectl("get", "pizzas", "-n", "all-2", "-o", "name").stdout.split() == [f"pizza.{GROUP}/p3"]
    assert kube.kubectl("get", "pizzas", "-n", "all-1", "-o", "name").stdout == ""
