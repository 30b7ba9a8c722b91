"""Adding a third API group touches no file outside apis/<group>/, registry/<group>/ and the entry point.

Done as a fork would do it (tests/fixtures/fork.py): `apis/gizmo/`, `registry/gizmo/` and one entry
point added to a copy of the project, whose `python -m server` the real kubectl then drives, the new
group next to the two shipped ones.

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

GROUP = "gizmo.example.com"
ENTRY_POINT = entry_point(GROUP, "gizmo")

# The whole group, as a fork writes it: one kind with a spec (a default and a minimum), a status
# served through /status, a short name, a printer column and a validating admission plugin.
GROUP_FILES = {
    "apis/gizmo/__init__.py": '"""gizmo.example.com: the third group."""\n',
    "apis/gizmo/install.py": '''"""Gizmo, declared once: its v1 schema is the hub's shape."""

from apis.meta.schemas import object_schema
from apis.runtime.declare import Version, declare_kind
from apis.runtime.kinds import Column, GroupInfo
from apis.schema.build import string, struct

SIZE = {"type": "integer", "minimum": 1, "default": 1, "description": "How big the gizmo is."}
GIZMO = object_schema(
    "Gizmo is the third group's only kind.",
    {
        "spec": struct("GizmoSpec is what the user wants.", size=SIZE, color=string("Its color.")),
        "status": struct("GizmoStatus is what a controller saw.", phase=string("Where it is.")),
    },
)
GIZMO_KIND, Gizmo = declare_kind(
    "Gizmo",
    hub_version="v1",
    versions={"v1": Version(GIZMO)},
    storage_version="v1",
    namespaced=True,
    module=__name__,
    short_names=("gz",),
    columns=(Column("Size", "integer", "How big the gizmo is.", lambda gizmo: gizmo.spec.size),),
    subresources=("status",),
)
GROUP = GroupInfo("gizmo.example.com", versions=("v1",), kinds=(GIZMO_KIND,))
''',
    "registry/gizmo/__init__.py": '"""The gizmo.example.com registry."""\n',
    "registry/gizmo/admission.py": '''"""GizmoColor, the group's own validating plugin: no gizmo is black."""

from dataclasses import dataclass

from registry.generic.admission import Attributes, Operation, deny


@dataclass(frozen=True)
class GizmoColor:
    name: str = "GizmoColor"

    def handles(self, operation: Operation) -> bool:
        return operation in (Operation.CREATE, Operation.UPDATE)

    async def validate(self, attrs: Attributes) -> None:
        if attrs.kind == "Gizmo" and attrs.object.spec.color == "black":
            raise deny(attrs, "gizmos are never black")
''',
    "registry/gizmo/install.py": '''"""Installs gizmo.example.com: a Store, /status, GizmoColor."""

from apis.gizmo.install import GIZMO_KIND, GROUP
from apis.runtime.codec import Codec
from registry.generic.installation import GroupInstallation
from registry.generic.store import Store
from registry.generic.strategy import SpecStatusStrategy, StatusStrategy
from registry.gizmo.admission import GizmoColor
from storage.interface import Interface

STRATEGY = SpecStatusStrategy(namespaced=True)


def install(storage: Interface) -> GroupInstallation:
    gizmos = Store(Codec(GROUP.group, GIZMO_KIND), STRATEGY, storage)
    return GroupInstallation(
        group=GROUP,
        stores={GIZMO_KIND.resource: gizmos},
        subresources={GIZMO_KIND.resource: {"status": StatusStrategy(main=STRATEGY)}},
        validating=(GizmoColor(),),
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
    # Naming the group's plugin in a flag proves the server knows it (an unknown name fails the start).
    data = tmp_path_factory.mktemp("third-group") / "data"
    with fork_server(
        fork, tmp_path_factory.mktemp("site"), data, "--enable-admission-plugins=GizmoColor"
    ) as proc:
        yield proc


def gizmo(server: ServerProcess, name: str) -> dict:
    return json.loads(server.kubectl("get", "gizmo", name, "-o", "json").stdout)


def test_the_fork_changes_only_the_groups_folders_and_the_entry_point(fork: Path) -> None:
    assert changed_files(fork) == {*GROUP_FILES, "pyproject.toml"}
    assert added_pyproject_lines(fork) == ([ENTRY_POINT], 1)


def test_api_resources_lists_the_third_group_next_to_the_shipped_ones(server: ServerProcess) -> None:
    out = server.kubectl("api-resources", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert {"pizzas", "toppings", "flunders", "fischers", "gizmos"} <= set(rows)
    assert rows["gizmos"][1:5] == ["gz", f"{GROUP}/v1", "true", "Gizmo"]
    groups = server.kubectl("api-versions").stdout.split()
    assert f"{GROUP}/v1" in groups


def test_create_defaults_and_drops_a_status_the_user_sent(server: ServerProcess) -> None:
    manifest = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g1", "namespace": "default"},
        "spec": {"color": "red"},
        "status": {"phase": "made-up"},
    }
    out = server.kubectl("apply", "-f", "-", input=json.dumps(manifest)).stdout
    assert out.strip() == f"gizmo.{GROUP}/g1 created"
    obj = gizmo(server, "g1")
    assert obj["spec"] == {"color": "red", "size": 1}
    assert "phase" not in obj.get("status", {})
    assert obj["metadata"]["generation"] == 1


def test_schema_validation_is_the_declared_one(server: ServerProcess) -> None:
    manifest = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g0"}, "spec": {"size": 0}}
    result = server.kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert result.returncode != 0
    assert "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1" in (
        result.stderr
    )


def test_the_groups_admission_plugin_runs(server: ServerProcess) -> None:
    manifest = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g-black"},
        "spec": {"color": "black"},
    }
    result = server.kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert result.returncode != 0
    assert f'gizmos.{GROUP} "g-black" is forbidden: gizmos are never black' in result.stderr


def test_get_prints_the_declared_column(server: ServerProcess) -> None:
    lines = server.kubectl("get", "gz").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "AGE"]
    assert lines[1].split()[:2] == ["g1", "1"]


def test_label_patch_and_status(server: ServerProcess) -> None:
    server.kubectl("label", "gizmo", "g1", "team=a")
    server.kubectl("patch", "gizmo", "g1", "--type=merge", "-p", '{"spec":{"size":3}}')
    server.kubectl(
        "patch", "gizmo", "g1", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Ready"}}'
    )
    obj = gizmo(server, "g1")
    assert obj["metadata"]["labels"] == {"team": "a"}
    assert obj["spec"]["size"] == 3 and obj["status"] == {"phase": "Ready"}
    assert obj["metadata"]["generation"] == 2
    names = server.kubectl("get", "gizmos", "-l", "team=a", "-o", "name").stdout.split()
    assert names == [f"gizmo.{GROUP}/g1"]


def test_server_side_apply(server: ServerProcess) -> None:
    manifest = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g1"}, "spec": {"size": 5}}
    # kubectl patch owns spec.size since the test above: alice takes it over.
    out = server.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=alice",
        "-f",
        "-",
        input=json.dumps(manifest),
    )
    assert out.stdout.strip() == f"gizmo.{GROUP}/g1 serverside-applied"
    conflict = {**manifest, "spec": {"size": 7}}
    result = server.kubectl(
        "apply", "--server-side", "--field-manager=bob", "-f", "-", input=json.dumps(conflict), check=False
    )
    assert result.returncode != 0
    assert 'conflict with "alice": .spec.size' in result.stderr
    assert gizmo(server, "g1")["spec"]["size"] == 5


def test_explain_reads_the_schema(server: ServerProcess) -> None:
    out = server.kubectl("explain", "gizmo.spec").stdout
    assert f"GROUP:      {GROUP}" in out and "How big the gizmo is." in out


def test_delete_waits_for_the_watch(server: ServerProcess) -> None:
    out = server.kubectl("delete", "gizmo", "g1", "--wait=true", timeout=60).stdout
    assert out.strip() == f'gizmo.{GROUP} "g1" deleted'
    assert server.kubectl("get", "gizmos", "-o", "name").stdout.strip() == ""
