"""Validation: every keyword, with the exact text kube-apiserver returns for a custom resource.

Expected strings come from kube-openapi pkg/validation/errors/schema.go as mapped by apiextensions'
kubeOpenAPIResultToFieldErrors, and from apiextensions' own validation_test.go where it pins them
(`Too many: 3: has too many items`, `Too long: value is too long`, type + enum errors together).
"""

from __future__ import annotations

from typing import Any

import pytest

from apis.meta.field import ErrorType
from apis.meta.schemas import object_schema
from apis.schema.validate import validate

STR = {"type": "string"}


def kind_schema(spec_props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "object", "properties": spec_props}
    if required:
        spec["required"] = required
    return object_schema("A test kind.", {"spec": spec})


def messages(spec: Any, spec_props: dict[str, Any], required: list[str] | None = None) -> list[str]:
    obj = {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": spec}
    return [str(e) for e in validate(obj, kind_schema(spec_props, required))]


CASES: list[tuple[str, dict[str, Any], Any, list[str]]] = [
    # type
    ("valid number", {"cost": {"type": "number"}}, {"cost": 1.5}, []),
    ("integer is a number", {"cost": {"type": "number"}}, {"cost": 2}, []),
    (
        "string for number",
        {"cost": {"type": "number"}},
        {"cost": "string"},
        ['spec.cost: Invalid value: "string": spec.cost in body must be of type number: "string"'],
    ),
    (
        "object for string",
        {"name": STR},
        {"name": {"a": 1}},
        ['spec.name: Invalid value: "object": spec.name in body must be of type string: "object"'],
    ),
    (
        "boolean for integer",
        {"n": {"type": "integer"}},
        {"n": True},
        ['spec.n: Invalid value: "boolean": spec.n in body must be of type integer: "boolean"'],
    ),
    (
        "array for object",
        {"o": {"type": "object"}},
        {"o": []},
        ['spec.o: Invalid value: "array": spec.o in body must be of type object: "array"'],
    ),
    (
        "integer for boolean",
        {"b": {"type": "boolean"}},
        {"b": 1},
        ['spec.b: Invalid value: "integer": spec.b in body must be of type boolean: "integer"'],
    ),
    (
        "a whole float is a valid integer (Go decodes 1.0 as float64)",
        {"n": {"type": "integer"}},
        {"n": 1.0},
        [],
    ),
    (
        "a fractional float is not an integer",
        {"n": {"type": "integer"}},
        {"n": 1.5},
        ['spec.n: Invalid value: "number": spec.n in body must be of type integer: "number"'],
    ),
    (
        "an integer beyond int64 arrives as a float beyond 2^53",
        {"n": {"type": "integer"}},
        {"n": 2**64},
        ['spec.n: Invalid value: "number": spec.n in body must be of type integer: "number"'],
    ),
    (
        "with a format, the format mismatch is what kube names",
        {"n": {"type": "integer", "format": "int64"}},
        {"n": 2**64},
        ['spec.n: Invalid value: "float64": spec.n in body must be of type int64: "float64"'],
    ),
    (
        "int32 format does not limit the range (kube never checks it)",
        {"n": {"type": "integer", "format": "int32"}},
        {"n": 2**40},
        [],
    ),
    (
        "a format mismatch names the format",
        {"n": {"type": "integer", "format": "int32"}},
        {"n": True},
        ['spec.n: Invalid value: "": spec.n in body must be of type int32: ""'],
    ),
    (
        "null in a non-nullable field",
        {"o": {"type": "object"}},
        {"o": None},
        ['spec.o: Invalid value: "null": spec.o in body must be of type object: "null"'],
    ),
    ("null in a nullable field", {"o": {"type": "object", "nullable": True}}, {"o": None}, []),
    ("int-or-string takes an integer", {"p": {"x-kubernetes-int-or-string": True}}, {"p": 80}, []),
    ("int-or-string takes a string", {"p": {"x-kubernetes-int-or-string": True}}, {"p": "http"}, []),
    (
        "int-or-string rejects a boolean",
        {"p": {"x-kubernetes-int-or-string": True}},
        {"p": True},
        ['spec.p: Invalid value: "boolean": spec.p in body must be of type integer,string: "boolean"'],
    ),
    (
        "untyped preserve-unknown-fields takes anything",
        {"x": {"x-kubernetes-preserve-unknown-fields": True}},
        {"x": [1, "a"]},
        [],
    ),
    # enum
    (
        "enum of strings",
        {"size": {"type": "string", "enum": ["s", "m"]}},
        {"size": "xl"},
        ['spec.size: Unsupported value: "xl": supported values: "s", "m"'],
    ),
    (
        "enum of numbers is listed as JSON",
        {"n": {"type": "integer", "enum": [1, 2]}},
        {"n": 3},
        ['spec.n: Unsupported value: 3: supported values: "1", "2"'],
    ),
    (
        "wrong type and enum both reported, type first",
        {"n": {"type": "integer", "enum": [1, 2]}},
        {"n": "x"},
        [
            'spec.n: Invalid value: "string": spec.n in body must be of type integer: "string"',
            'spec.n: Unsupported value: "x": supported values: "1", "2"',
        ],
    ),
    (
        "null fails an enum even when nullable",
        {"size": {"type": "string", "nullable": True, "enum": ["s"]}},
        {"size": None},
        ['spec.size: Unsupported value: null: supported values: "s"'],
    ),
    ("1.0 matches an enum of 1", {"n": {"type": "integer", "enum": [1]}}, {"n": 1.0}, []),
    # minimum / maximum
    (
        "minimum",
        {"cost": {"type": "number", "minimum": 0}},
        {"cost": -1},
        ["spec.cost: Invalid value: -1: spec.cost in body should be greater than or equal to 0"],
    ),
    ("minimum reached", {"cost": {"type": "number", "minimum": 0}}, {"cost": 0}, []),
    (
        "exclusive minimum",
        {"cost": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
        {"cost": 0},
        ["spec.cost: Invalid value: 0: spec.cost in body should be greater than 0"],
    ),
    (
        "maximum",
        {"n": {"type": "integer", "maximum": 10}},
        {"n": 11},
        ["spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10"],
    ),
    (
        "exclusive maximum",
        {"n": {"type": "integer", "maximum": 10, "exclusiveMaximum": True}},
        {"n": 10},
        ["spec.n: Invalid value: 10: spec.n in body should be less than 10"],
    ),
    (
        "a float bound is printed like Go's %v",
        {"cost": {"type": "number", "minimum": 0.5}},
        {"cost": 0.25},
        ["spec.cost: Invalid value: 0.25: spec.cost in body should be greater than or equal to 0.5"],
    ),
    (
        "a float bound in Go's exponent form",
        {"cost": {"type": "number", "maximum": 1000000}},
        {"cost": 1000000.5},
        ["spec.cost: Invalid value: 1000000.5: spec.cost in body should be less than or equal to 1e+06"],
    ),
    (
        "an integer is compared with the bound truncated to int64",
        {"n": {"type": "integer", "minimum": 0.5}},
        {"n": 0},
        [],
    ),
    (
        "multipleOf",
        {"n": {"type": "integer", "multipleOf": 5}},
        {"n": 12},
        ["spec.n: Invalid value: 12: spec.n in body should be a multiple of 5"],
    ),
    # strings
    (
        "minLength",
        {"name": {"type": "string", "minLength": 2}},
        {"name": "a"},
        ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'],
    ),
    (
        "maxLength",
        {"name": {"type": "string", "maxLength": 2}},
        {"name": "abc"},
        ["spec.name: Too long: value is too long"],
    ),
    ("lengths count characters, not bytes", {"name": {"type": "string", "maxLength": 2}}, {"name": "éé"}, []),
    (
        "pattern",
        {"name": {"type": "string", "pattern": "^[a-z]+$"}},
        {"name": "A1"},
        ["spec.name: Invalid value: \"A1\": spec.name in body should match '^[a-z]+$'"],
    ),
    (
        "pattern is a search, not a full match",
        {"name": {"type": "string", "pattern": "[0-9]"}},
        {"name": "a1b"},
        [],
    ),
    (
        "only the first string failure is reported",
        {"name": {"type": "string", "maxLength": 1, "pattern": "^[0-9]+$"}},
        {"name": "abc"},
        ["spec.name: Too long: value is too long"],
    ),
    # formats
    ("date-time", {"t": {"type": "string", "format": "date-time"}}, {"t": "2024-02-29T23:59:59.5+01:00"}, []),
    ("date-time in UTC", {"t": {"type": "string", "format": "date-time"}}, {"t": "2024-01-01T00:00:00Z"}, []),
    (
        "not a date-time",
        {"t": {"type": "string", "format": "date-time"}},
        {"t": "yesterday"},
        ['spec.t: Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday"'],
    ),
    (
        # kube-apiserver 1.36.2's message for the same value: %q on both sides.
        "not a date-time, with characters Go escapes",
        {"t": {"type": "string", "format": "date-time"}},
        {"t": "x\x00\u200bé<"},
        [
            'spec.t: Invalid value: "x\\x00\\u200bé<": '
            'spec.t in body must be of type date-time: "x\\x00\\u200bé<"'
        ],
    ),
    (
        "date-time with an impossible day",
        {"t": {"type": "string", "format": "date-time"}},
        {"t": "2023-02-29T00:00:00Z"},
        [
            'spec.t: Invalid value: "2023-02-29T00:00:00Z": '
            'spec.t in body must be of type date-time: "2023-02-29T00:00:00Z"'
        ],
    ),
    (
        "date",
        {"d": {"type": "string", "format": "date"}},
        {"d": "2024-13-01"},
        ['spec.d: Invalid value: "2024-13-01": spec.d in body must be of type date: "2024-13-01"'],
    ),
    ("an unsupported format is ignored", {"s": {"type": "string", "format": "pizza"}}, {"s": "anything"}, []),
    # arrays
    (
        "minItems",
        {"toppings": {"type": "array", "items": STR, "minItems": 1}},
        {"toppings": []},
        ["spec.toppings: Invalid value: 0: spec.toppings in body should have at least 1 items"],
    ),
    (
        "maxItems",
        {"toppings": {"type": "array", "items": STR, "maxItems": 2}},
        {"toppings": ["a", "b", "c"]},
        ["spec.toppings: Too many: 3: has too many items"],
    ),
    (
        "uniqueItems",
        {"toppings": {"type": "array", "items": STR, "uniqueItems": True}},
        {"toppings": ["a", "b", "a"]},
        ['spec.toppings: Invalid value: "": spec.toppings in body shouldn\'t contain duplicates'],
    ),
    (
        "item errors carry the index",
        {"toppings": {"type": "array", "items": STR}},
        {"toppings": ["a", 1]},
        [
            'spec.toppings[1]: Invalid value: "integer": '
            'spec.toppings[1] in body must be of type string: "integer"'
        ],
    ),
    (
        "items are checked before the list's own limits",
        {"toppings": {"type": "array", "items": STR, "minItems": 3}},
        {"toppings": [1]},
        [
            'spec.toppings[0]: Invalid value: "integer": '
            'spec.toppings[0] in body must be of type string: "integer"',
            "spec.toppings: Invalid value: 1: spec.toppings in body should have at least 3 items",
        ],
    ),
    (
        "list-type set duplicates are reported at their second occurrence",
        {"toppings": {"type": "array", "items": STR, "x-kubernetes-list-type": "set"}},
        {"toppings": ["a", "b", "a", "a", "b"]},
        ['spec.toppings[2]: Duplicate value: "a"', 'spec.toppings[4]: Duplicate value: "b"'],
    ),
    (
        "list-type set: 1 and 1.0 differ as Go values",
        {"xs": {"type": "array", "items": {"type": "number"}, "x-kubernetes-list-type": "set"}},
        {"xs": [1, 1.0]},
        [],
    ),
    (
        "list-type map items must be objects",
        {
            "toppings": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": STR}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            }
        },
        {"toppings": [{"name": "a"}, "b"]},
        [
            'spec.toppings[1]: Invalid value: "string": '
            'spec.toppings[1] in body must be of type object: "string"',
            'spec.toppings[1]: Invalid value: "b": must be an object for an array of list-type map',
        ],
    ),
    # objects
    (
        "map values are validated under name.key",
        {"labels": {"type": "object", "additionalProperties": STR}},
        {"labels": {"a": "x", "b": 2}},
        ['spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer"'],
    ),
    (
        "nested required",
        {"base": {"type": "object", "required": ["size"], "properties": {"size": STR}}},
        {"base": {}},
        ["spec.base.size: Required value"],
    ),
    (
        "preserve-unknown-fields allows unknown keys",
        {"free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        {"free": {"a": 1}},
        [],
    ),
]


@pytest.mark.parametrize(("props", "spec", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate(props: dict[str, Any], spec: Any, want: list[str]) -> None:
    assert messages(spec, props) == want


def test_required() -> None:
    props = {"cost": {"type": "number"}, "name": STR}
    assert messages({"cost": 0, "name": ""}, props, ["cost", "name"]) == []
    assert (
        messages({"cost": None, "x": 1}, props | {"cost": {"type": "number", "nullable": True}}, ["cost"])
        == []
    )
    assert messages({}, props, ["cost", "name"]) == ["spec.cost: Required value", "spec.name: Required value"]


def test_error_reasons() -> None:
    schema = kind_schema(
        {
            "cost": {"type": "number", "minimum": 0},
            "name": {"type": "string", "maxLength": 1},
            "size": {"type": "string", "enum": ["s"]},
            "xs": {"type": "array", "items": STR, "maxItems": 0, "x-kubernetes-list-type": "set"},
        },
        ["req"],
    )
    obj = {"spec": {"cost": "x", "name": "ab", "size": "m", "xs": ["a", "a"]}}
    errs = {(e.field, e.type) for e in validate(obj, schema)}
    assert errs == {
        ("spec.cost", ErrorType.TYPE_INVALID),
        ("spec.name", ErrorType.TOO_LONG),
        ("spec.size", ErrorType.NOT_SUPPORTED),
        ("spec.xs", ErrorType.TOO_MANY),
        ("spec.req", ErrorType.REQUIRED),
        ("spec.xs[1]", ErrorType.DUPLICATE),
    }
    assert {e.type.reason for e in validate(obj, schema)} >= {"FieldValueTypeInvalid", "FieldValueRequired"}


def test_root_required() -> None:
    assert [str(e) for e in validate({"metadata": {}}, kind_schema({}) | {"required": ["spec"]})] == [
        "spec: Required value"
    ]


def test_root_metadata_is_only_type_checked() -> None:
    schema = kind_schema({})
    assert validate({"metadata": {"name": 5, "labels": {"a": 1}, "finalizers": ["x", "x"]}}, schema) == []
    assert [str(e) for e in validate({"metadata": "x", "kind": 1}, schema)] == [
        'kind: Invalid value: "integer": kind in body must be of type string: "integer"',
        'metadata: Invalid value: "string": metadata in body must be of type object: "string"',
    ]


def test_path_names_the_validated_value() -> None:
    spec_schema = {"type": "object", "properties": {"cost": {"type": "number", "minimum": 0}}}
    errs = validate({"cost": -2}, spec_schema, "spec", is_resource_root=False)
    assert [str(e) for e in errs] == [
        "spec.cost: Invalid value: -2: spec.cost in body should be greater than or equal to 0"
    ]


def test_list_map_duplicate_keys() -> None:
    one_key = {
        "type": "array",
        "items": {"type": "object", "properties": {"name": STR, "q": {"type": "integer"}}},
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
    }
    two_keys = {**one_key, "x-kubernetes-list-map-keys": ["name", "q"]}
    schema = kind_schema({"one": one_key, "two": two_keys})
    spec = {
        "one": [{"name": "a", "q": 1}, {"name": "b"}, {"name": "a", "q": 2}, {"q": 3}, {"q": 4}],
        "two": [{"name": "a", "q": 1}, {"name": "a", "q": 2}, {"q": 1, "name": "a"}],
    }
    dups = [(e.type, e.field, e.bad_value) for e in validate({"spec": spec}, schema)]
    assert dups == [
        (ErrorType.DUPLICATE, "spec.one[2]", {"name": "a"}),
        (ErrorType.DUPLICATE, "spec.one[4]", {}),
        (ErrorType.DUPLICATE, "spec.two[2]", {"name": "a", "q": 1}),
    ]


def test_list_types_under_map_values_use_key_paths() -> None:
    schema = kind_schema(
        {
            "groups": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": STR, "x-kubernetes-list-type": "set"},
            }
        }
    )
    errs = validate({"spec": {"groups": {"veg": ["a", "a"]}}}, schema)
    assert [str(e) for e in errs] == ['spec.groups[veg][1]: Duplicate value: "a"']


def test_embedded_resource_needs_api_version_and_kind() -> None:
    schema = kind_schema(
        {
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            }
        }
    )
    assert [str(e) for e in validate({"spec": {"template": {"kind": 1}}}, schema)] == [
        "spec.template.apiVersion: Required value",
        "spec.template.kind: Invalid value: 1: must be a string",
    ]
    assert validate({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "x": 1}}}, schema) == []


def test_valid_object_has_no_errors() -> None:
    schema = kind_schema(
        {
            "cost": {"type": "number", "minimum": 0},
            "toppings": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": STR, "quantity": {"type": "integer", "minimum": 1}},
                },
            },
        },
        ["cost"],
    )
    obj = {
        "apiVersion": "g/v1",
        "kind": "K",
        "metadata": {"name": "margherita", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {
            "cost": 1.5,
            "toppings": [{"name": "tomato", "quantity": 1}, {"name": "mozzarella", "quantity": 2}],
        },
    }
    assert validate(obj, schema) == []
