"""Structural schema → CEL: the declared type of a node, its size bounds, and values converted to it.

Follows k8s.io/apiserver pkg/cel/common (schemas.go, valuesunstructured.go) where the engine allows:
number → double (JSON integers too), integer → int, boolean → bool, string → string, arrays → lists,
int-or-string and preserve-unknown-fields nodes → dyn. Objects are `map(string, dyn)` rather than
kube's typed object types (the engine cannot declare struct types without protobuf descriptors), so
a misspelt field is an evaluation error, not a compile error. String formats (date-time, duration,
byte) stay strings. The size bounds are apiextensions' (validation/cel_validation.go): an unbounded
string or list counts as filling the 3 MiB request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apis.cel import engine
from apis.cel.cost import SCALAR, Shape

Schema = dict[str, Any]

MAX_REQUEST_BYTES = 3 * 1024 * 1024


def cel_type(s: Schema) -> str:
    if s.get("x-kubernetes-int-or-string"):
        return engine.DYN
    kind = s.get("type")
    if kind == "number":
        return engine.DOUBLE
    if kind == "integer":
        return engine.INT
    if kind == "boolean":
        return engine.BOOL
    if kind == "string":
        return engine.STRING
    if kind == "array":
        items = s.get("items")
        return engine.list_of(cel_type(items) if isinstance(items, dict) else engine.DYN)
    if kind == "object":
        return engine.map_of(engine.STRING, engine.DYN)
    return engine.DYN


def to_cel(value: Any, s: Schema | None) -> Any:
    """The value as CEL sees it: numbers of `type: number` become doubles, nested too."""
    if s is None or value is None:
        return value
    kind = s.get("type")
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, list):
        items = s.get("items") if isinstance(s.get("items"), dict) else None
        return [to_cel(v, items) for v in value]
    if isinstance(value, dict):
        props: dict[str, Schema] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        extra = extra if isinstance(extra, dict) else None
        return {k: to_cel(v, props.get(k, extra)) for k, v in value.items()}
    return value


def has_numbers(s: Schema) -> bool:
    """Whether `to_cel` has anything to convert below `s` (most schemas: nothing, a plain copy)."""
    if s.get("type") == "number":
        return True
    children = list((s.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(s.get(key), dict):
            children.append(s[key])
    return any(has_numbers(c) for c in children)


def min_json_size(s: Schema) -> int:
    """The smallest serialized size of a value (estimateMinSizeJSON)."""
    kind = s.get("type")
    if kind == "string":
        return 2  # ""
    if kind == "boolean":
        return 4  # true
    if kind in ("object", "array"):
        return 2  # {} or []
    return 1


def max_size(s: Schema) -> float:
    kind = s.get("type")
    if kind == "string":
        if "maxLength" in s:
            return float(s["maxLength"]) * 4  # the estimator counts bytes; a character is at most 4
        enum = s.get("enum")
        if enum:
            return float(max(len(str(e)) for e in enum))
        return float(MAX_REQUEST_BYTES)
    if kind == "array":
        if "maxItems" in s:
            return float(s["maxItems"])
        items = s.get("items")
        return float(MAX_REQUEST_BYTES // (min_json_size(items if isinstance(items, dict) else {}) + 1))
    if kind == "object":
        if "maxProperties" in s:
            return float(s["maxProperties"])
        if isinstance(s.get("additionalProperties"), dict):
            return float(MAX_REQUEST_BYTES // (min_json_size(s["additionalProperties"]) + 6))
        return float(len(s.get("properties") or {}) or 1)
    return 1.0


def cardinality_factor(s: Schema) -> float:
    """How many times a node's rules can run per ancestor: maxItems/maxProperties, else unbounded."""
    if s.get("type") == "array":
        return max_size(s)
    if s.get("type") == "object" and isinstance(s.get("additionalProperties"), dict):
        return max_size(s)
    return 1.0


@dataclass(frozen=True, slots=True)
class SchemaShape:
    """The estimator's view of a schema node (cost.Shape)."""

    schema: Schema

    def max_size(self) -> float:
        return max_size(self.schema)

    def field(self, name: str) -> Shape:
        props = self.schema.get("properties") or {}
        if name in props:
            return SchemaShape(props[name])
        extra = self.schema.get("additionalProperties")
        return SchemaShape(extra) if isinstance(extra, dict) else SCALAR

    def item(self) -> Shape:
        items = self.schema.get("items")
        if isinstance(items, dict):
            return SchemaShape(items)
        extra = self.schema.get("additionalProperties")
        if isinstance(extra, dict) or self.schema.get("properties"):
            return SchemaShape({"type": "string"})  # a map's keys
        return SCALAR
