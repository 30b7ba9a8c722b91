"""Defaulting per KEP-575 (absent fields, top-down) and KEP-1929 (nulls, list items, map values)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apis.schema.defaults import apply_defaults

STR_ABC = {"type": "string", "default": "abc"}

CASES: list[tuple[str, dict[str, Any], Any, Any]] = [
    # KEP-575 examples
    ("absent field gets the default", {"properties": {"foo": STR_ABC}}, {}, {"foo": "abc"}),
    ("present field is kept", {"properties": {"foo": STR_ABC}}, {"foo": "def"}, {"foo": "def"}),
    (
        "array default for an absent field",
        {"properties": {"foo": {"type": "array", "items": {"type": "integer"}, "default": [1]}}},
        {},
        {"foo": [1]},
    ),
    (
        "empty list stays empty",
        {"properties": {"foo": {"type": "array", "items": {"type": "integer"}, "default": [1]}}},
        {"foo": []},
        {"foo": []},
    ),
    (
        "top-down: the defaulted object is defaulted inside",
        {
            "properties": {
                "foo": {
                    "type": "object",
                    "properties": {"a": STR_ABC, "b": {"type": "string"}},
                    "default": {"b": "def"},
                }
            }
        },
        {},
        {"foo": {"a": "abc", "b": "def"}},
    ),
    # zero values are values
    (
        "zero values are not absent",
        {
            "properties": {
                "s": STR_ABC,
                "i": {"type": "integer", "default": 7},
                "b": {"type": "boolean", "default": True},
                "o": {"type": "object", "default": {"x": 1}},
                "n": {"type": "number", "default": 1.5},
            }
        },
        {"s": "", "i": 0, "b": False, "o": {}, "n": 0.0},
        {"s": "", "i": 0, "b": False, "o": {}, "n": 0.0},
    ),
    # KEP-1929 null handling
    (
        "null in a non-nullable field with a default gets the default",
        {"properties": {"foo": STR_ABC}},
        {"foo": None},
        {"foo": "abc"},
    ),
    (
        "null in a non-nullable field without default is removed",
        {"properties": {"foo": {"type": "string"}}},
        {"foo": None},
        {},
    ),
    (
        "null in a nullable field stays, default or not",
        {"properties": {"a": {**STR_ABC, "nullable": True}, "b": {"type": "string", "nullable": True}}},
        {"a": None, "b": None},
        {"a": None, "b": None},
    ),
    (
        "null list items get the item default",
        {"properties": {"list": {"type": "array", "items": {"type": "string", "default": "apple"}}}},
        {"list": [None, "foo"]},
        {"list": ["apple", "foo"]},
    ),
    (
        "null list items without item default stay (validation rejects them)",
        {"properties": {"list": {"type": "array", "items": {"type": "string"}}}},
        {"list": [None, "foo"]},
        {"list": [None, "foo"]},
    ),
    (
        "null map values get the value default",
        {
            "properties": {
                "mapping": {"type": "object", "additionalProperties": {"type": "string", "default": "banana"}}
            }
        },
        {"mapping": {"foo": None, "bar": "apple"}},
        {"mapping": {"foo": "banana", "bar": "apple"}},
    ),
    (
        "null map values without default are removed",
        {"properties": {"mapping": {"type": "object", "additionalProperties": {"type": "string"}}}},
        {"mapping": {"foo": None, "bar": "apple"}},
        {"mapping": {"bar": "apple"}},
    ),
    (
        "KEP-1929 non-pointer struct: {entry: null} is defaulted like {}",
        {
            "properties": {
                "entry": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "name": {"type": "string", "default": "default-name"},
                        "number": {"type": "integer", "default": 0},
                    },
                }
            }
        },
        {"entry": None},
        {"entry": {"name": "default-name", "number": 0}},
    ),
    (
        "KEP-1929 struct pointer: {} gets the pointer default, then its fields' defaults",
        {
            "properties": {
                "entry": {
                    "type": "object",
                    "default": {"name": "pointer-name"},
                    "properties": {
                        "name": {"type": "string", "default": "default-name"},
                        "number": {"type": "integer", "default": 0},
                    },
                }
            }
        },
        {},
        {"entry": {"name": "pointer-name", "number": 0}},
    ),
    (
        "unknown null fields are not this engine's business",
        {"properties": {"a": {"type": "string"}}},
        {"zzz": None},
        {"zzz": None},
    ),
    # list items and map values
    (
        "defaults apply inside every list item",
        {
            "properties": {
                "toppings": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "quantity": {"type": "integer", "default": 1},
                        },
                    },
                }
            }
        },
        {"toppings": [{"name": "a"}, {"name": "b", "quantity": 3}, {"name": "c"}]},
        {
            "toppings": [
                {"name": "a", "quantity": 1},
                {"name": "b", "quantity": 3},
                {"name": "c", "quantity": 1},
            ]
        },
    ),
    (
        "defaults apply inside every map value",
        {
            "properties": {
                "sizes": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"cm": {"type": "integer", "default": 30}},
                    },
                }
            }
        },
        {"sizes": {"small": {}, "big": {"cm": 40}}},
        {"sizes": {"small": {"cm": 30}, "big": {"cm": 40}}},
    ),
    (
        "preserve-unknown-fields objects are still defaulted in their known properties",
        {
            "properties": {
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"a": STR_ABC},
                }
            }
        },
        {"free": {"x": None}},
        {"free": {"x": None, "a": "abc"}},
    ),
    ("non-object values are left alone", {"properties": {"foo": STR_ABC}}, "text", "text"),
]


@pytest.mark.parametrize(("schema", "obj", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_apply_defaults(schema: dict[str, Any], obj: Any, want: Any) -> None:
    schema = {"type": "object", **schema}
    assert apply_defaults(obj, schema) is None
    assert obj == want


def test_defaulting_order_parent_before_children() -> None:
    """The parent's default lands first, so its explicit values win over the children's defaults."""
    schema = {
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "default": {"inner": {"x": "from-parent"}},
                "properties": {
                    "inner": {
                        "type": "object",
                        "default": {"x": "from-inner"},
                        "properties": {
                            "x": {"type": "string", "default": "from-x"},
                            "y": {"type": "string", "default": "y"},
                        },
                    }
                },
            }
        },
    }
    obj: dict[str, Any] = {}
    apply_defaults(obj, schema)
    assert obj == {"outer": {"inner": {"x": "from-parent", "y": "y"}}}


def test_defaults_are_never_shared() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
            "list": {"type": "array", "items": {"type": "object", "default": {"k": ["v"]}}},
        },
    }
    pristine = copy.deepcopy(schema)
    first: dict[str, Any] = {"list": [None]}
    second: dict[str, Any] = {"list": [None, None]}
    apply_defaults(first, schema)
    apply_defaults(second, schema)
    first["tags"].append("mutated")
    first["list"][0]["k"].append("mutated")
    assert second == {"tags": ["a"], "list": [{"k": ["v"]}, {"k": ["v"]}]}
    second["list"][0]["k"].append("again")
    assert second["list"][1] == {"k": ["v"]}
    assert schema == pristine


def test_null_default_counts_as_no_default() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "default": None}}}
    obj: dict[str, Any] = {"a": None}
    apply_defaults(obj, schema)
    assert obj == {}
