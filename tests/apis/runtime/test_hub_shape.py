"""Hub classes generated from arbitrary structural schemas: every JSON value the schema allows
survives JSON → hub → JSON → hub, nothing is shared with the input, and awkward property names
(keywords, dashes, names the generated code itself uses) still give working classes."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apis.runtime.hub_shape import hub_shape, nested_class, snake

_NAMES = st.sampled_from(
    ["a", "fooBar", "x-count", "2d", "from", "class", "self", "obj", "out", "v", "get", "data", "cls", "d0"]
)
_SCALARS = {
    "string": st.text(max_size=3),
    "integer": st.one_of(st.integers(-5, 5), st.integers(-5, 5).map(float)),
    "number": st.floats(-5, 5, allow_nan=False),
    "boolean": st.booleans(),
}


def _schemas(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    scalar = st.sampled_from(sorted(_SCALARS)).flatmap(
        lambda t: st.sampled_from([{"type": t}, {"type": t, "default": _default(t)}])
    )
    array = scalar.map(lambda items: {"type": "array", "items": items})
    leaf = st.one_of(scalar, array, st.just({"type": "object", "additionalProperties": {"type": "string"}}))
    if depth == 0:
        return leaf
    return st.one_of(
        leaf, _structs(depth - 1), _structs(depth - 1).map(lambda s: {"type": "array", "items": s})
    )


def _default(kind: str) -> Any:
    return {"string": "x", "integer": 1, "number": 0.5, "boolean": True}[kind]


def _structs(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    props = st.lists(st.tuples(_NAMES, _schemas(depth)), max_size=4, unique_by=lambda p: snake(p[0]))
    return props.map(lambda ps: {"type": "object", "properties": dict(ps)})


def _values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema["type"]
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return st.lists(_values(schema["items"]), max_size=3)
    if "properties" not in schema:
        return st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2)
    fields = {name: st.one_of(st.none(), _values(sub)) for name, sub in schema["properties"].items()}
    return st.fixed_dictionaries({}, optional=fields)


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(_structs(2))
    schema["properties"] = {"metadata": {"type": "object"}, **schema["properties"]}
    value = draw(_values(schema))
    value["metadata"] = {"name": "n"}
    return schema, value


def _non_empty_leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every scalar that is not empty, by path (numbers compared as numbers: 2.0 may become 2)."""
    if isinstance(value, dict):
        return {
            k: v for key, item in value.items() for k, v in _non_empty_leaves(item, f"{path}.{key}").items()
        }
    if isinstance(value, list):
        return {
            k: v for i, item in enumerate(value) for k, v in _non_empty_leaves(item, f"{path}[{i}]").items()
        }
    if value is None or value == "":
        return {}
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return {path: ("number", float(value)) if number else (type(value).__name__, value)}


def _containers(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _containers(v))]
    return []


@settings(max_examples=150, deadline=None)
@given(schema_and_value())
def test_round_trip_and_no_sharing(case: tuple[dict[str, Any], Any]) -> None:
    schema, value = case
    shape = hub_shape("Thing", schema, __name__)
    before = copy.deepcopy(value)
    out = shape.from_hub(shape.to_hub(value))
    assert value == before
    # Written JSON is stable, and so is the hub read from it. (Before that first write, an empty
    # `""` or `{}` and a missing value are both "empty", as Go's omitempty has it: the first write
    # leaves the empty one out, so its hub holds the field's default instead.)
    hub = shape.to_hub(out)
    assert shape.from_hub(hub) == out
    assert shape.to_hub(shape.from_hub(hub)) == hub
    assert not set(_containers(out)) & set(_containers(value))
    # Nothing given is lost or changed; what is added comes from schema defaults.
    written = _non_empty_leaves(out)
    assert {k: written.get(k) for k in _non_empty_leaves(value)} == _non_empty_leaves(value)


@settings(max_examples=150, deadline=None)
@given(schema_and_value())
def test_the_view_writes_the_same_json_and_copies_only_metadata(case: tuple[dict[str, Any], Any]) -> None:
    """from_hub_view is for readers (encoding, validation): the same JSON as from_hub, its maps and
    lists the hub's own, and metadata a copy whose top-level keys a reader may pop."""
    schema, value = case
    shape = hub_shape("Thing", schema, __name__)
    hub = shape.to_hub(value)
    before = shape.from_hub(hub)
    view = shape.from_hub_view(hub)
    assert view == before
    view["metadata"].pop("name")
    assert hub.metadata == {"name": "n"}
    assert shape.from_hub(hub) == before


def test_awkward_names_and_nested_classes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "from": {"type": "string"},
            "x-count": {"type": "integer", "default": 1},
            "spec": {"type": "object", "properties": {"self": {"type": "string"}}},
        },
    }
    shape = hub_shape("Odd", schema, __name__)
    hub = shape.to_hub({"from": "a", "spec": {"self": "s"}})
    assert (hub.from_, hub.x_count, hub.spec.self) == ("a", 1, "s")
    assert shape.from_hub(hub) == {"from": "a", "x-count": 1, "spec": {"self": "s"}}
    assert nested_class(shape.cls, "spec").__name__ == "OddSpec"


def test_properties_that_collide_are_refused() -> None:
    schema = {"type": "object", "properties": {"fooBar": {"type": "string"}, "foo_bar": {"type": "string"}}}
    with pytest.raises(ValueError, match="both become the attribute 'foo_bar'"):
        hub_shape("Clash", schema, __name__)
