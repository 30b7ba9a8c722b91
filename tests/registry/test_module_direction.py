"""The Store's helper modules never import the Store back, at run time or for type checking.

store.py uses paging (lists read through storage), watch (watches read through) and the rest; they
say what they need of a Store as a Protocol. An import back, even under TYPE_CHECKING, is the cycle
issue 9 removed (and what let paging reach into Store privates).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GENERIC = REPO / "registry" / "generic"
STORE = "registry.generic.store"


def imported_modules(path: Path) -> set[str]:
    """Every registry.generic module `path` imports, however nested (TYPE_CHECKING blocks included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("registry.generic")}


def module_path(name: str) -> Path | None:
    path = REPO.joinpath(*name.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path / "__init__.py" if (path / "__init__.py").is_file() else None


def test_nothing_the_store_imports_imports_the_store() -> None:
    used = {module_path(name) for name in imported_modules(GENERIC / "store.py")} - {None}
    assert GENERIC / "paging.py" in used and GENERIC / "watch.py" in used
    back = sorted(str(path.relative_to(REPO)) for path in used if path and STORE in imported_modules(path))
    assert back == []


def test_no_module_reaches_into_store_privates() -> None:
    for path in GENERIC.rglob("*.py"):
        if path.name != "store.py":
            source = path.read_text()
            assert "store._" not in source, path
