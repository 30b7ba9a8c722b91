"""Hub classes generated from a structural schema, with their JSON conversions compiled for them.

Every object with declared properties (a Go struct) becomes a slotted dataclass whose attributes are
the JSON names in snake_case; maps, free-form objects and scalars stay JSON values. The conversions
between such a class and its JSON are generated as Python source per class, as `dataclasses` itself
does for `__init__`: they run on every read a cache has not memoized and on every write, and a
generic field-by-field interpreter was twice as slow as hand-written conversions.

JSON is written the way Go's encoder writes `omitempty` fields: structs (and metadata) always,
empty values never, except for fields with a schema default, whose `[]` or `""` is written so the
default does not apply on the next read. Nothing returned shares anything with its input, except
from `from_hub_view`, which is for callers that only read (Codec.view).
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from apis.meta.json_copy import copy_json

# Properties every object has and the hub does not keep as fields of its own.
_TYPE_META = ("apiVersion", "kind")


@functools.lru_cache(maxsize=1024)
def snake(name: str) -> str:
    """`flunderReference` → `flunder_reference`: the hub attribute of a JSON property. A property that
    is no Python name (`x-count`, `2d`) or a keyword (`from`) gets a usable one (`x_count`, `_2d`,
    `from_`), as generated Python clients name them."""
    attr = re.sub(r"\W", "_", re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower())
    if not attr or attr[0].isdigit():
        attr = "_" + attr
    return attr + "_" if keyword.iskeyword(attr) else attr


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
    # Written even when empty (the schema has a default for it).
    keep_empty: bool
    # type: integer — a whole float (valid for the schema) becomes an int in the hub.
    integer: bool
    # The schema's default of a scalar field: the class's default, and the value of a missing one.
    default: Any


@dataclass(frozen=True, slots=True)
class HubShape:
    """A generated hub class and its compiled conversions."""

    cls: type
    fields: tuple[_Field, ...]
    to_hub: Callable[[Any], Any] = field(compare=False)
    from_hub: Callable[[Any], dict[str, Any]] = field(compare=False)
    # from_hub for a reader that only reads: maps, lists and scalars are the hub's own (metadata is
    # a shallow copy, so its top-level keys may be popped). See Codec.view.
    from_hub_view: Callable[[Any], dict[str, Any]] = field(compare=False)


def _to_hub_source(fields: tuple[_Field, ...]) -> list[str]:
    lines = ["def to_hub(data):", "    get = (data if isinstance(data, dict) else {}).get"]
    for i, f in enumerate(fields):
        lines.append(f"    v = get({f.json!r})")
        if f.struct is not None:
            lines.append(f"    a{i} = t{i}(v)")
        elif f.items is not None:
            lines.append(f"    a{i} = [t{i}(x) for x in v] if v else []")
        elif f.json == "metadata":
            lines.append(f"    a{i} = copy_json(v) if v else {{}}")
        elif f.array:
            lines.append(f"    a{i} = [] if v is None else copy_json(v)")
        elif f.integer:
            lines.append(
                f"    a{i} = d{i} if v is None else int(v) if type(v) is float and v.is_integer() else v"
            )
        else:
            lines.append(
                f"    a{i} = d{i} if v is None else copy_json(v) if isinstance(v, (dict, list)) else v"
            )
    lines.append("    return cls(" + ", ".join(f"a{i}" for i in range(len(fields))) + ")")
    return lines


def _from_hub_source(fields: tuple[_Field, ...], *, view: bool = False) -> list[str]:
    name, struct = ("from_hub_view", "v") if view else ("from_hub", "f")
    lines = [f"def {name}(obj):", "    out = {}"]
    for i, f in enumerate(fields):
        lines.append(f"    v = obj.{f.attr}")
        if f.struct is not None:
            lines.append(f"    out[{f.json!r}] = {struct}{i}(v)")
            continue
        if f.json == "metadata":
            lines.append(f"    out[{f.json!r}] = {'dict(v)' if view else 'copy_json(v)'}")
            continue
        written = "v is not None" if f.keep_empty else "v is not None and v != '' and v != [] and v != {}"
        if f.items is not None:
            value = f"[{struct}{i}(x) for x in v]"
        elif view:
            value = "v"
        else:
            value = "copy_json(v)" if f.array else "copy_json(v) if isinstance(v, (dict, list)) else v"
        lines.append(f"    if {written}:")
        lines.append(f"        out[{f.json!r}] = {value}")
    lines.append("    return out")
    return lines


def _compile(cls: type, fields: tuple[_Field, ...]) -> tuple[Callable[[Any], Any], ...]:
    namespace: dict[str, Any] = {"cls": cls, "copy_json": copy_json}
    for i, f in enumerate(fields):
        nested = f.struct or f.items
        if nested is not None:
            namespace[f"t{i}"], namespace[f"f{i}"] = nested.to_hub, nested.from_hub
            namespace[f"v{i}"] = nested.from_hub_view
        namespace[f"d{i}"] = f.default
    source = _to_hub_source(fields) + _from_hub_source(fields) + _from_hub_source(fields, view=True)
    exec("\n".join(source), namespace)
    return namespace["to_hub"], namespace["from_hub"], namespace["from_hub_view"]


def hub_shape(
    name: str, schema: dict[str, Any], module: str, names: dict[str, str] | None = None, path: str = ""
) -> HubShape:
    """The hub class `name` for an object schema. Nested classes are named after their property
    (`Flunder` → `FlunderSpec`, array items `...Item`) unless `names` maps the property's path
    (`spec.toppings`) to a name."""
    names = names or {}
    fields: list[_Field] = []
    specs: list[tuple[str, Any, Any]] = []
    for prop, sub in schema.get("properties", {}).items():
        if prop in _TYPE_META:
            continue
        attr, at = snake(prop), f"{path}.{prop}".lstrip(".")
        if any(f.attr == attr for f in fields):
            raise ValueError(f"{name}: properties {prop!r} and another both become the attribute {attr!r}")
        struct = items = None
        scalar_default = None
        if prop == "metadata":
            default: Any = field(default_factory=dict)
        elif _is_struct(sub):
            struct = hub_shape(names.get(at, name + prop[0].upper() + prop[1:]), sub, module, names, at)
            default = field(default_factory=struct.cls)
        elif sub.get("type") == "array":
            if _is_struct(sub.get("items", {})):
                item_name = names.get(at, name + prop[0].upper() + prop[1:] + "Item")
                items = hub_shape(item_name, sub["items"], module, names, at)
            default = field(default_factory=list)
        else:
            scalar_default = sub.get("default")
            default = field(default=scalar_default)
        array = sub.get("type") == "array"
        integer = sub.get("type") == "integer"
        fields.append(_Field(prop, attr, struct, items, array, "default" in sub, integer, scalar_default))
        specs.append((attr, Any, default))
    cls = make_dataclass(name, specs, slots=True)
    cls.__module__ = module  # where the kind is declared, for reprs and pickling
    # Nested classes by property path, for `nested_class` (a class attribute: slots hold instances).
    nested: dict[str, type] = {}
    for f in fields:
        shape = f.struct or f.items
        if shape is not None:
            nested[f.json] = shape.cls
            inner: dict[str, type] = shape.cls.__hub_nested__  # type: ignore[attr-defined]
            nested.update({f"{f.json}.{path}": c for path, c in inner.items()})
    cls.__hub_nested__ = nested  # type: ignore[attr-defined]
    frozen = tuple(fields)
    to_hub, from_hub, from_hub_view = _compile(cls, frozen)
    return HubShape(cls, frozen, to_hub, from_hub, from_hub_view)


def nested_class(hub_class: type, path: str) -> type:
    """The generated class at a property path of a generated hub class: `nested_class(Pizza,
    "spec.toppings")` is the class of a topping item."""
    return hub_class.__hub_nested__[path]  # type: ignore[attr-defined]
