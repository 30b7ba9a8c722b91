"""Pruning: which fields go, which stay, and the kube-style paths reported for them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apis.meta.schemas import object_schema
from apis.schema.prune import prune, unknown_fields

STR = {"type": "string"}

SCHEMA = object_schema(
    "A test kind.",
    {
        "spec": {
            "type": "object",
            "properties": {
                "cost": {"type": "number"},
                "toppings": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": STR, "quantity": {"type": "integer"}}},
                },
                "labels": {"type": "object", "additionalProperties": STR},
                "sizes": {
                    "type": "object",
                    "additionalProperties": {"type": "object", "properties": {"cm": {"type": "integer"}}},
                },
                "empty": {"type": "object"},
                "raw": {"type": "array"},
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "object", "properties": {"a": STR}}},
                },
                "freeList": {
                    "type": "array",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "items": {"type": "object", "properties": {"a": STR}},
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"a": STR}}},
                },
            },
        },
        "status": {"type": "object", "properties": {"phase": STR}},
    },
)

CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "nothing unknown",
        {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"cost": 1}},
        {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"cost": 1}},
        [],
    ),
    ("unknown spec field", {"spec": {"cost": 1, "bogus": 2}}, {"spec": {"cost": 1}}, ["spec.bogus"]),
    ("unknown top-level field", {"spec": {}, "extra": {"x": 1}}, {"spec": {}}, ["extra"]),
    (
        "unknown field in a list item",
        {"spec": {"toppings": [{"name": "a"}, {"name": "b", "extra": True}]}},
        {"spec": {"toppings": [{"name": "a"}, {"name": "b"}]}},
        ["spec.toppings[1].extra"],
    ),
    (
        "unknown metadata field",
        {"metadata": {"name": "a", "foo": "x", "labels": {"k": "v"}}},
        {"metadata": {"name": "a", "labels": {"k": "v"}}},
        ["metadata.foo"],
    ),
    (
        "map values are governed by additionalProperties",
        {"spec": {"labels": {"a": "1", "b": "2"}, "sizes": {"big": {"cm": 40, "inch": 16}}}},
        {"spec": {"labels": {"a": "1", "b": "2"}, "sizes": {"big": {"cm": 40}}}},
        ["spec.sizes.big.inch"],
    ),
    (
        "an object schema without properties keeps no field",
        {"spec": {"empty": {"a": 1, "b": 2}}},
        {"spec": {"empty": {}}},
        ["spec.empty.a", "spec.empty.b"],
    ),
    (
        "objects in a list without item schema lose their fields",
        {"spec": {"raw": [1, {"a": 1}]}},
        {"spec": {"raw": [1, {}]}},
        ["spec.raw[1].a"],
    ),
    (
        "preserve-unknown-fields keeps unknown fields but prunes inside specified ones",
        {"spec": {"free": {"anything": {"deep": 1}, "known": {"a": "x", "b": "y"}}}},
        {"spec": {"free": {"anything": {"deep": 1}, "known": {"a": "x"}}}},
        ["spec.free.known.b"],
    ),
    (
        "preserve-unknown-fields on a list keeps unknown item fields",
        {"spec": {"freeList": [{"a": "x", "z": 1}]}},
        {"spec": {"freeList": [{"a": "x", "z": 1}]}},
        [],
    ),
    (
        "embedded resource keeps apiVersion/kind, prunes metadata and the rest by schema",
        {
            "spec": {
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "bogus": 1},
                    "spec": {"a": "x", "b": "y"},
                    "status": {},
                }
            }
        },
        {
            "spec": {
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "x"}}
            }
        },
        ["spec.template.metadata.bogus", "spec.template.spec.b", "spec.template.status"],
    ),
    (
        "paths come back sorted",
        {"status": {"z": 1}, "spec": {"zz": 1, "aa": 2}, "b": 1},
        {"status": {}, "spec": {}},
        ["b", "spec.aa", "spec.zz", "status.z"],
    ),
    (
        "type mismatches are left for validation",
        {"spec": {"toppings": "none", "labels": ["x"]}},
        {"spec": {"toppings": "none", "labels": ["x"]}},
        [],
    ),
]


@pytest.mark.parametrize(("obj", "want", "paths"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_prune(obj: dict[str, Any], want: dict[str, Any], paths: list[str]) -> None:
    assert prune(obj, SCHEMA) == paths
    assert obj == want


def test_root_type_meta_is_kept_even_when_the_schema_does_not_mention_it() -> None:
    obj = {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "x": 1}, "spec": {"a": 1}}
    assert prune(obj, {"type": "object", "properties": {"spec": {"type": "object"}}}) == [
        "metadata.x",
        "spec.a",
    ]
    assert obj == {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {}}


def test_below_the_root_type_meta_is_an_ordinary_field() -> None:
    obj = {"apiVersion": "v1", "kind": "K", "a": "x"}
    assert prune(obj, {"type": "object", "properties": {"a": STR}}, is_resource_root=False) == [
        "apiVersion",
        "kind",
    ]
    assert obj == {"a": "x"}


def test_unknown_fields_reports_without_mutating() -> None:
    obj = {"spec": {"cost": 1, "bogus": {"x": 1}}, "metadata": {"foo": 1}}
    before = copy.deepcopy(obj)
    assert unknown_fields(obj, SCHEMA) == ["metadata.foo", "spec.bogus"]
    assert obj == before
