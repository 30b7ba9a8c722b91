"""Sets of field paths (FieldsV1) computed from an object and its structural schema.

Server-side field management records, per manager, the set of fields it owns as a `fieldsV1` tree.
This is sigs.k8s.io/structured-merge-diff's `fieldpath.Set` plus the two walks the field manager
needs (`typed.ToFieldSet` and `typed.Compare`), driven by the same structural schema that prunes,
defaults and validates, so ownership follows the schema's list and map semantics:

- a list with `x-kubernetes-list-type: map` is keyed by its map keys (`k:{"name":"basil"}`), a `set`
  by its values (`v:"a"`), any other list is atomic (one leaf, as kube treats a CRD list without a
  list type); a map with `x-kubernetes-map-type: atomic` is one leaf;
- objects with `properties` and maps with `additionalProperties` are granular, one path per key;
- values without a schema (preserved unknown fields) are "deduced" as SMD does: maps are granular,
  lists atomic.

Path elements are kept in their serialized FieldsV1 form ("f:spec", 'k:{"name":"x"}', 'v:"x"',
"i:0"), canonicalized on parse, so they hash and compare by value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apis.goformat import smd_json

_ABSENT: Any = object()


class FieldsV1Error(ValueError):
    """A fieldsV1 document that does not parse (kube: "error decoding set")."""


# --- path elements --------------------------------------------------------------------------------


def field_element(name: str) -> str:
    return "f:" + name


def key_element(keys: Mapping[str, Any]) -> str:
    try:
        # Types are part of the key: 1, 1.0 and True are equal in Python but not in JSON.
        return _key_element(tuple((k, type(v), v) for k, v in keys.items()))
    except TypeError:  # a list or map as a key's value: computed each time
        return "k:" + smd_json(dict(keys))


@functools.lru_cache(maxsize=4096)
def _key_element(items: tuple[tuple[str, type, Any], ...]) -> str:
    """Every list-map item of every write is keyed (a pizza's toppings by name), and the same few
    keys recur: Go-style JSON of each was 4 us, a fifth of a create's field tracking."""
    return "k:" + smd_json({k: v for k, _, v in items})


def value_element(value: Any) -> str:
    return "v:" + smd_json(value)


def index_element(index: int) -> str:
    return f"i:{index}"


def canonical_element(text: str) -> str | None:
    """A serialized path element in canonical form; None for an unknown type (kube skips those)."""
    if len(text) < 2:
        raise FieldsV1Error(f"key must be 2 characters long: {text!r}")
    if text[1] != ":":
        raise FieldsV1Error(f"missing colon: {text}")
    kind, body = text[0], text[2:]
    if kind == "f":
        return text
    if kind == "i":
        try:
            return index_element(int(body))
        except ValueError:
            raise FieldsV1Error(f"invalid index in {text!r}") from None
    if kind not in "kv":
        return None
    try:
        parsed = json.loads(body)
    except ValueError as e:
        raise FieldsV1Error(f"invalid path element {text!r}: {e}") from None
    if kind == "k":
        if not isinstance(parsed, dict):
            raise FieldsV1Error(f"key path element is not an object: {text!r}")
        return key_element(parsed)
    return value_element(parsed)


def _value_order(value: Any) -> tuple[Any, ...]:
    """value.Compare's total order: numbers < strings < booleans < lists < maps < null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(value[k])) for k in sorted(value)))
    return (5,)


@functools.lru_cache(maxsize=4096)
def element_order(element: str) -> tuple[Any, ...]:
    """PathElement.Less: field names < keys < values < indexes, each ordered by content."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return (0, body)
    if kind == "k":
        keys = json.loads(body)
        return (1, tuple((k, _value_order(keys[k])) for k in sorted(keys)))
    if kind == "v":
        return (2, _value_order(json.loads(body)))
    return (3, int(body))


# --- sets -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class FieldSet:
    """A set of paths, as a tree: `members` end a path here, `children` continue one."""

    members: set[str] = field(default_factory=set)
    children: dict[str, FieldSet] = field(default_factory=dict)

    @classmethod
    def of(cls, *paths: Sequence[str]) -> FieldSet:
        out = cls()
        for path in paths:
            out.insert(path)
        return out

    def insert(self, path: Sequence[str]) -> None:
        """An empty path names the whole object, which a set cannot hold (as in SMD)."""
        if not path:
            return
        node = self
        for element in path[:-1]:
            node = node.children.setdefault(element, FieldSet())
        node.members.add(path[-1])

    def has(self, path: Sequence[str]) -> bool:
        node = self
        for element in path[:-1]:
            child = node.children.get(element)
            if child is None:
                return False
            node = child
        return bool(path) and path[-1] in node.members

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def copy(self) -> FieldSet:
        return FieldSet(set(self.members), {k: v.copy() for k, v in self.children.items()})

    def union(self, other: FieldSet) -> FieldSet:
        out = self.copy()
        out.members |= other.members
        for element, child in other.children.items():
            mine = out.children.get(element)
            out.children[element] = child.copy() if mine is None else mine.union(child)
        return out

    def difference(self, other: FieldSet) -> FieldSet:
        """Removes exactly the paths of `other`; descendants of a removed path stay."""
        out = FieldSet(self.members - other.members)
        for element, child in self.children.items():
            theirs = other.children.get(element)
            rest = child.copy() if theirs is None else child.difference(theirs)
            if not rest.empty():
                out.children[element] = rest
        return out

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Removes the paths of `other` and everything below them."""
        out = FieldSet(self.members - other.members)
        for element, child in self.children.items():
            if element in other.members:
                continue
            theirs = other.children.get(element)
            rest = child.copy() if theirs is None else child.recursive_difference(theirs)
            if not rest.empty():
                out.children[element] = rest
        return out

    def intersection(self, other: FieldSet) -> FieldSet:
        out = FieldSet(self.members & other.members)
        for element, child in self.children.items():
            theirs = other.children.get(element)
            if theirs is not None:
                both = child.intersection(theirs)
                if not both.empty():
                    out.children[element] = both
        return out

    def paths(self) -> Iterator[tuple[str, ...]]:
        """Every path of the set, in FieldsV1 order (a node before its children)."""
        for element in sorted(self.members | set(self.children), key=element_order):
            if element in self.members:
                yield (element,)
            child = self.children.get(element)
            if child is not None:
                for rest in child.paths():
                    yield (element, *rest)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return set(self.paths()) == set(other.paths())

    # --- FieldsV1 ------------------------------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        """serialize.go emitContentsV1: sorted elements; "." (the node itself) comes last."""
        out: dict[str, Any] = {}
        for element in sorted(self.members | set(self.children), key=element_order):
            child = self.children.get(element)
            if child is None or child.empty():
                if element in self.members:
                    out[element] = {}
                continue
            body = child.to_fields_v1()
            if element in self.members:
                body["."] = {}
            out[element] = body
        return out

    @classmethod
    def from_fields_v1(cls, data: Any) -> FieldSet:
        node, _ = _read_v1(data)
        return node or cls()


def _read_v1(data: Any) -> tuple[FieldSet | None, bool]:
    """serialize.go readIterV1: returns (children, this node is also a member)."""
    if not isinstance(data, dict):
        raise FieldsV1Error(f"expected an object in fieldsV1, got {type(data).__name__}")
    children: FieldSet | None = None
    is_member = False
    for key, value in data.items():
        if key == ".":
            is_member = True
            continue
        element = canonical_element(key)
        if element is None:
            continue
        grandchildren, child_is_member = _read_v1(value)
        if child_is_member or grandchildren is not None:
            children = children or FieldSet()
        if child_is_member:
            children.members.add(element)  # type: ignore[union-attr]
        if grandchildren is not None:
            children.children[element] = grandchildren  # type: ignore[union-attr]
    if children is None:
        is_member = True
    return children, is_member


# --- schema walks ---------------------------------------------------------------------------------


def _shape(schema: Mapping[str, Any] | None, value: Any) -> str:
    """What SMD resolves a node to: "scalar", "list", "map" (granular) or "atomic-map"."""
    if schema is not None and schema.get("x-kubernetes-int-or-string"):
        return "scalar"
    if schema is None or not schema.get("type"):
        # Deduced from the value, as SMD does for untyped (preserve-unknown-fields) nodes.
        if isinstance(value, dict):
            return "map"
        return "atomic-list" if isinstance(value, list) else "scalar"
    kind = schema["type"]
    if kind == "array":
        return "list" if schema.get("x-kubernetes-list-type") in ("map", "set") else "atomic-list"
    if kind == "object":
        return "atomic-map" if schema.get("x-kubernetes-map-type") == "atomic" else "map"
    return "scalar"


def _child_schema(schema: Mapping[str, Any] | None, key: str) -> tuple[Mapping[str, Any] | None, bool]:
    """The schema of `key` in a map node, and whether `key` is a named field (a struct property)."""
    if schema is None:
        return None, False
    prop = (schema.get("properties") or {}).get(key)
    if prop is not None:
        return prop, True
    extra = schema.get("additionalProperties")
    return (extra if isinstance(extra, dict) else None), False


def _item_element(schema: Mapping[str, Any], item: Any) -> str | None:
    """listItemToPathElement; None for an item SMD cannot key (it reports an error; we skip it)."""
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if schema.get("x-kubernetes-list-type") == "map" and keys:
        if not isinstance(item, dict) or any(k not in item for k in keys):
            return None
        return key_element({k: item[k] for k in keys})
    if isinstance(item, dict | list):
        return None
    return value_element(item)


def _items(schema: Mapping[str, Any], items: Any) -> dict[str, Any]:
    """Items by path element; a repeated element keeps its first occurrence."""
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        element = _item_element(schema, item)
        if element is not None and element not in out:
            out[element] = item
    return out


def to_field_set(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> FieldSet:
    """typed.ToFieldSet: every leaf and every list item (and map key) of `obj`."""
    out = FieldSet()
    _to_set(obj, schema, (), out)
    return out


def _to_set(value: Any, schema: Mapping[str, Any] | None, path: tuple[str, ...], out: FieldSet) -> None:
    shape = _shape(schema, value)
    if shape == "list" and isinstance(value, list):
        assert schema is not None
        for element, item in _items(schema, value).items():
            _to_set(item, schema.get("items"), (*path, element), out)
            out.insert((*path, element))
    elif shape == "map" and isinstance(value, dict):
        for key, child in value.items():
            child_schema, named = _child_schema(schema, key)
            _to_set(child, child_schema, (*path, field_element(key)), out)
            if not named:
                out.insert((*path, field_element(key)))
    else:
        out.insert(path)


@dataclass(slots=True)
class Comparison:
    """typed.Comparison: what changed between two versions of an object."""

    added: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    removed: FieldSet = field(default_factory=FieldSet)

    def exclude(self, ignored: FieldSet) -> Comparison:
        """Drops `ignored` paths and their descendants (FilterFields with the reset fields)."""
        return Comparison(
            self.added.recursive_difference(ignored),
            self.modified.recursive_difference(ignored),
            self.removed.recursive_difference(ignored),
        )


def compare(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, schema: Mapping[str, Any]
) -> Comparison:
    """typed.Compare: `None` stands for "no object" (a create compares against nothing)."""
    out = Comparison()
    _compare(_ABSENT if old is None else old, _ABSENT if new is None else new, schema, (), out)
    return out


def _compare(
    lhs: Any, rhs: Any, schema: Mapping[str, Any] | None, path: tuple[str, ...], out: Comparison
) -> None:
    shape = _shape(schema, rhs if rhs is not _ABSENT else lhs)
    if shape == "list" and _all(lhs, rhs, list) and (_non_empty(lhs) or _non_empty(rhs)):
        assert schema is not None
        left, right = _items(schema, lhs), _items(schema, rhs)
        for element in {**left, **right}:
            _compare(
                left.get(element, _ABSENT),
                right.get(element, _ABSENT),
                schema.get("items"),
                (*path, element),
                out,
            )
    elif shape == "map" and _all(lhs, rhs, dict) and (_non_empty(lhs) or _non_empty(rhs)):
        left, right = (lhs if isinstance(lhs, dict) else {}), (rhs if isinstance(rhs, dict) else {})
        for key in {**left, **right}:
            child_schema, _ = _child_schema(schema, key)
            _compare(
                left.get(key, _ABSENT),
                right.get(key, _ABSENT),
                child_schema,
                (*path, field_element(key)),
                out,
            )
    else:
        # A leaf: a scalar, an atomic list or map, or a container empty on both sides (SMD keeps
        # the empty/null distinction by promoting those to leaves).
        if lhs is _ABSENT:
            out.added.insert(path)
        elif rhs is _ABSENT:
            out.removed.insert(path)
        elif not values_equal(lhs, rhs):
            out.modified.insert(path)
        return
    # The container itself appeared or went away (compare's postItemHook).
    if lhs is _ABSENT:
        out.added.insert(path)
    elif rhs is _ABSENT:
        out.removed.insert(path)


def created_fields(
    new: Mapping[str, Any], schema: Mapping[str, Any], skip: frozenset[str] = frozenset()
) -> FieldSet:
    """compare(None, new).added, without the comparison: what a create adds (the hot path of every
    create's field manager). Top-level fields in `skip` (the strategy's reset fields) are left out,
    as `exclude` would drop them."""
    out = FieldSet()
    props = schema.get("properties") or {}
    for key, value in new.items():
        if key in skip:
            continue
        _created(value, props.get(key), out, field_element(key))
    return out


def _created(value: Any, schema: Mapping[str, Any] | None, node: FieldSet, element: str) -> None:
    """Inserts `element` (and what is under it) into `node`, following `_compare` with lhs absent."""
    shape = _shape(schema, value)
    node.members.add(element)
    if shape == "list" and isinstance(value, list) and value:
        assert schema is not None
        child = node.children.setdefault(element, FieldSet())
        for item_element, item in _items(schema, value).items():
            _created(item, schema.get("items"), child, item_element)
    elif shape == "map" and isinstance(value, dict) and value:
        child = node.children.setdefault(element, FieldSet())
        for key, item in value.items():
            _created(item, _child_schema(schema, key)[0], child, field_element(key))


def _all(lhs: Any, rhs: Any, kind: type) -> bool:
    return all(v is _ABSENT or isinstance(v, kind) for v in (lhs, rhs))


def _non_empty(value: Any) -> bool:
    return value is not _ABSENT and bool(value)


def values_equal(a: Any, b: Any) -> bool:
    """value.Equals: numbers compare numerically (2 == 2.0), but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
