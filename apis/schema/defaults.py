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

import copy
from typing import Any

from apis.schema.memo import per_schema

Schema = dict[str, Any]


def apply_defaults(obj: Any, schema: Schema | None) -> None:
    """Default `obj` in place from `schema` (see the module docstring for the exact rules)."""
    if schema is None:
        return
    _prune_nulls(obj, schema)
    _default(obj, schema)


def _default_of(schema: Schema | None) -> Any:
    # A JSON null default is no default at all (Go's Default.Object == nil).
    return None if schema is None else schema.get("default")


def _non_nullable_null(value: Any, schema: Schema | None) -> bool:
    return value is None and schema is not None and not schema.get("nullable", False)


def _value_schema(key: str, schema: Schema | None) -> Schema | None:
    """The schema governing `key` of an object: its property schema, else the map value schema."""
    if schema is None:
        return None
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _prune_nulls(x: Any, schema: Schema | None) -> None:
    if schema is None:
        # Without a schema nothing below is non-nullable (free-form values, managedFields' fieldsV1).
        return
    if isinstance(x, dict):
        for key in list(x):
            sub = _value_schema(key, schema)
            if _non_nullable_null(x[key], sub) and _default_of(sub) is None:
                del x[key]
            else:
                _prune_nulls(x[key], sub)
    elif isinstance(x, list):
        items = schema.get("items")
        for item in x:
            _prune_nulls(item, items)


@per_schema
def _has_defaults(schema: Schema) -> bool:
    """Whether any default is declared at or below `schema`: objects are defaulted on every decode,
    and most subtrees (metadata, managedFields) have none to apply."""
    return _declares_default(schema)


def _declares_default(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(_declares_default(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_declares_default(v) for v in schema)
    return False


def _default(x: Any, schema: Schema | None) -> None:
    if schema is None or not _has_defaults(schema):
        return
    if isinstance(x, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        for key, prop in props.items():
            default = _default_of(prop)
            if default is not None and (key not in x or _non_nullable_null(x[key], prop)):
                x[key] = copy.deepcopy(default)
        extra = schema.get("additionalProperties")
        for key in list(x):
            if key in props:
                _default(x[key], props[key])
            elif isinstance(extra, dict):
                if _non_nullable_null(x[key], extra) and _default_of(extra) is not None:
                    x[key] = copy.deepcopy(extra["default"])
                _default(x[key], extra)
    elif isinstance(x, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return
        for i, item in enumerate(x):
            if _non_nullable_null(item, items) and _default_of(items) is not None:
                x[i] = copy.deepcopy(items["default"])
            _default(x[i], items)
