"""Pruning: drop every field a structural schema does not specify, and say which ones went.

Follows apiextensions-apiserver's pkg/apiserver/schema/pruning/algorithm.go (PruneWithOptions): unknown
properties of objects are dropped, `additionalProperties` schemas govern map values,
`x-kubernetes-preserve-unknown-fields` keeps unknown fields but still prunes inside the properties it
does specify, and the resource root and `x-kubernetes-embedded-resource` objects always keep
apiVersion/kind/metadata. Kube prunes unknown ObjectMeta fields separately (objectmeta coercion) and
reports them as `metadata.<field>`; here the same happens by pruning `metadata` against the ObjectMeta
schema, so strict field validation names them the same way.

Paths are rendered as kube's UnknownFieldPathOptions does: `.` between keys (map keys too) and `[i]`
after list fields, and the list is sorted (pruning.PruneWithOptions sorts them).
"""

from __future__ import annotations

import copy
from typing import Any

from apis.meta.schemas import OBJECT_META

Schema = dict[str, Any]

_META_FIELDS = ("apiVersion", "kind", "metadata")


def prune(obj: Any, schema: Schema | None, *, is_resource_root: bool = True) -> list[str]:
    """Remove, in place, every field of `obj` not allowed by `schema`; return their paths, sorted."""
    removed: list[str] = []
    _prune(obj, schema, "", removed, embedded=is_resource_root)
    removed.sort()
    return removed


def unknown_fields(obj: Any, schema: Schema | None, *, is_resource_root: bool = True) -> list[str]:
    """The paths `prune` would remove, without touching `obj` (for fieldValidation=Strict/Warn)."""
    return prune(copy.deepcopy(obj), schema, is_resource_root=is_resource_root)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_embedded(schema: Schema | None, root: bool) -> bool:
    return root or bool(schema and schema.get("x-kubernetes-embedded-resource"))


def _additional(schema: Schema) -> tuple[bool, Schema | None]:
    """(map values allowed, their schema). `true` allows values but, as in kube, specifies nothing."""
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return True, extra
    return extra is True, None


def _prune(x: Any, schema: Schema | None, path: str, removed: list[str], *, embedded: bool = False) -> None:
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, schema, path, removed, embedded=embedded)
        return
    if isinstance(x, dict):
        if schema is None:
            for key in list(x):
                removed.append(_join(path, key))
                del x[key]
            return
        _prune_fields(x, schema, path, removed, embedded=embedded, keep_unknown=False)
    elif isinstance(x, list):
        items = schema.get("items") if schema is not None else None
        for i, item in enumerate(x):
            _prune(item, items, f"{path}[{i}]", removed)


def _skip_prune(x: Any, schema: Schema, path: str, removed: list[str], *, embedded: bool = False) -> None:
    """Keep unknown fields at this level, but prune inside the fields the schema does specify."""
    if isinstance(x, dict):
        _prune_fields(x, schema, path, removed, embedded=embedded, keep_unknown=True)
    elif isinstance(x, list):
        items = schema.get("items")
        if items is not None:
            for i, item in enumerate(x):
                _skip_prune(item, items, f"{path}[{i}]", removed)


def _prune_fields(
    x: dict[str, Any], schema: Schema, path: str, removed: list[str], *, embedded: bool, keep_unknown: bool
) -> None:
    """Prune inside the fields `schema` specifies; the others are dropped unless `keep_unknown`."""
    props: dict[str, Schema] = schema.get("properties") or {}
    allowed, extra = _additional(schema)
    is_embedded = _is_embedded(schema, embedded)
    for key in list(x):
        if is_embedded and key in _META_FIELDS:
            _prune_metadata(x, key, props, path, removed)
        elif key in props:
            # Only objects and lists have fields to prune (a scalar is kept whatever its schema).
            if isinstance(value := x[key], dict | list):
                _prune(value, props[key], _join(path, key), removed)
        elif allowed:
            if isinstance(value := x[key], dict | list):
                _prune(value, extra, _join(path, key), removed)
        elif not keep_unknown:
            removed.append(_join(path, key))
            del x[key]


def _prune_metadata(
    x: dict[str, Any], key: str, props: dict[str, Schema], path: str, removed: list[str]
) -> None:
    """apiVersion and kind stay as they are; metadata loses the fields ObjectMeta does not have."""
    if key != "metadata" or not isinstance(x[key], dict):
        return
    meta_schema = props.get("metadata")
    if not (isinstance(meta_schema, dict) and meta_schema.get("properties")):
        meta_schema = OBJECT_META
    _prune(x[key], meta_schema, _join(path, key), removed)
