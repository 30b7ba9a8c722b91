"""The restaurant schemas driven through the generic schema engine, as the codec will use them.

These pin down what a client observes on decode: which defaults appear, what gets pruned and which
schema errors come back (before hub validation ever runs).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apis.restaurant.install import GROUP, PIZZA_KIND, TOPPING_KIND
from apis.restaurant.types import PizzaTopping
from apis.restaurant.validation import validate_pizza
from apis.schema import apply_defaults, prune, validate

ALPHA = PIZZA_KIND.versions["v1alpha1"]
BETA = PIZZA_KIND.versions["v1beta1"]
_DEFAULT_HUB_TOPPINGS = [PizzaTopping("salami", 1), PizzaTopping("mozzarella", 1), PizzaTopping("tomato", 1)]


def _pizza(version: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP.group}/{version}", "kind": "Pizza", "metadata": {"name": "p"}, **fields}


def _topping(version: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP.group}/{version}", "kind": "Topping", "metadata": {"name": "t"}, **fields}


def _decode(obj: dict[str, Any], versioned: Any) -> dict[str, Any]:
    """Prune then default, in the order the codec runs them (KEP-575)."""
    prune(obj, versioned.schema)
    apply_defaults(obj, versioned.schema)
    return obj


def test_v1alpha1_pizza_without_spec_gets_the_three_default_toppings() -> None:
    obj = _decode(_pizza("v1alpha1"), ALPHA)
    assert obj["spec"] == {"toppings": ["salami", "mozzarella", "tomato"]}
    assert validate(obj, ALPHA.schema) == []
    hub = ALPHA.to_hub(obj)
    assert hub.spec.toppings == _DEFAULT_HUB_TOPPINGS
    assert validate_pizza(hub) == []


def test_v1beta1_pizza_without_spec_gets_one_portion_of_each_default_topping() -> None:
    obj = _decode(_pizza("v1beta1"), BETA)
    assert obj["spec"]["toppings"] == [
        {"name": "salami", "quantity": 1},
        {"name": "mozzarella", "quantity": 1},
        {"name": "tomato", "quantity": 1},
    ]
    assert validate(obj, BETA.schema) == []
    assert BETA.to_hub(obj).spec.toppings == _DEFAULT_HUB_TOPPINGS


@pytest.mark.parametrize("versioned", [ALPHA, BETA], ids=["v1alpha1", "v1beta1"])
def test_null_toppings_are_defaulted_but_an_empty_list_is_kept(versioned: Any) -> None:
    # KEP-1929: null in a non-nullable field with a default gets the default; [] is a value.
    nulled = _decode(_pizza(versioned.version, spec={"toppings": None}), versioned)
    assert versioned.to_hub(nulled).spec.toppings == _DEFAULT_HUB_TOPPINGS
    empty = _decode(_pizza(versioned.version, spec={"toppings": []}), versioned)
    assert empty["spec"]["toppings"] == []


def test_v1beta1_item_without_quantity_gets_one() -> None:
    obj = _decode(
        _pizza("v1beta1", spec={"toppings": [{"name": "basil"}, {"name": "ham", "quantity": None}]}), BETA
    )
    assert obj["spec"]["toppings"] == [{"name": "basil", "quantity": 1}, {"name": "ham", "quantity": 1}]


def test_defaults_are_not_shared_between_objects_or_with_the_schema() -> None:
    schema_before = copy.deepcopy(BETA.schema)
    first = _decode(_pizza("v1beta1"), BETA)
    first["spec"]["toppings"][0]["quantity"] = 5
    first["spec"]["toppings"].append({"name": "ham", "quantity": 1})
    second = _decode(_pizza("v1beta1"), BETA)
    assert second["spec"]["toppings"][0] == {"name": "salami", "quantity": 1}
    assert len(second["spec"]["toppings"]) == 3
    assert BETA.schema == schema_before


def test_prune_removes_unknown_fields_everywhere() -> None:
    obj = _pizza(
        "v1beta1",
        bogus=1,
        spec={"toppings": [{"name": "salami", "quantity": 2, "extra": True}], "crust": "thin"},
        status={"cost": 1, "oven": "hot"},
    )
    assert prune(obj, BETA.schema) == ["bogus", "spec.crust", "spec.toppings[0].extra", "status.oven"]
    assert obj == _pizza(
        "v1beta1", spec={"toppings": [{"name": "salami", "quantity": 2}]}, status={"cost": 1}
    )
    topping = _topping("v1alpha1", spec={"cost": 1, "unit": "g"}, status={"stock": 3})
    assert prune(topping, TOPPING_KIND.versions["v1alpha1"].schema) == ["spec.unit", "status"]
    assert topping == _topping("v1alpha1", spec={"cost": 1})


def test_schema_errors_clients_see_before_hub_validation() -> None:
    obj = _decode(
        _pizza("v1beta1", spec={"toppings": [{"name": "a", "quantity": 0}, {"name": "a"}, {"quantity": 2}]}),
        BETA,
    )
    assert [str(e) for e in validate(obj, BETA.schema)] == [
        "spec.toppings[0].quantity: Invalid value: 0: "
        "spec.toppings[0].quantity in body should be greater than or equal to 1",
        "spec.toppings[2].name: Required value",
        'spec.toppings[1]: Duplicate value: {"name":"a"}',
    ]
    # v1alpha1 accepts repeated names: they are portions, not duplicates.
    alpha = _decode(_pizza("v1alpha1", spec={"toppings": ["a", "a"]}), ALPHA)
    assert validate(alpha, ALPHA.schema) == []


@pytest.mark.parametrize("versioned", TOPPING_KIND.versions.values(), ids=lambda v: v.version)
def test_topping_needs_a_non_negative_cost(versioned: Any) -> None:
    assert [str(e) for e in validate(_decode(_topping(versioned.version), versioned), versioned.schema)] == [
        "spec: Required value"
    ]
    assert [str(e) for e in validate(_topping(versioned.version, spec={}), versioned.schema)] == [
        "spec.cost: Required value"
    ]
    errors = validate(_topping(versioned.version, spec={"cost": -1}), versioned.schema)
    assert [e.field for e in errors] == ["spec.cost"]
    assert validate(_topping(versioned.version, spec={"cost": 0}), versioned.schema) == []
