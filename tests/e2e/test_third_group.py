"""Adding a third API group touches no file outside apis/<group>/, registry/<group>/ and the entry point.

Done as a fork would do it: a copy of the project's packages and pyproject.toml, to which this test
adds `apis/gizmo/`, `registry/gizmo/` and one line under
`[project.entry-points."pizza_apiserver.api_groups"]`, and nothing else. The distribution's metadata
is written from the fork's pyproject.toml as `pip install -e .` writes it (entry_points.txt, under the
same distribution name, so it stands in for the installed one), and `python -m server` runs from the
fork, so every package the server imports is the fork's copy. The real kubectl then drives the new
group next to the two shipped ones.

One server for the module; tests run in file order like a user session.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.installed import ENTRY_POINT_GROUP
from tests.fixtures.server import REPO, ServerProcess, start_server_process

pytestmark = pytest.mark.e2e

GROUP = "gizmo.example.com"
PACKAGES = ("apis", "registry", "server", "storage")
ENTRY_POINT = f'"{GROUP}" = "registry.gizmo.install:install"'

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


def copy_project(fork: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / package, fork / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", fork / "pyproject.toml")


def add_group(fork: Path) -> None:
    """The fork's whole change: the group's two folders and one entry point."""
    for path, text in GROUP_FILES.items():
        (fork / path).parent.mkdir(parents=True, exist_ok=True)
        (fork / path).write_text(text)
    pyproject = fork / "pyproject.toml"
    table = f'[project.entry-points."{ENTRY_POINT_GROUP}"]\n'
    text = pyproject.read_text()
    assert text.count(table) == 1
    pyproject.write_text(text.replace(table, table + ENTRY_POINT + "\n"))


def changed_files(fork: Path) -> set[str]:
    """Files of the fork that are not byte-for-byte the project's."""
    changed = set()
    for path in fork.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            relative = path.relative_to(fork)
            original = REPO / relative
            if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
                changed.add(str(relative))
    return changed


def write_distribution_metadata(fork: Path, site: Path) -> None:
    """What `pip install -e .` records of the fork that the server reads: its entry points."""
    project = tomllib.loads((fork / "pyproject.toml").read_text())["project"]
    info = site / f"pizza_apiserver-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = []
    for group, entries in project["entry-points"].items():
        lines += [f"[{group}]", *(f"{name} = {value}" for name, value in entries.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    fork = tmp_path_factory.mktemp("fork")
    copy_project(fork)
    add_group(fork)
    return fork


@pytest.fixture(scope="module")
def server(fork: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    site = tmp_path_factory.mktemp("site")
    write_distribution_metadata(fork, site)
    # Naming the group's plugin in a flag proves the server knows it (an unknown name fails the start).
    proc = start_server_process(
        tmp_path_factory.mktemp("third-group") / "data",
        "--enable-admission-plugins=GizmoColor",
        cwd=fork,
        env={"PYTHONPATH": str(site)},
    )
    try:
        yield proc
    finally:
        proc.stop()


def gizmo(server: ServerProcess, name: str) -> dict:
    return json.loads(server.kubectl("get", "gizmo", name, "-o", "json").stdout)


def test_the_fork_changes_only_the_groups_folders_and_the_entry_point(fork: Path) -> None:
    assert changed_files(fork) == {*GROUP_FILES, "pyproject.toml"}
    before = (REPO / "pyproject.toml").read_text().splitlines()
    after = (fork / "pyproject.toml").read_text().splitlines()
    assert [line for line in after if line not in before] == [ENTRY_POINT]
    assert len(after) == len(before) + 1


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
