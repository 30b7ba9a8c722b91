"""Validation ratcheting (KEP-4008, GA in kube 1.33) for the OpenAPI value validations.

On update, an error at a node that is unchanged from the stored object is dropped, so tightening a
schema in a new release never makes existing objects un-updatable: only what a write changes must
satisfy the new rules. A node is compared with its correlated old value: properties by name, map
values by key, `x-kubernetes-list-type: map` items by their keys; set and atomic list items have no
old value, so their nearest correlatable ancestor (the list) is compared instead. Root metadata,
apiVersion and kind never ratchet (kube validates ObjectMeta on its own).
"""

from __future__ import annotations

import re
from typing import Any

from apis.meta.field import FieldError

Schema = dict[str, Any]
_ABSENT = object()
_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")
_NEVER = ("metadata", "apiVersion", "kind")


def ratchet(errors: list[FieldError], new: Any, old: Any, schema: Schema) -> list[FieldError]:
    """`errors` of `new` without those at nodes unchanged from `old`."""
    return [e for e in errors if not unchanged(e.field, new, old, schema)]


def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    for name, index in _TOKEN.findall(path):
        out.append(name if name else (int(index) if index.isdigit() else index))
    return out


def unchanged(path: str, new: Any, old: Any, schema: Schema) -> bool:
    tokens = _tokens(path)
    if not tokens or tokens[0] in _NEVER:
        return False
    n, o, s = new, old, schema
    for token in tokens:
        if isinstance(token, int):
            if not isinstance(n, list) or not isinstance(o, list) or token >= len(n):
                break
            keys = s.get("x-kubernetes-list-map-keys") or []
            raw_items = s.get("items")
            items: Schema = raw_items if isinstance(raw_items, dict) else {}
            if s.get("x-kubernetes-list-type") != "map" or not keys:
                break  # uncorrelatable items: compare the whole list
            item = n[token]
            match = [
                x
                for x in o
                if isinstance(x, dict)
                and isinstance(item, dict)
                and all(x.get(k) == item.get(k) for k in keys)
            ]
            if not match:
                return False  # a new item
            n, o, s = item, match[0], items
            continue
        child_n = n.get(token, _ABSENT) if isinstance(n, dict) else _ABSENT
        child_o = o.get(token, _ABSENT) if isinstance(o, dict) else _ABSENT
        if child_n is _ABSENT and child_o is _ABSENT:
            break  # a required field missing in both: the parent decides
        if child_o is _ABSENT:
            return False
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        s = props.get(token) or (extra if isinstance(extra, dict) else {})
        n, o = child_n, child_o
    return same(n, o)


def same(a: Any, b: Any) -> bool:
    """Deep equality of decoded JSON where 1 and 1.0 are equal but 1 and true are not."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)
