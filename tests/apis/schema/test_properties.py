"""Properties over generated objects: pruning and defaulting are idempotent and agree with each other."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apis.meta.schemas import object_schema
from apis.schema.defaults import apply_defaults
from apis.schema.prune import prune, unknown_fields
from apis.schema.validate import validate

STR = {"type": "string"}

SCHEMA = object_schema(
    "A kind exercising every construct the engine walks.",
    {
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "cost": {"type": "number", "default": 1.5},
                "name": {"type": "string", "nullable": True, "default": "n"},
                "toppings": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "default": {},
                        "properties": {"name": STR, "quantity": {"type": "integer", "default": 1}},
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "v"}},
                "sizes": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"cm": {"type": "integer", "default": 30}},
                    },
                },
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "known": {"type": "object", "default": {"a": "x"}, "properties": {"a": STR}}
                    },
                },
                "plain": {"type": "object", "properties": {"a": STR, "b": {"type": "boolean"}}},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string", "default": "New"}}},
    },
)

KEYS = st.sampled_from(
    [
        *("spec", "status", "metadata", "cost", "name", "toppings", "labels", "sizes", "free", "known"),
        *("plain", "a", "b", "cm", "quantity", "phase", "bogus", "x"),
    ]
)
SCALARS = (
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=3)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)
OBJECTS = st.dictionaries(KEYS, JSON, max_size=6)


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_apply_defaults_is_idempotent(obj: dict[str, Any]) -> None:
    apply_defaults(obj, SCHEMA)
    once = copy.deepcopy(obj)
    apply_defaults(obj, SCHEMA)
    assert obj == once


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_prune_is_idempotent(obj: dict[str, Any]) -> None:
    reported = unknown_fields(obj, SCHEMA)
    assert prune(obj, SCHEMA) == reported
    once = copy.deepcopy(obj)
    assert prune(obj, SCHEMA) == []
    assert obj == once


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_defaults_never_introduce_prunable_fields(obj: dict[str, Any]) -> None:
    prune(obj, SCHEMA)
    apply_defaults(obj, SCHEMA)
    assert unknown_fields(obj, SCHEMA) == []


@settings(max_examples=200, deadline=None)
@given(OBJECTS)
def test_validate_never_raises_and_names_real_paths(obj: dict[str, Any]) -> None:
    for err in validate(obj, SCHEMA):
        assert (
            err.field == ""
            or err.field.split(".")[0].split("[")[0] in obj
            or err.type.reason == "FieldValueRequired"
        )
