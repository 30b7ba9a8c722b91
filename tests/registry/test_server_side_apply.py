"""The apply algorithm (registry/generic/server_side_apply.py) on structured-merge-diff's own scenarios.

Cases come from merge/set_test.go and merge/multiple_appliers_test.go. SMD runs them with a "same
version parser": versions are labels on the entries and conversion is the identity, which is what
`SameVersion` below is. An SMD `Update` step is given here as the state it leaves (the live object and
the Update entry SMD's own expected output shows), since the Update path has its own tests.
"""

from __future__ import annotations

from typing import Any

import pytest

from apis.schema.fieldset import FieldSet, field_element, key_element, value_element
from registry.generic.managed_fields import Entry, decode_entries
from registry.generic.server_side_apply import ApplyConflicts, ApplyRequest, apply_config

NOW = "2026-01-01T00:00:00Z"
STRING = {"type": "string"}
SETS = {
    "type": "object",
    "properties": {"list": {"type": "array", "items": STRING, "x-kubernetes-list-type": "set"}},
}
LIST_OF_LISTS = {
    "type": "object",
    "properties": {
        "listOfLists": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "properties": {
                    "name": STRING,
                    "value": {"type": "array", "items": STRING, "x-kubernetes-list-type": "set"},
                },
            },
        },
    },
}
STRUCT = {
    "type": "object",
    "properties": {
        "numeric": {"type": "number"},
        "string": STRING,
        "map": {"type": "object", "additionalProperties": STRING},
    },
}


class SameVersion:
    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema

    def schema(self, api_version: str) -> dict[str, Any] | None:
        return self._schema if api_version.startswith("v") else None

    def convert(self, data: dict[str, Any], source: str, target: str, *, partial: bool) -> dict[str, Any]:
        return data


class Session:
    """An object and its managedFields, applied to step by step."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.types = SameVersion(schema)
        self.live: dict[str, Any] | None = None

    def apply(self, manager: str, version: str, config: dict[str, Any], *, force: bool = False) -> None:
        result = apply_config(
            self.types, self.live, config, ApplyRequest(manager, version, force=force), now=NOW
        )
        self.live = {**result.object, "metadata": {"managedFields": result.managed_fields}}

    def update(self, obj: dict[str, Any], manager: str, version: str, owned: FieldSet) -> None:
        """The state SMD's Update leaves: `obj`, and `owned` recorded for the Update manager."""
        assert self.live is not None
        entries = list(self.live["metadata"]["managedFields"])
        entries.append(Entry(manager, "Update", version, "", owned, NOW).encode())
        self.live = {**obj, "metadata": {"managedFields": entries}}

    @property
    def object(self) -> dict[str, Any]:
        assert self.live is not None
        return {k: v for k, v in self.live.items() if k != "metadata"}

    def managed(self) -> dict[str, tuple[str, FieldSet]]:
        assert self.live is not None
        entries = decode_entries(self.live["metadata"]["managedFields"]) or {}
        return {e.manager: (e.api_version, e.fields) for e in entries.values()}


def L(*elements: str) -> tuple[str, ...]:
    return (field_element("list"), *elements)


def LL(name: str, *rest: str) -> tuple[str, ...]:
    return (field_element("listOfLists"), key_element({"name": name}), *rest)


V = value_element
NAME = field_element("name")
VALUE = field_element("value")


def test_set_apply_twice() -> None:
    s = Session(SETS)
    s.apply("default", "v1", {"list": ["a", "c"]})
    s.apply("default", "v1", {"list": ["a", "b", "c", "d"]})
    assert s.object == {"list": ["a", "b", "c", "d"]}
    assert s.managed() == {"default": ("v1", FieldSet.of(*(L(V(x)) for x in "abcd")))}


@pytest.mark.parametrize("controller_version", ["v1", "v2"])
def test_set_apply_update_apply_no_overlap(controller_version: str) -> None:
    s = Session(SETS)
    s.apply("default", "v1", {"list": ["a", "c"]})
    s.update(
        {"list": ["a", "b", "c", "d"]}, "controller", controller_version, FieldSet.of(L(V("b")), L(V("d")))
    )
    s.apply("default", "v1", {"list": ["a", "aprime", "c", "cprime"]})
    assert s.object == {"list": ["a", "b", "aprime", "c", "d", "cprime"]}
    assert s.managed() == {
        "default": ("v1", FieldSet.of(*(L(V(x)) for x in ("a", "aprime", "c", "cprime")))),
        "controller": (controller_version, FieldSet.of(L(V("b")), L(V("d")))),
    }


def test_set_apply_update_apply_with_overlap() -> None:
    s = Session(SETS)
    s.apply("default", "v1", {"list": ["a", "c"]})
    s.update({"list": ["a", "b", "c", "d"]}, "controller", "v1", FieldSet.of(L(V("b")), L(V("d"))))
    s.apply("default", "v1", {"list": ["a", "b", "c"]})
    assert s.object == {"list": ["a", "b", "c", "d"]}
    assert s.managed() == {
        "default": ("v1", FieldSet.of(L(V("a")), L(V("b")), L(V("c")))),
        "controller": ("v1", FieldSet.of(L(V("b")), L(V("d")))),
    }


def test_set_apply_twice_reorder() -> None:
    s = Session(SETS)
    s.apply("default", "v1", {"list": ["a", "b", "c", "d"]})
    s.apply("default", "v1", {"list": ["a", "d", "c", "b"]})
    assert s.object == {"list": ["a", "d", "c", "b"]}


def test_remove_one_keep_one() -> None:
    s = Session(LIST_OF_LISTS)
    s.apply("apply-one", "v1", {"listOfLists": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})
    s.apply("apply-two", "v2", {"listOfLists": [{"name": "c"}, {"name": "d"}]})
    s.apply("apply-one", "v3", {"listOfLists": [{"name": "a"}]})
    assert s.object == {"listOfLists": [{"name": "a"}, {"name": "c"}, {"name": "d"}]}
    assert s.managed() == {
        "apply-one": ("v3", FieldSet.of(LL("a"), LL("a", NAME))),
        "apply-two": ("v2", FieldSet.of(LL("c"), LL("c", NAME), LL("d"), LL("d", NAME))),
    }


def test_remove_one_keep_one_with_dangling_subitem() -> None:
    s = Session(LIST_OF_LISTS)
    s.apply("apply-one", "v1", {"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]})
    s.apply("apply-two", "v2", {"listOfLists": [{"name": "b", "value": ["d"]}]})
    s.update(
        {"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c", "d", "e"]}]},
        "controller",
        "v2",
        FieldSet.of(LL("b", VALUE, V("e"))),
    )
    s.apply("apply-one", "v3", {"listOfLists": [{"name": "a"}]})
    assert s.object == {"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d", "e"]}]}
    assert s.managed() == {
        "apply-one": ("v3", FieldSet.of(LL("a"), LL("a", NAME))),
        "apply-two": ("v2", FieldSet.of(LL("b"), LL("b", NAME), LL("b", VALUE, V("d")))),
        "controller": ("v2", FieldSet.of(LL("b", VALUE, V("e")))),
    }


def test_remove_one_with_dangling_subitem_keep_one() -> None:
    s = Session(LIST_OF_LISTS)
    s.apply("apply-one", "v1", {"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]})
    s.apply("apply-two", "v2", {"listOfLists": [{"name": "a", "value": ["b"]}]})
    s.update(
        {"listOfLists": [{"name": "a", "value": ["b"]}, {"name": "b", "value": ["c", "d"]}]},
        "controller",
        "v2",
        FieldSet.of(LL("b", VALUE, V("d"))),
    )
    s.apply("apply-one", "v3", {"listOfLists": [{"name": "a"}]})
    # b goes although the controller owned something inside it: a dropped k: item is removed whole.
    assert s.object == {"listOfLists": [{"name": "a", "value": ["b"]}]}
    assert s.managed() == {
        "apply-one": ("v3", FieldSet.of(LL("a"), LL("a", NAME))),
        "apply-two": ("v2", FieldSet.of(LL("a"), LL("a", NAME), LL("a", VALUE, V("b")))),
    }


def test_same_value_no_conflict_change_value_conflict_and_force() -> None:
    s = Session(STRUCT)
    s.apply("alice", "v1", {"numeric": 1, "string": "x"})
    s.apply("bob", "v2", {"numeric": 1})
    assert set(s.managed()) == {"alice", "bob"}
    with pytest.raises(ApplyConflicts) as raised:
        s.apply("bob", "v2", {"numeric": 2})
    status = raised.value.status()
    assert (status.code, status.reason) == (409, "Conflict")
    assert status.message == 'Apply failed with 1 conflict: conflict with "alice": .numeric'
    s.apply("bob", "v2", {"numeric": 2}, force=True)
    assert s.object == {"numeric": 2, "string": "x"}
    assert s.managed()["alice"] == ("v1", FieldSet.of((field_element("string"),)))


def test_unset_scalar_sole_owner_and_shared() -> None:
    s = Session(STRUCT)
    s.apply("alice", "v1", {"numeric": 1, "string": "x"})
    s.apply("bob", "v1", {"string": "x"})
    s.apply("alice", "v1", {})
    assert s.object == {"string": "x"}  # numeric was alice's alone; string is still bob's
    assert "alice" not in s.managed()


def test_update_manager_conflict_names_the_version() -> None:
    s = Session(STRUCT)
    s.apply("alice", "v1", {"map": {"k": "1"}})
    s.update({"map": {"k": "2"}}, "bob", "v2", FieldSet.of((field_element("map"), field_element("k"))))
    with pytest.raises(ApplyConflicts) as raised:
        s.apply("alice", "v1", {"map": {"k": "1"}})
    status = raised.value.status()
    assert status.message == 'Apply failed with 1 conflict: conflict with "bob" using v2: .map.k'
    assert status.details == {
        "causes": [
            {"reason": "FieldManagerConflict", "message": 'conflict with "bob" using v2', "field": ".map.k"}
        ]
    }


def test_entries_of_versions_no_longer_served_are_dropped() -> None:
    s = Session(STRUCT)
    s.apply("alice", "v1", {"numeric": 1})
    s.update({"numeric": 1, "string": "y"}, "old", "gone/v0", FieldSet.of((field_element("string"),)))
    s.apply("alice", "v1", {"numeric": 2})
    assert set(s.managed()) == {"alice"}


def test_noop_apply_keeps_the_object_and_time() -> None:
    s = Session(STRUCT)
    s.apply("alice", "v1", {"numeric": 1})
    before = s.live
    result = apply_config(
        s.types, before, {"numeric": 1}, ApplyRequest("alice", "v1"), now="2030-01-01T00:00:00Z"
    )
    assert not result.changed
    assert result.managed_fields == before["metadata"]["managedFields"]  # type: ignore[index]
