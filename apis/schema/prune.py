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
import functools
from collections.abc import Callable
from typing import Any

from apis.meta.schemas import OBJECT_META
from apis.schema.memo import per_schema

Schema = dict[str, Any]

_META_FIELDS = ("apiVersion", "kind", "metadata")


def prune(obj: Any, schema: Schema | None, *, is_resource_root: bool = True) -> list[str]:
    """Remove, in place, every field of `obj` not allowed by `schema`; return their paths, sorted."""
    removed: list[str] = []
    pruner = _pruner(schema, skip=False, embedded=is_resource_root)
    if pruner is not None:
        pruner(obj, "", removed)
    removed.sort()
    return removed


def unknown_fields(obj: Any, schema: Schema | None, *, is_resource_root: bool = True) -> list[str]:
    """The paths `prune` would remove, without touching `obj` (for fieldValidation=Strict/Warn)."""
    return prune(copy.deepcopy(obj), schema, is_resource_root=is_resource_root)


# --- compiled walkers -------------------------------------------------------------------------------
#
# Every write and every read from storage prunes, so the walk is compiled once per schema node into a
# closure that knows its node's fields (kube walks its Structural schema, a typed tree; walking the
# JSON schema dict instead meant looking up "properties", "additionalProperties" and the extensions
# on every node of every object). A walker takes (value, its path, removed) and changes value in
# place; None stands for a walker that can never remove anything, which callers skip.

Pruner = Callable[[Any, str, list[str]], None]


def _pruner(schema: Schema | None, *, skip: bool, embedded: bool) -> Pruner | None:
    """The walker for `schema`: kube's prune (skip=False) or skipPrune (skip=True: this level keeps
    unknown fields, as under x-kubernetes-preserve-unknown-fields). `embedded` keeps apiVersion, kind
    and metadata (the resource root and x-kubernetes-embedded-resource objects)."""
    if schema is None:
        return _drop_everything
    return _COMPILED[skip, embedded](schema)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _additional(schema: Schema) -> tuple[bool, Schema | None]:
    """(map values allowed, their schema). `true` allows values but, as in kube, specifies nothing."""
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return True, extra
    return extra is True, None


def _compile(schema: Schema, skip: bool, embedded: bool) -> Pruner | None:
    if not skip and schema.get("x-kubernetes-preserve-unknown-fields"):
        return _pruner(schema, skip=True, embedded=embedded)
    fields = _fields_walker(schema, keep_unknown=skip, embedded=embedded)
    items = schema.get("items")
    items = items if isinstance(items, dict) else None
    # skipPrune walks list items only when the schema says what they are; prune always does.
    item_walker = None if skip and items is None else _pruner(items, skip=skip, embedded=False)
    if fields is None and item_walker is None:
        return None

    def walk(x: Any, path: str, removed: list[str]) -> None:
        if isinstance(x, dict):
            if fields is not None:
                fields(x, path, removed)
        elif isinstance(x, list) and item_walker is not None:
            for i, item in enumerate(x):
                if isinstance(item, dict | list):
                    item_walker(item, f"{path}[{i}]", removed)

    return walk


def _drop_everything(x: Any, path: str, removed: list[str]) -> None:
    """prune with no schema: an object loses every field; lists are walked for objects inside."""
    if isinstance(x, dict):
        for key in list(x):
            removed.append(_join(path, key))
            del x[key]
    elif isinstance(x, list):
        for i, item in enumerate(x):
            if isinstance(item, dict | list):
                _drop_everything(item, f"{path}[{i}]", removed)


def _fields_walker(schema: Schema, *, keep_unknown: bool, embedded: bool) -> Pruner | None:
    """An object's fields: each specified one walked by its own schema, map values by
    additionalProperties, the others dropped unless `keep_unknown`."""
    props: dict[str, Schema] = schema.get("properties") or {}
    allowed, extra = _additional(schema)
    keeps_meta = embedded or bool(schema.get("x-kubernetes-embedded-resource"))
    # Only objects and lists have fields to prune (a scalar is kept whatever its schema).
    children = {key: _pruner(sub, skip=False, embedded=False) for key, sub in props.items()}
    extra_walker = _pruner(extra, skip=False, embedded=False) if allowed else None
    meta_walker = _metadata_walker(props) if keeps_meta else None
    nothing_below = meta_walker is None and extra_walker is None
    if keep_unknown and nothing_below and all(child is None for child in children.values()):
        return None

    def walk(x: dict[str, Any], path: str, removed: list[str]) -> None:
        for key in list(x):
            if keeps_meta and key in _META_FIELDS:
                # apiVersion and kind stay as they are; metadata loses the fields ObjectMeta lacks.
                if key == "metadata" and meta_walker is not None and isinstance(x[key], dict):
                    meta_walker(x[key], _join(path, key), removed)
            elif key in children:
                child = children[key]
                if child is not None and isinstance(value := x[key], dict | list):
                    child(value, _join(path, key), removed)
            elif allowed:
                if extra_walker is not None and isinstance(value := x[key], dict | list):
                    extra_walker(value, _join(path, key), removed)
            elif not keep_unknown:
                removed.append(_join(path, key))
                del x[key]

    return walk


def _metadata_walker(props: dict[str, Schema]) -> Pruner | None:
    meta_schema = props.get("metadata")
    if not (isinstance(meta_schema, dict) and meta_schema.get("properties")):
        meta_schema = OBJECT_META
    return _pruner(meta_schema, skip=False, embedded=False)


# One memo per (skip, embedded) variant, keyed by the schema node (apis/schema/memo.py).
_COMPILED = {
    (skip, embedded): per_schema(functools.partial(_compile, skip=skip, embedded=embedded))
    for skip in (False, True)
    for embedded in (False, True)
}
