"""A rule may only select fields its schema declares: kube's "undefined field" compile error.

kube types `self` from the structural schema (apiserver/pkg/cel/common/schemas.go SchemaDeclType):
an object with properties becomes an object type with exactly those fields, so `self.sepc` or
`has(self.sepc)` is refused when the CRD is written ("undefined field 'sepc'"), not found when an
object happens to hit it. Here objects are `map(string, dyn)` for the engine (apis/schema/cel_types.py),
so the checked tree is walked instead, following each selection from `self` (and a plain `oldSelf`)
through properties, list items, map values, indexes and the variables of macros over them.

Conservative where kube's typing is subtle: a selection is refused only on an object that declares
properties and nothing else (no additionalProperties, no x-kubernetes-preserve-unknown-fields); the
fields kube always adds (apiVersion, kind, metadata at a resource's or an embedded resource's root)
pass. Anything whose schema is not known (a function's result, an optional) is not checked.
"""

from __future__ import annotations

from typing import Any

from apis.cel import checked, opaque

Schema = dict[str, Any]

# kube declares these at the root of a resource and of an embedded resource, even if the schema lacks them.
_RESOURCE_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def undefined_field_error(
    schema: Schema, checked_expr: Any, source: str, *, old_self: bool, root: bool
) -> str | None:
    """The compile error of the first selection of a field `schema` does not declare, or None.

    `old_self`: whether `oldSelf` is the old value itself (not an optional); `root`: whether `schema`
    is a resource's root, where kube always declares apiVersion, kind and metadata."""
    scope: dict[str, Schema | None] = {"self": schema, **({"oldSelf": schema} if old_self else {})}
    found: Found = []
    _visit(checked_expr.expr, scope, {id(schema)} if root else set(), found)
    if not found:
        return None
    node_id, field = found[0]
    return opaque.located(checked_expr, node_id, source, f"undefined field '{field}'")


Found = list[tuple[int, str]]  # (node id, field) of each undefined selection


def _visit(node: Any, scope: dict[str, Schema | None], roots: set[int], found: Found) -> Schema | None:
    """The schema of `node`'s value when known; records undefined selections in `found`."""
    kind = checked.kind(node)
    if kind == "ident_expr":
        return scope.get(node.ident_expr.name)
    if kind == "select_expr":
        operand = _visit(node.select_expr.operand, scope, roots, found)
        return _field(operand, node.select_expr.field, node.id, roots, found)
    if kind == "comprehension_expr":
        c = node.comprehension_expr
        over = _visit(c.iter_range, scope, roots, found)
        _visit(c.accu_init, scope, roots, found)
        # A list's items; iterating a map yields its keys, strings.
        item = over.get("items") if isinstance(over, dict) and over.get("type") == "array" else None
        inner = {**scope, c.iter_var: item if isinstance(item, dict) else None, c.accu_var: None}
        if c.iter_var2:
            inner[c.iter_var2] = None
        for part in (c.loop_condition, c.loop_step):
            _visit(part, inner, roots, found)
        _visit(c.result, {**scope, c.accu_var: None}, roots, found)
        return None
    if kind == "call_expr":
        call = node.call_expr
        if call.HasField("target"):
            _visit(call.target, scope, roots, found)
        args = [_visit(arg, scope, roots, found) for arg in call.args]
        return _element(args[0]) if call.function == "_[_]" and len(args) == 2 else None
    for child in checked.children(node):
        _visit(child, scope, roots, found)
    return None


def _field(s: Schema | None, field: str, node_id: int, roots: set[int], found: Found) -> Schema | None:
    if not isinstance(s, dict) or s.get("type") != "object":
        return None
    values = s.get("additionalProperties")
    if isinstance(values, dict):
        return values  # a map: selecting is looking a key up
    properties = s.get("properties")
    if isinstance(properties, dict) and field in properties:
        sub = properties[field]
        return sub if isinstance(sub, dict) else None
    declared_only = (
        isinstance(properties, dict)
        and properties
        and values in (None, False)
        and not s.get("x-kubernetes-preserve-unknown-fields")
    )
    resource_root = id(s) in roots or s.get("x-kubernetes-embedded-resource")
    if declared_only and not (resource_root and field in _RESOURCE_FIELDS):
        found.append((node_id, field))
    return None


def _element(s: Schema | None) -> Schema | None:
    """What indexing `s` yields: a list's items, a map's values."""
    if not isinstance(s, dict):
        return None
    if s.get("type") == "array":
        items = s.get("items")
        return items if isinstance(items, dict) else None
    values = s.get("additionalProperties")
    return values if s.get("type") == "object" and isinstance(values, dict) else None
