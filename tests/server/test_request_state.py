"""One home for request keys: server/request_state.py (issue 9's tidy-up removed the `*_KEY` aliases).

aiohttp compares typed keys by identity, so a second key object for the same thing, or a plain string
key, silently reads nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"


def _string_key(node: ast.AST) -> bool:
    """`request["x"]` or `request.get("x")` with a string, on a variable named request."""
    if isinstance(node, ast.Subscript):
        target, key = node.value, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        target, key = node.func.value, node.args[0] if node.args else None
    else:
        return False
    named_request = isinstance(target, ast.Name) and target.id == "request"
    return named_request and isinstance(key, ast.Constant) and isinstance(key.value, str)


def _aliases(tree: ast.Module) -> list[int]:
    """Module-level `NAME = KEY` where KEY was imported from server.request_state."""
    keys = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "server.request_state"
        for alias in node.names
    }
    return [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in keys
    ]


def test_request_keys_are_made_only_in_request_state(server: Path = SERVER) -> None:
    made, aliases, string_keys = [], [], []
    for path in server.rglob("*.py"):
        source = path.read_text()
        handles_http = "from aiohttp import web" in source
        tree = ast.parse(source)
        aliases += [f"{path.relative_to(server)}:{line}" for line in _aliases(tree)]
        for node in ast.walk(tree):
            call = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(call, ast.Attribute)
                and call.attr == "RequestKey"
                and path.name != "request_state.py"
            ):
                made.append(f"{path.relative_to(server)}:{node.lineno}")
            if handles_http and _string_key(node):
                string_keys.append(f"{path.relative_to(server)}:{node.lineno}")
    assert made == []
    assert aliases == []
    assert string_keys == []
