"""The hub protocol is checked by the type checker of .ci/run: generic code that assumes a spec or a
status (what made `kubectl label fischer x a=b` a 500) does not type-check.

Runs mypy with the project's own configuration on a small module of generic code.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from mypy import api

REPO = Path(__file__).resolve().parents[3]

GENERIC_CODE = """
from apis.runtime.kinds import HubObject, set_spec, set_status, spec_of, status_of


def assumes_a_spec(obj: HubObject) -> None:
    obj.spec = None


def assumes_a_status(obj: HubObject) -> object:
    return obj.status


def checks_first(obj: HubObject, old: HubObject) -> None:
    if spec_of(old) is not None:
        set_spec(obj, spec_of(old))
    if status_of(old) is not None:
        set_status(obj, status_of(old))
"""


def test_mypy_refuses_spec_and_status_on_a_hub_object(tmp_path: Path) -> None:
    module = tmp_path / "generic_code.py"
    module.write_text(GENERIC_CODE)
    out, err, status = api.run(["--config-file", str(REPO / "pyproject.toml"), str(module)])
    assert status == 1, out + err
    errors = [line.split(": error: ")[1] for line in out.splitlines() if ": error: " in line]
    assert errors == [
        '"HubObject" has no attribute "spec"  [attr-defined]',
        '"HubObject" has no attribute "status"  [attr-defined]',
    ]


def test_mypy_checks_the_machinery_and_every_function_in_it() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert {"server", "registry", "storage", "apis"} <= set(config["files"])
    assert config["disallow_untyped_defs"] and config["disallow_incomplete_defs"]
    assert ".venv/bin/mypy" in (REPO / ".ci" / "run").read_text()
