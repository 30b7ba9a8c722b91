"""Merging an applied configuration into an object, and removing field paths from one, by schema.

Server-side apply needs two walks besides `to_field_set` and `compare` (apis/schema/fieldset.py):
sigs.k8s.io/structured-merge-diff's `typed.Merge` (the config wins on every leaf it sets; structs and
granular maps merge key by key; `set` and `map` lists merge item by item, identified by value or by
their map keys; atomic lists and maps, and scalars, are replaced) and `typed.RemoveItems` (what
pruning a manager's dropped fields uses). They follow the same schema rules as ownership does, so
what is merged item by item is exactly what is owned item by item.

Ordering of merged list items is SMD's: the config's items keep the config's order, items only the
live object has keep their place relative to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from apis.schema.fieldset import FieldSet, _child_schema, _item_element, _shape, field_element

_ABSENT: Any = object()


class MergeError(ValueError):
    """A config SMD refuses to merge (e.g. two items of a map list with the same key)."""


def merge(live: Any, config: Any, schema: Mapping[str, Any] | None) -> Any:
    """typed.Merge(live, config) with ruleKeepRHS; neither input is modified."""
    return _merge(live, config, schema, "")


def _merge(lhs: Any, rhs: Any, schema: Mapping[str, Any] | None, path: str) -> Any:
    if rhs is _ABSENT:
        return lhs
    if lhs is _ABSENT or lhs is None:
        return _check_config(rhs, schema, path)
    if rhs is None:
        # A null config keeps a granular container's items (SMD walks it against nothing).
        granular = _shape(schema, lhs) in ("map", "list") and isinstance(lhs, dict | list) and lhs
        return lhs if granular else None
    shape = _shape(schema, rhs)
    if shape == "map" and isinstance(lhs, dict) and isinstance(rhs, dict) and (lhs or rhs):
        out: dict[str, Any] = {}
        for key in {**lhs, **rhs}:
            child_schema, _ = _child_schema(schema, key)
            value = _merge(lhs.get(key, _ABSENT), rhs.get(key, _ABSENT), child_schema, f"{path}.{key}")
            if value is not _ABSENT:
                out[key] = value
        return out
    if shape == "list" and isinstance(lhs, list) and isinstance(rhs, list) and (lhs or rhs):
        assert schema is not None
        return _merge_items(lhs, rhs, schema, path)
    return rhs  # a leaf: the config wins


def _check_config(value: Any, schema: Mapping[str, Any] | None, path: str) -> Any:
    """A config value merged into nothing is taken whole, but its list keys must still be unique."""
    shape = _shape(schema, value)
    if shape == "list" and isinstance(value, list):
        assert schema is not None
        _index(value, schema, path, allow_duplicates=False)
        for item in value:
            _check_config(item, schema.get("items"), path)
    elif shape == "map" and isinstance(value, dict):
        for key, child in value.items():
            _check_config(child, _child_schema(schema, key)[0], f"{path}.{key}")
    return value


def undeclared_fields(config: Any, schema: Mapping[str, Any] | None) -> list[str]:
    """SMD's typing of an applied config (typed.AsTyped → validate): the fields its schema does not
    declare, as SMD paths (`.spec.bogus`, `.spec.toppings[name="ham"].extra`, `.list[0].x`).

    SMD stops reading a map at its first undeclared field (kube meets the keys in map order; here they
    are sorted). Untyped nodes (x-kubernetes-preserve-unknown-fields) and map values declare anything.
    """
    out: list[str] = []
    _undeclared(config, schema, "", out)
    return out


def _undeclared(value: Any, schema: Mapping[str, Any] | None, path: str, out: list[str]) -> None:
    if schema is None or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict) and schema.get("type") == "object":
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in sorted(value):
            if key in props:
                _undeclared(value[key], props[key], f"{path}.{key}", out)
            elif extra is True or isinstance(extra, dict):
                _undeclared(value[key], extra if isinstance(extra, dict) else None, f"{path}.{key}", out)
            else:
                out.append(f"{path}.{key}")
                return
    elif isinstance(value, list) and schema.get("type") == "array":
        associative = schema.get("x-kubernetes-list-type") in ("map", "set")
        for i, item in enumerate(value):
            element = _item_element(schema, item) if associative else None
            if associative and element is None:
                continue  # an item SMD cannot key: the merge reports it
            where = element_string(element) if element is not None else f"[{i}]"
            _undeclared(item, schema.get("items"), path + where, out)


def _index(
    items: list[Any], schema: Mapping[str, Any], path: str, *, allow_duplicates: bool
) -> tuple[list[str], dict[str, Any]]:
    """indexListPathElements: the items' path elements in order, and the item of each element."""
    elements: list[str] = []
    observed: dict[str, Any] = {}
    for i, item in enumerate(items):
        element = _item_element(schema, item)
        if element is None:
            raise MergeError(f"{path or '.'}: element {i}: {_unkeyable(schema, item)}")
        if element in observed:
            if not allow_duplicates:
                raise MergeError(f"{path or '.'}: duplicate entries for key {element_string(element)}")
            observed[element] = None  # duplicated live items are not merged with the config's
        else:
            observed[element] = item
        elements.append(element)
    return elements, observed


def _unkeyable(schema: Mapping[str, Any], item: Any) -> str:
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if schema.get("x-kubernetes-list-type") == "map" and keys:
        if not isinstance(item, dict):
            return "expected a map for an associative list item"
        missing = [k for k in keys if k not in item]
        return f'associative list with keys has an element that omits key field "{missing[0]}"'
    return "associative list with a non-scalar item"


def _merge_items(lhs: list[Any], rhs: list[Any], schema: Mapping[str, Any], path: str) -> list[Any]:
    """visitListItems, step for step (including its handling of items both sides share)."""
    items_schema = schema.get("items")
    rhs_pes, observed_rhs = _index(rhs, schema, path, allow_duplicates=False)
    lhs_pes, observed_lhs = _index(lhs, schema, path, allow_duplicates=True)
    shared = [pe for pe in rhs_pes if pe in observed_lhs]
    next_shared = shared.pop(0) if shared else None
    merged_rhs: set[str] = set()
    out: list[Any] = []

    def merge_item(pe: str, left: Any, right: Any) -> None:
        value = _merge(left, right, items_schema, f"{path}{element_string(pe)}")
        if value is not _ABSENT:
            out.append(value)

    li, ri = 0, 0
    while li < len(lhs_pes) or ri < len(rhs_pes):
        if li < len(lhs_pes) and ri < len(rhs_pes):
            pe = lhs_pes[li]
            if pe == rhs_pes[ri]:
                merged_rhs.add(pe)
                merge_item(pe, _or_absent(observed_lhs[pe]), observed_rhs[pe])
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in observed_rhs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lhs_pes):
            pe = lhs_pes[li]
            if pe not in observed_rhs:
                merge_item(pe, lhs[li], _ABSENT)
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
        if ri < len(rhs_pes):
            pe = rhs_pes[ri]
            merged_rhs.add(pe)
            merge_item(pe, _or_absent(observed_lhs.get(pe, _ABSENT)), observed_rhs[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


def _or_absent(value: Any) -> Any:
    return _ABSENT if value is None else value


# --- removal --------------------------------------------------------------------------------------


def remove_items(value: Any, to_remove: FieldSet, schema: Mapping[str, Any] | None) -> Any:
    """typed.RemoveItems: drops every path that is a member of `to_remove` (with what is under it).

    A container left empty by the removal disappears from its parent (SMD leaves a null there,
    which a structural schema's null pruning then drops, as apiextensions does)."""
    out = _remove(value, to_remove, schema)
    return {} if out is _ABSENT and isinstance(value, dict) else out


def _remove(value: Any, to_remove: FieldSet, schema: Mapping[str, Any] | None) -> Any:
    shape = _shape(schema, value)
    if shape == "map" and isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, child in value.items():
            element = field_element(key)
            if element in to_remove.members:
                continue
            subset = to_remove.children.get(element)
            if subset is not None and not subset.empty():
                child = _remove(child, subset, _child_schema(schema, key)[0])
                if child is _ABSENT:
                    continue
            out[key] = child
        return out if out else _ABSENT
    if shape == "list" and isinstance(value, list) and value:
        assert schema is not None
        kept: list[Any] = []
        for item in value:
            item_element = _item_element(schema, item)
            if item_element is not None and item_element in to_remove.members:
                continue
            subset = to_remove.children.get(item_element) if item_element is not None else None
            if subset is not None and not subset.empty():
                item = _remove(item, subset, schema.get("items"))
                if item is _ABSENT:
                    continue
            kept.append(item)
        return kept if kept else _ABSENT
    return value


def with_named_fields(fields: FieldSet, schema: Mapping[str, Any] | None) -> FieldSet:
    """Set.EnsureNamedFieldsAreMembers: struct fields that have owned children count as owned too."""
    out = FieldSet(set(fields.members))
    props = (schema or {}).get("properties") or {}
    for element, child in fields.children.items():
        if element.startswith("f:") and element[2:] in props:
            out.members.add(element)
        if element.startswith("f:"):
            child_schema, _ = _child_schema(schema, element[2:])
        else:
            child_schema = (schema or {}).get("items")
        out.children[element] = with_named_fields(child, child_schema)
    return out


def element_string(element: str) -> str:
    """PathElement.String: `.name`, `[key="v",other=1]`, `[="v"]`, `[3]`."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return "." + body
    if kind == "k":
        keys = json.loads(body)
        return "[" + ",".join(f"{k}={_to_string(keys[k])}" for k in sorted(keys)) + "]"
    if kind == "v":
        return f"[={_to_string(json.loads(body))}]"
    return f"[{body}]"


def _to_string(value: Any) -> str:
    """value.ToString: JSON for strings and containers, Go's %v for numbers and booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"))


def path_string(path: tuple[str, ...]) -> str:
    """fieldpath.Path.String: `.spec.toppings[name="basil"].quantity`."""
    return "".join(element_string(e) for e in path)
