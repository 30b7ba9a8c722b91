"""The published structural schemas: defaults, list semantics and descriptions.

Defaults must be valid values of their own schema and must survive pruning (KEP-575 rejects a CRD whose
defaults do not), and both versions' defaults must mean the same pizza (versioning guide: a field
defaulted in one version is defaulted in all). A small conformance check stands in for the generic
schema engine here so that these properties hold independently of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apis.restaurant.install import PIZZA_KIND, TOPPING_KIND
from apis.restaurant.types import PizzaTopping
from apis.restaurant.validation import validate_pizza

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _conformance_errors(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Type, required, minimum and unknown-field (would be pruned) errors of a value against a schema."""
    expected = _TYPES[schema["type"]]
    if not isinstance(value, expected) or (isinstance(value, bool) and schema["type"] != "boolean"):
        return [f"{path}: not {schema['type']}"]
    errors: list[str] = []
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: below minimum")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{path}.{k}: required" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in props:
                errors += _conformance_errors(item, props[key], f"{path}.{key}")
            elif "additionalProperties" in schema:
                errors += _conformance_errors(item, schema["additionalProperties"], f"{path}.{key}")
            else:
                errors.append(f"{path}.{key}: unknown field")
    if isinstance(value, list):
        for i, item in enumerate(value):
            errors += _conformance_errors(item, schema["items"], f"{path}[{i}]")
    return errors


def _walk(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


_ALL = [(k.kind, v) for k in (TOPPING_KIND, PIZZA_KIND) for v in k.versions.values()]
_IDS = [f"{kind}.{v.version}" for kind, v in _ALL]


@pytest.mark.parametrize(("kind", "versioned"), _ALL, ids=_IDS)
def test_every_default_conforms_to_its_schema(kind: str, versioned: Any) -> None:
    defaults = [(p, s) for p, s in _walk(versioned.schema) if "default" in s]
    assert defaults or kind == "Topping"
    for path, schema in defaults:
        assert _conformance_errors(schema["default"], schema, path) == []


@pytest.mark.parametrize(("kind", "versioned"), _ALL, ids=_IDS)
def test_schema_is_a_whole_object_with_documented_fields(kind: str, versioned: Any) -> None:
    schema = versioned.schema
    assert schema["type"] == "object"
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(schema["properties"])
    assert ("status" in schema["properties"]) == (kind == "Pizza")
    # kubectl explain shows these; every field of ours is documented (a list of plain strings has
    # nothing to say about its items beyond the list's own description).
    for name in {"spec", "status"} & set(schema["properties"]):
        for path, sub in _walk(schema["properties"][name], name):
            if not (path.endswith("[]") and sub["type"] != "object"):
                assert sub.get("description"), f"{path} has no description"


@pytest.mark.parametrize("versioned", TOPPING_KIND.versions.values(), ids=lambda v: v.version)
def test_topping_cost_is_a_required_non_negative_number(versioned: Any) -> None:
    schema = versioned.schema
    assert schema["required"] == ["spec"]
    spec = schema["properties"]["spec"]
    assert spec["required"] == ["cost"]
    assert spec["properties"]["cost"]["type"] == "number"
    assert spec["properties"]["cost"]["minimum"] == 0
    assert _conformance_errors({"spec": {"cost": -1}}, schema) == [".spec.cost: below minimum"]
    assert _conformance_errors({"spec": {}}, schema) == [".spec.cost: required"]


def test_v1alpha1_toppings_are_an_atomic_list_of_names_with_a_default() -> None:
    spec = PIZZA_KIND.versions["v1alpha1"].schema["properties"]["spec"]
    assert spec["default"] == {}
    toppings = spec["properties"]["toppings"]
    assert toppings["items"] == {"type": "string"}
    # Duplicates mean portions, so neither "set" nor "map" would do.
    assert toppings["x-kubernetes-list-type"] == "atomic"
    assert "x-kubernetes-patch-strategy" not in toppings
    assert toppings["default"] == ["salami", "mozzarella", "tomato"]


def test_v1beta1_toppings_are_a_map_keyed_by_name_with_defaults() -> None:
    spec = PIZZA_KIND.versions["v1beta1"].schema["properties"]["spec"]
    assert spec["default"] == {}
    toppings = spec["properties"]["toppings"]
    assert toppings["x-kubernetes-list-type"] == "map"
    assert toppings["x-kubernetes-list-map-keys"] == ["name"]
    assert toppings["x-kubernetes-patch-merge-key"] == "name"
    assert toppings["x-kubernetes-patch-strategy"] == "merge"
    # kube requires list-map keys to be required (or defaulted) in the item schema.
    assert toppings["items"]["required"] == ["name"]
    quantity = toppings["items"]["properties"]["quantity"]
    assert quantity == {**quantity, "type": "integer", "default": 1, "minimum": 1}
    assert toppings["default"] == [
        {"name": "salami", "quantity": 1},
        {"name": "mozzarella", "quantity": 1},
        {"name": "tomato", "quantity": 1},
    ]


def test_both_versions_default_to_the_same_valid_pizza() -> None:
    hubs = []
    for versioned in PIZZA_KIND.versions.values():
        spec_schema = versioned.schema["properties"]["spec"]
        default_spec = {"toppings": spec_schema["properties"]["toppings"]["default"]}
        hubs.append(versioned.to_hub({"metadata": {"name": "p"}, "spec": default_spec}))
    assert hubs[0] == hubs[1]
    assert hubs[0].spec.toppings == [
        PizzaTopping("salami", 1),
        PizzaTopping("mozzarella", 1),
        PizzaTopping("tomato", 1),
    ]
    assert validate_pizza(hubs[0]) == []


def test_status_cost_is_a_non_negative_number_in_every_version() -> None:
    for versioned in PIZZA_KIND.versions.values():
        cost = versioned.schema["properties"]["status"]["properties"]["cost"]
        assert (cost["type"], cost["minimum"]) == ("number", 0)


@pytest.mark.parametrize(("kind", "versioned"), _ALL, ids=_IDS)
def test_converted_objects_conform_to_their_schema(kind: str, versioned: Any) -> None:
    """from_hub output is never pruned nor rejected by its own version's schema."""
    if kind == "Pizza":
        obj = {"metadata": {"name": "p", "namespace": "default"}, "spec": {}, "status": {"cost": 3.5}}
        obj["spec"]["toppings"] = versioned.schema["properties"]["spec"]["properties"]["toppings"]["default"]
    else:
        obj = {"metadata": {"name": "t", "labels": {"a": "b"}}, "spec": {"cost": 2}}
    out = versioned.from_hub(versioned.to_hub(obj))
    assert _conformance_errors(out, versioned.schema) == []
