"""Regenerates the Python messages of the kube .proto files checked in under apis/proto/.

Run from the repository root, with the `proto-gen` extra installed (grpcio-tools' protoc):

    python -m apis.proto.generate

The .proto files are apimachinery's, byte for byte, at kube's import paths with `k8s.io` spelt as the
package directories `k8s/io` (a directory with a dot is not a Python package). protoc names each
generated module after the path it was given, so the files are staged in a temporary tree at
`apis/proto/k8s/io/...` with their `import "k8s.io/..."` lines pointed there: the generated code then
imports its dependencies as `apis.proto.k8s.io...`, and the checked-in .proto files stay diffable
against upstream (refresh them with `git show <rev>:pkg/.../generated.proto` from apimachinery).
"""

from __future__ import annotations

import sys
import tempfile
from importlib import resources
from pathlib import Path

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


def stage(into: Path) -> list[str]:
    """Copies the .proto files under `into`/apis/proto with imports at that path; returns their names."""
    names = []
    for relative in PROTO_FILES:
        name = f"apis/proto/{relative}"
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((PROTO_ROOT / relative).read_text().replace(UPSTREAM_IMPORT, STAGED_IMPORT))
        names.append(name)
    return names


def ensure_packages() -> None:
    """Every directory from apis/proto down to a generated module is a regular package."""
    for relative in PROTO_FILES:
        directory = (PROTO_ROOT / relative).parent
        while directory != PROTO_ROOT:
            (directory / "__init__.py").touch()
            directory = directory.parent


def main() -> int:
    from grpc_tools import protoc

    well_known = resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as staging:
        names = stage(Path(staging))
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
        ensure_packages()
    return status


if __name__ == "__main__":
    sys.exit(main())
