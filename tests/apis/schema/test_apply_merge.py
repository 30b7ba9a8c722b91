"""typed.Merge and RemoveItems by schema, checked against structured-merge-diff's own cases.

The triplets (live, config, merged) are typed/merge_test.go's "struct grab bag" and "associative
list" cases, with SMD's schemas written as the structural schemas that mean the same: an
"associative" list of scalars is `x-kubernetes-list-type: set`, one with keys a `map` list.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from apis.schema.apply_merge import (
    MergeError,
    element_string,
    merge,
    path_string,
    remove_items,
    undeclared_fields,
    with_named_fields,
)
from apis.schema.fieldset import (
    FieldSet,
    compare,
    created_fields,
    field_element,
    key_element,
    to_field_set,
    value_element,
)

STRING = {"type": "string"}


def _set(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items, "x-kubernetes-list-type": "set"}


GRAB_BAG = {
    "type": "object",
    "properties": {
        "numeric": {"type": "number"},
        "string": STRING,
        "bool": {"type": "boolean"},
        "setStr": _set(STRING),
        "setBool": _set({"type": "boolean"}),
        "setNumeric": _set({"type": "number"}),
    },
}

ASSOCIATIVE = {
    "type": "object",
    "properties": {
        "list": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key", "id"],
            "items": {
                "type": "object",
                "properties": {
                    "key": STRING,
                    "id": {"type": "number"},
                    "value": {"type": "object", "additionalProperties": STRING},
                    "bv": {"type": "boolean"},
                    "nv": {"type": "number"},
                },
            },
        },
        "atomicList": {"type": "array", "items": STRING, "x-kubernetes-list-type": "atomic"},
    },
}

GRAB_BAG_TRIPLETS = [
    ('{"numeric":1}', '{"numeric":3.14159}', '{"numeric":3.14159}'),
    ('{"numeric":3.14159}', '{"numeric":1}', '{"numeric":1}'),
    ('{"string":"aoeu"}', '{"bool":true}', '{"string":"aoeu","bool":true}'),
    ('{"setStr":["a","b","c"]}', '{"setStr":["a","b"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b"]}', '{"setStr":["a","b","c"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b","c"]}', '{"setStr":[]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":[]}', '{"setStr":["a","b","c"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b"]}', '{"setStr":["b","a"]}', '{"setStr":["b","a"]}'),
    ('{"setStr":["a","b","c"]}', '{"setStr":["d","e","f"]}', '{"setStr":["a","b","c","d","e","f"]}'),
    ('{"setStr":["a","b","c"]}', '{"setStr":["c","d","e","f"]}', '{"setStr":["a","b","c","d","e","f"]}'),
    (
        '{"setStr":["a","b","c","g","f"]}',
        '{"setStr":["c","d","e","f"]}',
        '{"setStr":["a","b","c","g","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c"]}',
        '{"setStr":["d","e","f","x","y","z"]}',
        '{"setStr":["a","b","c","d","e","f","x","y","z"]}',
    ),
    ('{"setStr":["c","d","e","f"]}', '{"setStr":["a","c","e"]}', '{"setStr":["a","c","d","e","f"]}'),
    (
        '{"setStr":["a","b","c","x","y","z"]}',
        '{"setStr":["d","e","f"]}',
        '{"setStr":["a","b","c","x","y","z","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c","x","y","z"]}',
        '{"setStr":["d","e","f","x","y","z"]}',
        '{"setStr":["a","b","c","d","e","f","x","y","z"]}',
    ),
    ('{"setStr":["c","a","g","f"]}', '{"setStr":["c","f","a","g"]}', '{"setStr":["c","f","a","g"]}'),
    ('{"setStr":["a","b","c","d"]}', '{"setStr":["d","e","f","a"]}', '{"setStr":["b","c","d","e","f","a"]}'),
    (
        '{"setStr":["c","d","e","f","g","h","i","j"]}',
        '{"setStr":["2","h","3","e","4","k","l"]}',
        '{"setStr":["c","d","f","g","2","h","i","j","3","e","4","k","l"]}',
    ),
    (
        '{"setStr":["a","b","c","d","e","f","g","h","i","j"]}',
        '{"setStr":["1","b","2","h","3","e","4","k","l"]}',
        '{"setStr":["a","1","b","c","d","f","g","2","h","i","j","3","e","4","k","l"]}',
    ),
    ('{"setStr":["a","b","b"]}', '{"setStr":["c"]}', '{"setStr":["a","b","b","c"]}'),
    ('{"setStr":["a","b","b"]}', '{"setStr":["b"]}', '{"setStr":["a","b"]}'),
    ('{"setStr":["a","b","b"]}', '{"setStr":["a"]}', '{"setStr":["a","b","b"]}'),
    (
        '{"setStr":["a","b","c","d","e","c"]}',
        '{"setStr":["1","b","2","e","d"]}',
        '{"setStr":["a","1","b","c","2","e","c","d"]}',
    ),
    (
        '{"setStr":["a","b","c","d","e","c"]}',
        '{"setStr":["1","b","2","c","e","d"]}',
        '{"setStr":["a","1","b","2","c","e","d"]}',
    ),
    ('{"setStr":["a","a","b","b"]}', '{"setStr":["b","c","d"]}', '{"setStr":["a","a","b","c","d"]}'),
    ('{"setStr":["a","a","b","b"]}', '{"setStr":[]}', '{"setStr":["a","a","b","b"]}'),
    ('{"setBool":[true]}', '{"setBool":[false]}', '{"setBool":[true, false]}'),
    ('{"setNumeric":[1,2,3.14159]}', '{"setNumeric":[1,2,3]}', '{"setNumeric":[1,2,3.14159,3]}'),
    ('{"setStr":["c","a","g","f","c","a"]}', '{"setStr":["c","f","a","g"]}', '{"setStr":["c","f","a","g"]}'),
    ('{"setNumeric":[1,2,3.14159,1,2]}', '{"setNumeric":[1,2,3]}', '{"setNumeric":[1,2,3.14159,3]}'),
    ('{"setBool":[true,false,true]}', '{"setBool":[false]}', '{"setBool":[true,false,true]}'),
    ('{"setBool":[true,false,true]}', '{"setBool":[true]}', '{"setBool":[true, false]}'),
]

ASSOCIATIVE_TRIPLETS = [
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
    ),
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":2,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}},{"key":"a","id":2,"value":{"a":"a"}}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":1}]}',
        '{"list":[{"key":"a","id":1},{"key":"a","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":1},{"key":"a","id":2}]}',
    ),
    (
        '{"list":[{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"c","id":3},{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"c","id":3},{"key":"b","id":2}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"c","id":3},{"key":"a","id":1}]}',
        '{"list":[{"key":"b","id":2},{"key":"c","id":3},{"key":"a","id":1}]}',
    ),
    ('{"atomicList":["a","a","a"]}', '{"atomicList":null}', '{"atomicList":null}'),
    ('{"atomicList":["a","b","c"]}', '{"atomicList":[]}', '{"atomicList":[]}'),
    ('{"atomicList":["a","a","a"]}', '{"atomicList":["a","a"]}', '{"atomicList":["a","a"]}'),
    (
        '{"list":[{"key":"a","id":1,"bv":true},{"key":"b","id":2},{"key":"a","id":1,"bv":false,"nv":2}]}',
        '{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}',
    ),
    (
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
        '{"list":[]}',
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
    ),
    (
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
        "{}",
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
    ),
]


@pytest.mark.parametrize(("lhs", "rhs", "out"), GRAB_BAG_TRIPLETS)
def test_struct_grab_bag(lhs: str, rhs: str, out: str) -> None:
    assert merge(json.loads(lhs), json.loads(rhs), GRAB_BAG) == json.loads(out)


@pytest.mark.parametrize(("lhs", "rhs", "out"), ASSOCIATIVE_TRIPLETS)
def test_associative_list(lhs: str, rhs: str, out: str) -> None:
    assert merge(json.loads(lhs), json.loads(rhs), ASSOCIATIVE) == json.loads(out)


def test_merge_does_not_modify_its_inputs() -> None:
    lhs = {"list": [{"key": "a", "id": 1, "value": {"x": "1"}}]}
    rhs = {"list": [{"key": "a", "id": 1, "value": {"y": "2"}}]}
    before = json.dumps([lhs, rhs])
    assert merge(lhs, rhs, ASSOCIATIVE) == {"list": [{"key": "a", "id": 1, "value": {"x": "1", "y": "2"}}]}
    assert json.dumps([lhs, rhs]) == before


def test_duplicate_keys_in_the_config_are_refused() -> None:
    # merge_test.go's invalid triplets: the config (rhs) may not repeat a key; the live object may.
    with pytest.raises(MergeError, match=r'duplicate entries for key \[id=1,key="a"\]'):
        merge({}, {"list": [{"key": "a", "id": 1}, {"key": "a", "id": 1}]}, ASSOCIATIVE)
    with pytest.raises(MergeError, match="duplicate entries"):
        merge({"setStr": ["a"]}, {"setStr": ["b", "b"]}, GRAB_BAG)


def test_remove_items_drops_members_and_empties() -> None:
    obj = {"list": [{"key": "a", "id": 1, "nv": 1}, {"key": "b", "id": 2, "nv": 2}], "atomicList": ["x"]}
    a = key_element({"key": "a", "id": 1})
    b = key_element({"key": "b", "id": 2})
    gone = FieldSet.of((field_element("list"), a), (field_element("list"), b, field_element("nv")))
    assert remove_items(obj, gone, ASSOCIATIVE) == {"list": [{"key": "b", "id": 2}], "atomicList": ["x"]}
    everything = FieldSet.of(
        (field_element("list"), a), (field_element("list"), b), (field_element("atomicList"),)
    )
    assert remove_items(obj, everything, ASSOCIATIVE) == {}


def test_named_fields_become_members() -> None:
    config = {"list": [{"key": "a", "id": 1, "value": {"x": "1"}}]}
    fields = to_field_set(config, ASSOCIATIVE)
    a = key_element({"id": 1, "key": "a"})
    assert not fields.has((field_element("list"),))
    named = with_named_fields(fields, ASSOCIATIVE)
    assert named.has((field_element("list"),))
    assert named.has((field_element("list"), a, field_element("value")))  # a struct field of the item
    assert not named.has((field_element("list"), a, field_element("value"), field_element("y")))


def test_path_strings_are_smds() -> None:
    assert element_string(key_element({"name": "x", "port": 80})) == '[name="x",port=80]'
    assert element_string(value_element("v")) == '[="v"]'
    assert element_string("i:3") == "[3]"
    assert (
        path_string((field_element("spec"), key_element({"name": "x"}), field_element("q")))
        == '.spec[name="x"].q'
    )


@pytest.mark.parametrize(
    "obj",
    [
        {"list": [{"key": "a", "id": 1, "value": {"x": "1"}}, {"key": "b", "id": 2}], "atomicList": ["a"]},
        {"list": [], "atomicList": []},
        {"list": [{"key": "a", "id": 1, "value": {}}]},
        {"unknown": {"deep": [1, 2]}, "atomicList": None},
    ],
)
def test_created_fields_is_what_a_comparison_with_nothing_adds(obj: dict[str, Any]) -> None:
    changes = compare(None, obj, ASSOCIATIVE)
    assert created_fields(obj, ASSOCIATIVE) == changes.added
    skipped = FieldSet.of((field_element("list"),))
    assert created_fields(obj, ASSOCIATIVE, frozenset({"list"})) == changes.exclude(skipped).added


UNDECLARED_SCHEMA = {
    "type": "object",
    "properties": {
        "atomic": {"type": "array", "items": {"type": "object", "properties": {"a": STRING}}},
        "keyed": ASSOCIATIVE["properties"]["list"],
        "labels": {"type": "object", "additionalProperties": STRING},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "empty": {"type": "object"},
    },
}


@pytest.mark.parametrize(
    ("config", "undeclared"),
    [
        ({"labels": {"any": "x"}, "free": {"any": {"thing": 1}}}, []),
        ({"atomic": [{"a": "x"}, {"b": "y"}]}, [".atomic[1].b"]),  # atomic lists: by index
        ({"keyed": [{"key": "a", "id": 1, "zz": 2}]}, ['.keyed[id=1,key="a"].zz']),  # map lists: by keys
        ({"empty": {"x": 1}}, [".empty.x"]),  # an object that declares nothing takes nothing
        # SMD stops reading a map at its first undeclared field; other maps are still read.
        ({"a": 1, "b": 2, "atomic": [{"c": 1}]}, [".a"]),
        ({"atomic": [{"c": 1}], "zz": 1}, [".atomic[0].c", ".zz"]),
    ],
)
def test_undeclared_fields_as_smd_paths(config: dict[str, Any], undeclared: list[str]) -> None:
    assert undeclared_fields(config, UNDECLARED_SCHEMA) == undeclared
