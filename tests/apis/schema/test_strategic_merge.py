"""Strategic merge patch over a structural schema: kube's strategicpatch semantics, case by case.

Expected results follow k8s.io/apimachinery/pkg/util/strategicpatch (patch.go, patch_test.go):
patch items come before server-only items unless $setElementOrder says otherwise, deleted keys are
nulls, and errors carry kube's messages.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apis.meta.schemas import object_schema
from apis.restaurant.v1alpha1.schema import PIZZA_SCHEMA as V1ALPHA1_PIZZA
from apis.restaurant.v1beta1.schema import PIZZA_SCHEMA as V1BETA1_PIZZA
from apis.schema.strategic_merge import (
    BadPatchFormat,
    PatchError,
    UnprocessablePatch,
    go_format,
    strategic_merge_patch,
)
from server.endpoints.patch import merge_patch

STR = {"type": "string"}
ITEM = {"type": "object", "properties": {"name": STR, "size": {"type": "integer"}, "note": STR}}

SCHEMA = object_schema(
    "A kind with every kind of list.",
    {
        "spec": {
            "type": "object",
            "properties": {
                "merged": {
                    "type": "array",
                    "items": ITEM,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge",
                },
                # Merge strategy with only list-map-keys: the single map key is the merge key.
                "keyed": {
                    "type": "array",
                    "items": ITEM,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-patch-strategy": "merge",
                },
                # A list-type map without a patch strategy is replaced, as kubectl assumes.
                "unstrategic": {
                    "type": "array",
                    "items": ITEM,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                },
                "tags": {"type": "array", "items": STR, "x-kubernetes-patch-strategy": "merge"},
                "atomic": {"type": "array", "items": STR, "x-kubernetes-list-type": "atomic"},
                "grid": {"type": "array", "items": {"type": "array", "items": STR}},
                "replaced": {
                    "type": "object",
                    "additionalProperties": STR,
                    "x-kubernetes-patch-strategy": "replace",
                },
                "volume": {
                    "type": "object",
                    "x-kubernetes-patch-strategy": "retainKeys",
                    "properties": {"kind": STR, "disk": STR, "size": {"type": "integer"}},
                },
                "labels": {"type": "object", "additionalProperties": STR},
            },
        }
    },
)


def items(*names: str, **sizes: int) -> list[dict[str, Any]]:
    return [{"name": n, "size": sizes.get(n, 1)} for n in names]


def spec(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "o"}, "spec": fields}


def patched(
    original: dict[str, Any], patch: dict[str, Any], schema: dict[str, Any] = SCHEMA
) -> dict[str, Any]:
    return strategic_merge_patch(original, patch, schema)["spec"]


# --- maps -----------------------------------------------------------------------------------------


def test_maps_merge_and_null_deletes() -> None:
    out = patched(spec(labels={"a": "1", "b": "2"}), {"spec": {"labels": {"a": None, "c": "3"}}})
    assert out["labels"] == {"b": "2", "c": "3"}


def test_nulls_inside_a_new_value_are_dropped() -> None:
    out = patched(spec(), {"spec": {"labels": {"a": None, "b": "2"}, "volume": {"disk": None}}})
    assert out == {"labels": {"b": "2"}, "volume": {}}


def test_patch_replace_directive_in_a_map_replaces_it() -> None:
    out = patched(spec(labels={"a": "1"}), {"spec": {"labels": {"$patch": "replace", "z": "9"}}})
    assert out["labels"] == {"z": "9"}


def test_patch_delete_directive_in_a_map_empties_it() -> None:
    out = patched(spec(labels={"a": "1"}), {"spec": {"labels": {"$patch": "delete"}}})
    assert out["labels"] == {}


def test_replace_strategy_on_a_map() -> None:
    assert patched(spec(replaced={"a": "1"}), {"spec": {"replaced": {"b": "2"}}})["replaced"] == {"b": "2"}


def test_unknown_map_directive_is_an_error() -> None:
    with pytest.raises(PatchError, match=r"unknown patch type: bogus in map: map\[\$patch:bogus a:1\]"):
        patched(spec(labels={}), {"spec": {"labels": {"$patch": "bogus", "a": "1"}}})


def test_retain_keys_clears_unlisted_fields() -> None:
    original = spec(volume={"kind": "disk", "disk": "sda", "size": 3})
    out = patched(original, {"spec": {"volume": {"$retainKeys": ["kind", "size"], "kind": "tmp"}}})
    assert out["volume"] == {"kind": "tmp", "size": 3}


def test_retain_keys_must_list_every_patched_field() -> None:
    original = spec(volume={"kind": "disk"})
    with pytest.raises(BadPatchFormat, match="invalid patch format of retainKeys"):
        patched(original, {"spec": {"volume": {"$retainKeys": ["kind"], "disk": "sdb"}}})
    with pytest.raises(BadPatchFormat, match="retainKeys"):
        patched(original, {"spec": {"volume": {"$retainKeys": "kind"}}})


# --- lists merged by key --------------------------------------------------------------------------


def test_an_existing_item_is_merged_in_place_and_others_kept() -> None:
    out = patched(spec(merged=items("a", "b", "c")), {"spec": {"merged": [{"name": "b", "size": 5}]}})
    assert out["merged"] == items("a", "b", "c", b=5)


def test_a_new_item_comes_before_server_only_items() -> None:
    # mergeSortedSlice: an item the server does not know has no place in its order, so it goes first.
    out = patched(spec(merged=items("a", "b")), {"spec": {"merged": [{"name": "n", "size": 2}]}})
    assert [i["name"] for i in out["merged"]] == ["n", "a", "b"]


def test_item_fields_merge_and_null_deletes_a_field_of_an_item() -> None:
    original = spec(merged=[{"name": "a", "size": 1, "note": "x"}])
    out = patched(original, {"spec": {"merged": [{"name": "a", "note": None, "size": 2}]}})
    assert out["merged"] == [{"name": "a", "size": 2}]


def test_delete_directive_removes_an_item() -> None:
    out = patched(
        spec(merged=items("a", "b", "c")), {"spec": {"merged": [{"$patch": "delete", "name": "b"}]}}
    )
    assert out["merged"] == items("a", "c")


def test_replace_directive_makes_the_rest_the_list() -> None:
    patch = {"spec": {"merged": [{"$patch": "replace"}, {"name": "z", "size": 9}]}}
    assert patched(spec(merged=items("a", "b")), patch)["merged"] == [{"name": "z", "size": 9}]


def test_merge_directive_in_a_list_is_refused() -> None:
    with pytest.raises(PatchError, match="merging lists cannot yet be specified in the patch"):
        patched(spec(merged=items("a")), {"spec": {"merged": [{"$patch": "merge"}]}})


def test_an_item_without_its_merge_key_is_kubes_error() -> None:
    with pytest.raises(PatchError) as e:
        patched(spec(merged=items("a")), {"spec": {"merged": [{"size": 2}]}})
    assert str(e.value) == "map: map[size:2] does not contain declared merge key: name"
    assert not isinstance(e.value, BadPatchFormat | UnprocessablePatch)  # kube: a plain error (500; ours 422)
    with pytest.raises(PatchError, match="does not contain declared merge key: name"):
        patched(spec(merged=items("a")), {"spec": {"merged": [{"$patch": "delete"}]}})


def test_list_map_keys_stand_in_for_a_missing_merge_key() -> None:
    out = patched(spec(keyed=items("a", "b")), {"spec": {"keyed": [{"name": "b", "size": 7}]}})
    assert out["keyed"] == items("a", "b", b=7)


def test_set_element_order_reorders_and_adds() -> None:
    patch = {
        "spec": {
            "$setElementOrder/merged": [{"name": "c"}, {"name": "n"}, {"name": "a"}, {"name": "b"}],
            "merged": [{"name": "n", "size": 4}],
        }
    }
    out = patched(spec(merged=items("a", "b", "c")), patch)
    assert [(i["name"], i["size"]) for i in out["merged"]] == [("c", 1), ("n", 4), ("a", 1), ("b", 1)]


def test_set_element_order_must_agree_with_the_patch() -> None:
    patch = {"spec": {"$setElementOrder/merged": [{"name": "a"}], "merged": [{"name": "z", "size": 1}]}}
    with pytest.raises(
        PatchError, match=r"the order in patch list:\n.*\n doesn't match \$setElementOrder list"
    ):
        patched(spec(merged=items("a")), patch)


def test_malformed_directive_keys_are_bad_requests() -> None:
    with pytest.raises(BadPatchFormat, match="invalid patch format of setElementOrder list"):
        patched(spec(merged=items("a")), {"spec": {"$setElementOrderXmerged": []}})
    with pytest.raises(BadPatchFormat, match="invalid patch format of primitive list"):
        patched(spec(tags=["a"]), {"spec": {"$deleteFromPrimitiveListXtags": ["a"]}})


def test_unstrategic_list_is_replaced_whatever_its_list_type() -> None:
    out = patched(spec(unstrategic=items("a", "b")), {"spec": {"unstrategic": items("c")}})
    assert out["unstrategic"] == items("c")


# --- lists of scalars -----------------------------------------------------------------------------


def test_merged_scalars_are_a_set_in_patch_then_server_order() -> None:
    out = patched(spec(tags=["a", "b"]), {"spec": {"tags": ["c", "a"]}})
    assert out["tags"] == ["c", "a", "b"]


def test_delete_from_primitive_list() -> None:
    patch = {"spec": {"$deleteFromPrimitiveList/tags": ["b", "zz"]}}
    assert patched(spec(tags=["a", "b", "c"]), patch)["tags"] == ["a", "c"]


def test_delete_from_a_missing_primitive_list_creates_nothing() -> None:
    assert "tags" not in patched(spec(), {"spec": {"$deleteFromPrimitiveList/tags": ["b"]}})


def test_set_element_order_of_scalars() -> None:
    patch = {"spec": {"$setElementOrder/tags": ["c", "a", "b"]}}
    assert patched(spec(tags=["a", "b", "c"]), patch)["tags"] == ["c", "a", "b"]


def test_atomic_list_is_replaced() -> None:
    assert patched(spec(atomic=["a", "b"]), {"spec": {"atomic": ["c"]}})["atomic"] == ["c"]


def test_lists_of_lists_are_unprocessable() -> None:
    with pytest.raises(UnprocessablePatch, match="lists of lists are not supported"):
        strategic_merge_patch(spec(grid=[["a"]]), {"spec": {"grid": [["b"]]}}, _grid_merged())


def _grid_merged() -> dict[str, Any]:
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["grid"]["x-kubernetes-patch-strategy"] = "merge"
    return schema


def test_mixed_item_types_are_kubes_error() -> None:
    with pytest.raises(PatchError, match="list element types are not identical"):
        patched(spec(merged=items("a")), {"spec": {"merged": ["b"]}})


# --- the object as a whole ------------------------------------------------------------------------


def test_inputs_are_not_modified() -> None:
    original = spec(merged=items("a", "b"), labels={"a": "1"})
    patch = {"spec": {"merged": [{"$patch": "delete", "name": "a"}], "labels": {"a": None}}}
    before = copy.deepcopy((original, patch))
    patched(original, patch)
    assert (original, patch) == before


def test_metadata_finalizers_and_owner_references() -> None:
    owner = {"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u1"}
    original = {"metadata": {"name": "o", "finalizers": ["a/x"], "ownerReferences": [owner]}}
    patch = {
        "metadata": {
            "finalizers": ["b/y", "a/x"],
            "ownerReferences": [{**owner, "name": "renamed"}, {**owner, "uid": "u2"}],
        }
    }
    meta = strategic_merge_patch(original, patch, SCHEMA)["metadata"]
    assert meta["finalizers"] == ["b/y", "a/x"]
    assert meta["ownerReferences"] == [{**owner, "name": "renamed"}, {**owner, "uid": "u2"}]


def test_restaurant_versions_merge_and_replace_toppings() -> None:
    beta = {"spec": {"toppings": [{"name": "tomato", "quantity": 1}, {"name": "ham", "quantity": 1}]}}
    out = strategic_merge_patch(beta, {"spec": {"toppings": [{"name": "ham", "quantity": 3}]}}, V1BETA1_PIZZA)
    assert out["spec"]["toppings"] == [{"name": "tomato", "quantity": 1}, {"name": "ham", "quantity": 3}]
    alpha = {"spec": {"toppings": ["tomato", "ham"]}}
    out = strategic_merge_patch(alpha, {"spec": {"toppings": ["basil"]}}, V1ALPHA1_PIZZA)
    assert out["spec"]["toppings"] == ["basil"]


def test_go_format_prints_like_fmt_v() -> None:
    value = {"b": [1, "x", None, True], "a": {"c": 2.0, "d": 1.5e6}}
    assert go_format(value) == "map[a:map[c:2 d:1.5e+06] b:[1 x <nil> true]]"


# Without lists, a strategic merge patch means what a JSON merge patch means.
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text("ab", max_size=2))
_values = st.recursive(
    _scalars, lambda inner: st.dictionaries(st.sampled_from("xyz"), inner, max_size=3), max_leaves=8
)
_objects = st.dictionaries(st.sampled_from("xyz"), _values, max_size=3)


@given(_objects, _objects)
def test_without_lists_it_is_a_json_merge_patch(original: dict[str, Any], patch: dict[str, Any]) -> None:
    original = _without_nulls(original)
    assert strategic_merge_patch(original, patch, {}) == _without_nulls(merge_patch(original, patch))


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value
