"""Declarative defaulting from the schema's `default` values (KEP-575, with KEP-1929's null rules).

Mirrors apiextensions-apiserver's defaulting package, which the CR decoder runs as two passes:
PruneNonNullableNullsWithoutDefaults (prunenulls.go) then Default (algorithm.go).

- Only absent fields are defaulted; `{}`, `[]`, `""`, `0` and `false` are values and stay.
- A null in a non-nullable field (property or map value) is replaced by the field's default, or removed
  when there is none. A null list item of a non-nullable item schema gets the item default; without
  one it stays null, for validation to reject.
- Top-down: a defaulted object is itself defaulted inside, so `default: {}` on a struct fills in its
  fields' defaults.
- Defaults are deep-copied on every use: two objects never share a mutable default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apis.meta.json_copy import copy_json
from apis.schema.memo import per_schema

Schema = dict[str, Any]


def apply_defaults(obj: Any, schema: Schema | None) -> None:
    """Default `obj` in place from `schema` (see the module docstring for the exact rules)."""
    if schema is None:
        return
    prune_nulls = _null_pruner(schema)
    if prune_nulls is not None:
        prune_nulls(obj)
    default = _defaulter(schema)
    if default is not None:
        default(obj)


# --- compiled walkers -------------------------------------------------------------------------------
#
# Every decode (request or storage) runs both passes, so each is compiled once per schema node into a
# closure that already knows its node's fields, instead of looking the schema up on every node of
# every object. None stands for a walker with nothing to do below that node, which callers skip.

Walker = Callable[[Any], None]


def _default_of(schema: Schema | None) -> Any:
    # A JSON null default is no default at all (Go's Default.Object == nil).
    return None if schema is None else schema.get("default")


def _nullable(schema: Schema) -> bool:
    return bool(schema.get("nullable", False))


@per_schema
def _null_pruner(schema: Schema) -> Walker | None:
    """PruneNonNullableNullsWithoutDefaults below `schema`: a null in a non-nullable field without a
    default goes (the defaulting pass replaces the others)."""
    # key -> (a null there is dropped, the walker for its value); None: the map value schema.
    fields: dict[str, tuple[bool, Walker | None]] = {}
    for key, sub in (schema.get("properties") or {}).items():
        fields[key] = _null_rule(sub)
    extra = schema.get("additionalProperties")
    extra_rule = _null_rule(extra) if isinstance(extra, dict) else None
    items = schema.get("items")
    item_walker = _null_pruner(items) if isinstance(items, dict) else None
    if not fields and extra_rule is None and item_walker is None:
        return None

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for key in list(x):
                rule = fields.get(key, extra_rule)
                if rule is None:
                    continue
                value = x[key]
                if value is None:
                    if rule[0]:
                        del x[key]
                elif rule[1] is not None:
                    rule[1](value)
        elif isinstance(x, list) and item_walker is not None:
            for item in x:
                item_walker(item)

    return walk


def _null_rule(sub: Schema) -> tuple[bool, Walker | None]:
    return (not _nullable(sub) and _default_of(sub) is None, _null_pruner(sub))


@per_schema
def _defaulter(schema: Schema) -> Walker | None:
    """Default below `schema`, top-down; None when no default is declared at or below it (most
    subtrees: metadata, managedFields)."""
    if not _declares_default(schema):
        return None
    props: dict[str, Schema] = schema.get("properties") or {}
    # Absent (or non-nullable null) properties that get a default, then the properties to descend.
    defaults = [
        (key, sub["default"], _nullable(sub)) for key, sub in props.items() if _default_of(sub) is not None
    ]
    children = [(key, walker) for key, sub in props.items() if (walker := _defaulter(sub)) is not None]
    extra = schema.get("additionalProperties")
    extra = extra if isinstance(extra, dict) else None
    extra_default = _default_of(extra)
    extra_nullable = extra is not None and _nullable(extra)
    extra_walker = _defaulter(extra) if extra is not None else None
    items = schema.get("items")
    items = items if isinstance(items, dict) else None
    item_default = _default_of(items)
    item_nullable = items is not None and _nullable(items)
    item_walker = _defaulter(items) if items is not None else None

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for key, default, nullable in defaults:
                if key not in x or (x[key] is None and not nullable):
                    x[key] = copy_json(default)
            for key, child in children:
                if key in x:
                    child(x[key])
            if extra is not None:
                for key in list(x):
                    if key in props:
                        continue
                    if x[key] is None and not extra_nullable and extra_default is not None:
                        x[key] = copy_json(extra_default)
                    if extra_walker is not None:
                        extra_walker(x[key])
        elif isinstance(x, list) and items is not None:
            for i, item in enumerate(x):
                if item is None and not item_nullable and item_default is not None:
                    x[i] = copy_json(item_default)
                if item_walker is not None:
                    item_walker(x[i])

    return walk


def _declares_default(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(_declares_default(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_declares_default(v) for v in schema)
    return False
