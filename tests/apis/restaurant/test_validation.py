"""Hub validation: the messages and field paths clients see in a 422's details.causes."""

from __future__ import annotations

import math

from apis.meta.field import ErrorType
from apis.restaurant.types import (
    PIZZA_KIND,
    Pizza,
    PizzaSpec,
    PizzaStatus,
    PizzaTopping,
    Topping,
    ToppingSpec,
)
from apis.restaurant.validation import (
    validate_pizza,
    validate_pizza_status_update,
    validate_pizza_update,
    validate_topping,
    validate_topping_update,
)

ALPHA_PIZZA = PIZZA_KIND.versions["v1alpha1"]


def _pizza(*toppings: PizzaTopping, cost: float | int | None = None) -> Pizza:
    return Pizza(metadata={"name": "p"}, spec=PizzaSpec(list(toppings)), status=PizzaStatus(cost))


def _messages(errors: list) -> list[str]:
    return [str(e) for e in errors]


def test_valid_pizzas_have_no_errors() -> None:
    assert validate_pizza(_pizza()) == []
    assert validate_pizza(_pizza(PizzaTopping("salami", 1), PizzaTopping("tomato", 3), cost=0)) == []


def test_duplicate_topping_names_are_reported_at_the_later_entry() -> None:
    errors = validate_pizza(
        _pizza(PizzaTopping("salami", 1), PizzaTopping("tomato", 1), PizzaTopping("salami", 2))
    )
    assert _messages(errors) == ['spec.toppings[2].name: Duplicate value: "salami"']
    assert errors[0].type is ErrorType.DUPLICATE


def test_empty_topping_name_is_required() -> None:
    errors = validate_pizza(_pizza(PizzaTopping("", 1)))
    assert _messages(errors) == ["spec.toppings[0].name: Required value"]
    assert errors[0].type.reason == "FieldValueRequired"


def test_empty_names_are_not_reported_as_duplicates() -> None:
    assert _messages(validate_pizza(_pizza(PizzaTopping("", 1), PizzaTopping("", 1)))) == [
        "spec.toppings[0].name: Required value",
        "spec.toppings[1].name: Required value",
    ]


def test_quantity_must_be_positive() -> None:
    errors = validate_pizza(
        _pizza(PizzaTopping("salami", 1), PizzaTopping("tomato", 0), PizzaTopping("ham", -2))
    )
    assert _messages(errors) == [
        "spec.toppings[1].quantity: Invalid value: 0: must be greater than or equal to 1",
        "spec.toppings[2].quantity: Invalid value: -2: must be greater than or equal to 1",
    ]


def test_quantity_must_be_an_integer() -> None:
    errors = validate_pizza(_pizza(PizzaTopping("salami", 1.5)))  # type: ignore[arg-type]
    assert _messages(errors) == ["spec.toppings[0].quantity: Invalid value: 1.5: must be an integer"]


def test_status_cost_must_be_a_finite_non_negative_number() -> None:
    assert _messages(validate_pizza(_pizza(cost=-0.5))) == [
        "status.cost: Invalid value: -0.5: must be greater than or equal to 0"
    ]
    assert [e.field for e in validate_pizza(_pizza(cost=math.inf))] == ["status.cost"]
    assert "finite" in validate_pizza(_pizza(cost=math.nan))[0].detail


def test_all_errors_are_reported_together() -> None:
    errors = validate_pizza(_pizza(PizzaTopping("", 0), PizzaTopping("a", 1), PizzaTopping("a", 1), cost=-1))
    assert [e.field for e in errors] == [
        "spec.toppings[0].name",
        "spec.toppings[0].quantity",
        "spec.toppings[2].name",
        "status.cost",
    ]


def test_paths_use_the_hub_shape_even_for_v1alpha1_input() -> None:
    # [salami, "", ""] collapses to [{salami, 1}, {"", 2}]: the error points at the hub entry.
    hub = ALPHA_PIZZA.to_hub({"metadata": {"name": "p"}, "spec": {"toppings": ["salami", "", ""]}})
    assert _messages(validate_pizza(hub)) == ["spec.toppings[1].name: Required value"]


def test_pizza_update_validates_the_new_object() -> None:
    old = _pizza(PizzaTopping("salami", 1))
    assert validate_pizza_update(_pizza(PizzaTopping("tomato", 2)), old) == []
    bad = _pizza(PizzaTopping("tomato", 0))
    assert [e.field for e in validate_pizza_update(bad, old)] == ["spec.toppings[0].quantity"]


def test_pizza_status_update_looks_at_status_only() -> None:
    old = _pizza(PizzaTopping("salami", 1))
    assert validate_pizza_status_update(_pizza(PizzaTopping("salami", 1), cost=3), old) == []
    assert [e.field for e in validate_pizza_status_update(_pizza(cost=-3), old)] == ["status.cost"]


def test_topping_cost() -> None:
    assert validate_topping(Topping({"name": "t"}, ToppingSpec(0))) == []
    assert validate_topping(Topping({"name": "t"}, ToppingSpec(1.25))) == []
    assert _messages(validate_topping(Topping({"name": "t"}, ToppingSpec(-1)))) == [
        "spec.cost: Invalid value: -1: must be greater than or equal to 0"
    ]
    assert _messages(validate_topping(Topping({"name": "t"}, ToppingSpec(True)))) == [  # type: ignore[arg-type]
        "spec.cost: Invalid value: true: must be a number"
    ]
    assert [e.field for e in validate_topping(Topping({"name": "t"}, ToppingSpec(math.inf)))] == ["spec.cost"]


def test_topping_update_validates_the_new_object() -> None:
    old = Topping({"name": "t"}, ToppingSpec(1))
    assert validate_topping_update(Topping({"name": "t"}, ToppingSpec(2)), old) == []
    assert [e.field for e in validate_topping_update(Topping({"name": "t"}, ToppingSpec(-2)), old)] == [
        "spec.cost"
    ]
