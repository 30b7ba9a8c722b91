"""FieldsV1 sets: the encoding kube writes, set algebra, and what a schema makes of an object.

Expected encodings are what kube-apiserver returns in managedFields (structured-merge-diff's
fieldpath serialization): "f:", "k:{...}", "v:...", "i:N" elements, "." marking a node that is
itself owned, elements sorted fields < keys < values < indexes.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apis.meta.schemas import object_schema
from apis.schema.fieldset import (
    FieldSet,
    FieldsV1Error,
    compare,
    field_element,
    index_element,
    key_element,
    to_field_set,
    value_element,
)

STR = {"type": "string"}
SCHEMA = object_schema(
    "A kind with every kind of field.",
    {
        "spec": {
            "type": "object",
            "properties": {
                "cost": {"type": "number"},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": STR, "size": {"type": "integer"}}},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                },
                "tags": {"type": "array", "items": STR, "x-kubernetes-list-type": "set"},
                "atomic": {"type": "array", "items": STR},
                "sizes": {"type": "object", "additionalProperties": {"type": "integer"}},
                "whole": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": STR}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
)
F = field_element


def obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "o"}, "spec": spec}


def test_element_encodings() -> None:
    assert key_element({"name": "a<b", "port": 80}) == 'k:{"name":"a\\u003cb","port":80}'
    assert value_element("x") == 'v:"x"'
    assert value_element(2.0) == "v:2"
    assert index_element(3) == "i:3"


def test_fields_v1_round_trip_and_order() -> None:
    fields = {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {
            ".": {},
            "f:items": {".": {}, 'k:{"name":"b"}': {".": {}, "f:name": {}}, 'k:{"name":"a"}': {}},
            "f:tags": {'v:"z"': {}, "v:1": {}},
        },
    }
    parsed = FieldSet.from_fields_v1(fields)
    assert parsed.has((F("spec"),)) and parsed.has((F("metadata"), F("labels"), F("a")))
    assert not parsed.has((F("metadata"),))  # no "." under f:metadata: only a parent
    encoded = parsed.to_fields_v1()
    assert list(encoded["f:spec"]) == ["f:items", "f:tags", "."]  # "." comes last, as SMD writes it
    assert list(encoded["f:spec"]["f:items"]) == ['k:{"name":"a"}', 'k:{"name":"b"}', "."]
    assert list(encoded["f:spec"]["f:tags"]) == ["v:1", 'v:"z"']  # numbers before strings
    assert FieldSet.from_fields_v1(encoded) == parsed


@pytest.mark.parametrize("bad", [{"x": {}}, {"fx": {}}, {"k:[1]": {}}, {"i:x": {}}, {"f:a": 1}, []])
def test_malformed_fields_v1_is_an_error(bad: Any) -> None:
    with pytest.raises(FieldsV1Error):
        FieldSet.from_fields_v1(bad)


def test_unknown_element_types_are_skipped() -> None:
    assert FieldSet.from_fields_v1({"z:whatever": {}, "f:a": {}}) == FieldSet.of((F("a"),))


def test_set_algebra() -> None:
    a = FieldSet.of((F("spec"),), (F("spec"), F("cost")), (F("spec"), F("sizes"), F("x")))
    b = FieldSet.of((F("spec"),), (F("spec"), F("sizes"), F("x")), (F("status"),))
    assert a.union(b) == FieldSet.of(*a.paths(), (F("status"),))
    assert a.intersection(b) == FieldSet.of((F("spec"),), (F("spec"), F("sizes"), F("x")))
    assert a.difference(b) == FieldSet.of((F("spec"), F("cost")))
    # Removing a path exactly keeps what is below it; recursively removes it all.
    assert a.difference(FieldSet.of((F("spec"),))) == FieldSet.of(
        (F("spec"), F("cost")), (F("spec"), F("sizes"), F("x"))
    )
    assert a.recursive_difference(FieldSet.of((F("spec"),))).empty()


def test_to_field_set_follows_list_and_map_types() -> None:
    value = obj(
        cost=2,
        items=[{"name": "a", "size": 1}],
        tags=["t"],
        atomic=["x", "y"],
        sizes={"m": 1},
        whole={"a": "b"},
        free={"deep": {"x": 1}, "list": [1, 2]},
    )
    assert to_field_set(value, SCHEMA).to_fields_v1()["f:spec"] == {
        "f:atomic": {},
        "f:cost": {},
        # Unknown fields kept by the schema are "deduced": maps granular, lists atomic.
        "f:free": {"f:deep": {"f:x": {}, ".": {}}, "f:list": {}},
        "f:items": {'k:{"name":"a"}': {"f:name": {}, "f:size": {}, ".": {}}},
        "f:sizes": {"f:m": {}},
        "f:tags": {'v:"t"': {}},
        "f:whole": {},
    }


def test_compare_on_create_owns_every_field_and_container() -> None:
    added = compare(None, obj(items=[{"name": "a", "size": 1}], sizes={"m": 1}), SCHEMA).added
    assert added.to_fields_v1() == {
        "f:apiVersion": {},
        "f:kind": {},
        "f:metadata": {"f:name": {}, ".": {}},
        "f:spec": {
            "f:items": {'k:{"name":"a"}': {"f:name": {}, "f:size": {}, ".": {}}, ".": {}},
            "f:sizes": {"f:m": {}, ".": {}},
            ".": {},
        },
    }


def test_compare_reports_added_modified_removed_items() -> None:
    old = obj(items=[{"name": "a", "size": 1}, {"name": "b", "size": 1}], tags=["x"], cost=1)
    new = obj(items=[{"name": "b", "size": 2}, {"name": "c", "size": 1}], tags=["x", "y"], cost=1.0)
    c = compare(old, new, SCHEMA)
    assert c.modified == FieldSet.of((F("spec"), F("items"), key_element({"name": "b"}), F("size")))
    assert c.added.has((F("spec"), F("items"), key_element({"name": "c"})))
    assert c.added.has((F("spec"), F("tags"), value_element("y")))
    gone = (F("spec"), F("items"), key_element({"name": "a"}))
    assert c.removed == FieldSet.of(gone, (*gone, F("name")), (*gone, F("size")))
    assert not c.modified.has((F("spec"), F("cost")))  # 1 and 1.0 are the same number


def test_compare_atomic_list_and_empty_containers() -> None:
    c = compare(obj(atomic=["x"], sizes={}), obj(atomic=["x", "y"], sizes={}), SCHEMA)
    assert c.modified == FieldSet.of((F("spec"), F("atomic")))
    assert c.added.empty() and c.removed.empty()
    c = compare(obj(), obj(sizes={}), SCHEMA)
    assert c.added == FieldSet.of((F("spec"), F("sizes")))  # an empty map is a leaf


def test_compare_booleans_are_not_numbers() -> None:
    c = compare(obj(free={"x": True}), obj(free={"x": 1}), SCHEMA)
    assert c.modified == FieldSet.of((F("spec"), F("free"), F("x")))


def test_exclude_drops_subtrees() -> None:
    c = compare(None, obj(cost=1), SCHEMA).exclude(FieldSet.of((F("spec"),)))
    assert not c.added.has((F("spec"),)) and not c.added.has((F("spec"), F("cost")))


_paths = st.lists(
    st.lists(
        st.sampled_from([F("a"), F("b"), key_element({"k": 1}), value_element("v"), index_element(0)]),
        min_size=1,
        max_size=3,
    ),
    max_size=8,
)


@given(_paths, _paths)
def test_set_laws(left: list[list[str]], right: list[list[str]]) -> None:
    a, b = FieldSet.of(*left), FieldSet.of(*right)
    assert FieldSet.from_fields_v1(a.to_fields_v1()) == a
    assert set(a.union(b).paths()) == set(a.paths()) | set(b.paths())
    assert set(a.intersection(b).paths()) == set(a.paths()) & set(b.paths())
    assert set(a.difference(b).paths()) == set(a.paths()) - set(b.paths())
    below = {p for p in a.paths() if not any(p[: len(q)] == q for q in b.paths())}
    assert set(a.recursive_difference(b).paths()) == below
