"""Regenerates every protobuf message of the server: kube's meta/v1 and runtime ones checked in under
apis/proto/, and the groups' kinds, whose .proto files it first writes from their structural schemas.

Run from the repository root, with the `proto-gen` extra installed (grpcio-tools' protoc):

    python -m apis.proto.generate

For each group in GROUPS that declares `GroupInfo.protobuf` (a package, e.g. `apis.restaurant`), each
served version gets `<package dir>/<version>/generated.proto`, written by apis/runtime/proto_schema.py
from the version's schemas and keeping the field numbers the file already has, then `generated_pb2.py`
(+ `.pyi`) next to it.

The .proto files are apimachinery's, byte for byte, at kube's import paths with `k8s.io` spelt as the
package directories `k8s/io` (a directory with a dot is not a Python package). protoc names each
generated module after the path it was given, so the files are staged in a temporary tree at
`apis/proto/k8s/io/...` with their `import "k8s.io/..."` lines pointed there: the generated code then
imports its dependencies as `apis.proto.k8s.io...`, and the checked-in .proto files stay diffable
against upstream (refresh them with `git show <rev>:pkg/.../generated.proto` from apimachinery).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from importlib import resources
from pathlib import Path

from apis.runtime.kinds import GroupInfo
from apis.runtime.proto_schema import render_version

PROTO_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PROTO_ROOT.parent.parent
# Relative to PROTO_ROOT; meta/v1 imports the two runtime ones (and nothing from util/intstr).
PROTO_FILES = (
    "k8s/io/apimachinery/pkg/runtime/generated.proto",
    "k8s/io/apimachinery/pkg/runtime/schema/generated.proto",
    "k8s/io/apimachinery/pkg/apis/meta/v1/generated.proto",
)
UPSTREAM_IMPORT = 'import "k8s.io/'
STAGED_IMPORT = 'import "apis/proto/k8s/io/'
# The modules whose GROUP may declare protobuf messages for its kinds: a group that does adds itself here.
GROUPS = ("apis.restaurant.install", "apis.wardle.install")


def groups() -> list[GroupInfo]:
    """The groups of GROUPS that declare where their kinds' messages live."""
    found: list[GroupInfo] = [importlib.import_module(name).GROUP for name in GROUPS]
    return [group for group in found if group.protobuf]


def kind_proto(group: GroupInfo, version: str) -> Path:
    """Where the .proto of a group's version is checked in, relative to the repository root."""
    assert group.protobuf is not None
    return Path(*group.protobuf.split("."), version, "generated.proto")


def write_kind_protos() -> list[Path]:
    """Writes each group version's .proto from its schemas, keeping the numbers the file has."""
    written = []
    for group in groups():
        for version in group.versions:
            path = REPO_ROOT / kind_proto(group, version)
            existing = path.read_text() if path.exists() else None
            text = render_version(group, version, existing)
            if text != existing:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            written.append(path.relative_to(REPO_ROOT))
    return written


def stage(into: Path, kind_protos: list[Path]) -> list[str]:
    """Copies the .proto files under `into` at their repository paths with imports at that path;
    returns their names."""
    names = []
    for path in [PROTO_ROOT.relative_to(REPO_ROOT) / relative for relative in PROTO_FILES] + kind_protos:
        name = path.as_posix()
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((REPO_ROOT / path).read_text().replace(UPSTREAM_IMPORT, STAGED_IMPORT))
        names.append(name)
    return names


def ensure_packages(kind_protos: list[Path]) -> None:
    """Every directory from apis/proto, or a group's package, down to a generated module is a regular
    package."""
    for relative in PROTO_FILES:
        directory = (PROTO_ROOT / relative).parent
        while directory != PROTO_ROOT:
            (directory / "__init__.py").touch()
            directory = directory.parent
    for path in kind_protos:
        directory = (REPO_ROOT / path).parent
        while not (directory / "__init__.py").exists():
            (directory / "__init__.py").touch()
            directory = directory.parent


def main() -> int:
    from grpc_tools import protoc

    kind_protos = write_kind_protos()
    well_known = resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as staging:
        names = stage(Path(staging), kind_protos)
        status: int = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{staging}",
                f"-I{well_known}",
                f"--python_out={REPO_ROOT}",
                f"--pyi_out={REPO_ROOT}",
                *names,
            ]
        )
    if status == 0:
        ensure_packages(kind_protos)
    return status


if __name__ == "__main__":
    sys.exit(main())
