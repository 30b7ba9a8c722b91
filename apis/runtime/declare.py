"""Declare a kind once: its versions' structural schemas, from which the hub type and conversions follow.

The schema is the source of truth (it already drives pruning, defaults, validation and OpenAPI). One
version's schema is the hub's shape: the hub type is generated from it (a slotted dataclass per object
with properties; attribute names are the JSON names in snake_case, so `flunderReference` is
`spec.flunder_reference`), and the conversion between that shape and the hub is automatic. Another
version writes only what really differs, as two functions between its JSON and the hub's JSON shape
(`up`, `down`); everything else (metadata, copying, omitting empties) is done here.

Conversions never share anything with their input: the watch cache hands one decoded object to
many readers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from apis.meta.json_copy import copy_json
from apis.runtime.kinds import Column, HubObject, KindInfo, VersionedKind
from apis.runtime.lifecycle import Lifecycle

JsonTransform = Callable[[dict[str, Any]], dict[str, Any]]
# Properties every object has and the hub does not keep as fields of its own.
_TYPE_META = ("apiVersion", "kind")


@dataclass(frozen=True, slots=True)
class Version:
    """One served version of a kind. `up`/`down` translate this version's JSON to and from the hub's
    JSON shape; leave both out for a version that has the hub's shape."""

    schema: dict[str, Any]
    up: JsonTransform | None = None
    down: JsonTransform | None = None
    lifecycle: Lifecycle | None = None


def snake(name: str) -> str:
    """`flunderReference` → `flunder_reference`: the hub attribute of a JSON property."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _is_struct(schema: dict[str, Any]) -> bool:
    """An object with declared properties (a Go struct); maps and free-form objects stay JSON."""
    return schema.get("type") == "object" and "properties" in schema


@dataclass(frozen=True, slots=True)
class _Field:
    json: str
    attr: str
    struct: HubShape | None  # an object with properties
    items: HubShape | None  # an array of such objects
    array: bool
    # Written even when empty: a field with a schema default, where leaving out `[]` or `""` would
    # let the default apply on the next read and change the object.
    keep_empty: bool
    integer: bool


@dataclass(frozen=True, slots=True)
class HubShape:
    """A generated hub class and how each of its fields maps to JSON."""

    cls: type
    fields: tuple[_Field, ...]

    def to_hub(self, data: Any) -> Any:
        data = data if isinstance(data, dict) else {}
        values: dict[str, Any] = {}
        for f in self.fields:
            value = data.get(f.json)
            if f.struct is not None:
                values[f.attr] = f.struct.to_hub(value)
            elif f.items is not None:
                values[f.attr] = [f.items.to_hub(v) for v in value or []]
            elif f.json == "metadata":
                values[f.attr] = copy_json(value or {})
            elif f.integer and isinstance(value, float) and value.is_integer():
                values[f.attr] = int(value)  # the schema accepts 2.0 as an integer; the hub holds 2
            else:
                values[f.attr] = copy_json(value if value is not None or not f.array else [])
        return self.cls(**values)

    def from_hub(self, obj: Any) -> dict[str, Any]:
        """JSON as Go's encoder writes `omitempty` fields: structs always, empty values never."""
        out: dict[str, Any] = {}
        for f in self.fields:
            value = getattr(obj, f.attr)
            if f.struct is not None:
                out[f.json] = f.struct.from_hub(value)
            elif f.items is not None:
                if value or (f.keep_empty and value is not None):
                    out[f.json] = [f.items.from_hub(v) for v in value]
            elif f.json == "metadata" or _written(value, f.keep_empty):
                out[f.json] = copy_json(value)  # metadata is a struct in Go: always written
        return out


def _written(value: Any, keep_empty: bool) -> bool:
    if value is None:
        return False
    return keep_empty or (value != "" and value != [] and value != {})


def hub_shape(name: str, schema: dict[str, Any], module: str) -> HubShape:
    """The hub class `name` for an object schema, nested classes named after their property
    (`Flunder` → `FlunderSpec`)."""
    fields: list[_Field] = []
    specs: list[tuple[str, Any, Any]] = []
    for prop, sub in schema.get("properties", {}).items():
        if prop in _TYPE_META:
            continue
        attr = snake(prop)
        struct = items = None
        if prop == "metadata":
            default: Any = field(default_factory=dict)
        elif _is_struct(sub):
            struct = hub_shape(name + prop[0].upper() + prop[1:], sub, module)
            default = field(default_factory=struct.cls)
        elif sub.get("type") == "array":
            if _is_struct(sub.get("items", {})):
                items = hub_shape(name + prop[0].upper() + prop[1:] + "Item", sub["items"], module)
            default = field(default_factory=list)
        else:
            default = field(default=None)
        array = sub.get("type") == "array"
        integer = sub.get("type") == "integer"
        fields.append(_Field(prop, attr, struct, items, array, "default" in sub, integer))
        specs.append((attr, Any, default))
    cls = make_dataclass(name, specs, slots=True)
    cls.__module__ = module  # where the kind is declared, for reprs and pickling
    return HubShape(cls, tuple(fields))


def _versioned(shape: HubShape, version: str, declared: Version) -> VersionedKind:
    up, down = declared.up, declared.down

    def to_hub(data: dict[str, Any]) -> HubObject:
        return shape.to_hub(up(data) if up is not None else data)

    def from_hub(obj: Any) -> dict[str, Any]:
        data = shape.from_hub(obj)
        return down(data) if down is not None else data

    return VersionedKind(version, declared.schema, to_hub, from_hub, declared.lifecycle)


def declare_kind(
    kind: str,
    *,
    hub_version: str,
    versions: dict[str, Version],
    storage_version: str,
    namespaced: bool,
    module: str,
    plural: str = "",
    short_names: tuple[str, ...] = (),
    columns: tuple[Column, ...] = (),
) -> tuple[KindInfo, type]:
    """The kind's KindInfo and its generated hub class (`module` names where the class is declared).

    `versions` in priority order; `hub_version` is the one whose schema the hub has the shape of.
    """
    shape = hub_shape(kind, versions[hub_version].schema, module)
    info = KindInfo(
        kind=kind,
        list_kind=f"{kind}List",
        resource=plural or f"{kind.lower()}s",
        singular=kind.lower(),
        namespaced=namespaced,
        versions={v: _versioned(shape, v, declared) for v, declared in versions.items()},
        storage_version=storage_version,
        short_names=short_names,
        columns=columns,
    )
    return info, shape.cls
