"""Example-based conversion tests: the cases the book spells out and the edges of totality."""

from __future__ import annotations

import copy

from apis.restaurant.types import (
    PIZZA_KIND,
    TOPPING_KIND,
    Pizza,
    PizzaSpec,
    PizzaStatus,
    PizzaTopping,
    Topping,
    ToppingSpec,
)

ALPHA_PIZZA = PIZZA_KIND.versions["v1alpha1"]
ALPHA_TOPPING = TOPPING_KIND.versions["v1alpha1"]
BETA_PIZZA = PIZZA_KIND.versions["v1beta1"]
BETA_TOPPING = TOPPING_KIND.versions["v1beta1"]


def test_v1alpha1_extra_cheese_becomes_quantity_two() -> None:
    obj = {
        "apiVersion": "restaurant.programming-kubernetes.info/v1alpha1",
        "kind": "Pizza",
        "metadata": {"name": "margherita", "namespace": "default"},
        "spec": {"toppings": ["mozzarella", "tomato", "mozzarella"]},
    }
    before = copy.deepcopy(obj)
    hub = ALPHA_PIZZA.to_hub(obj)
    assert obj == before
    assert hub == Pizza(
        metadata={"name": "margherita", "namespace": "default"},
        spec=PizzaSpec([PizzaTopping("mozzarella", 2), PizzaTopping("tomato", 1)]),
        status=PizzaStatus(None),
    )
    assert BETA_PIZZA.from_hub(hub) == {
        "metadata": {"name": "margherita", "namespace": "default"},
        "spec": {"toppings": [{"name": "mozzarella", "quantity": 2}, {"name": "tomato", "quantity": 1}]},
        "status": {},
    }


def test_hub_quantities_expand_into_repeated_names_in_v1alpha1() -> None:
    hub = Pizza(
        metadata={"name": "hawaii"},
        spec=PizzaSpec([PizzaTopping("pineapple", 3), PizzaTopping("ham", 1)]),
        status=PizzaStatus(cost=7.5),
    )
    assert ALPHA_PIZZA.from_hub(hub) == {
        "metadata": {"name": "hawaii"},
        "spec": {"toppings": ["pineapple", "pineapple", "pineapple", "ham"]},
        "status": {"cost": 7.5},
    }


def test_to_hub_is_total_on_minimal_objects() -> None:
    for kind in (ALPHA_PIZZA, BETA_PIZZA):
        assert kind.to_hub({}) == Pizza(metadata={}, spec=PizzaSpec([]), status=PizzaStatus(None))
        assert kind.to_hub({"metadata": {"name": "p"}, "spec": {}, "status": {}}).spec.toppings == []
    for kind in (ALPHA_TOPPING, BETA_TOPPING):
        # No cost (the schema requires one): the hub says so, and validation refuses it.
        assert kind.to_hub({"metadata": {"name": "t"}}) == Topping({"name": "t"}, ToppingSpec(None))


def test_v1beta1_quantity_left_out_means_one_portion() -> None:
    hub = BETA_PIZZA.to_hub({"spec": {"toppings": [{"name": "salami"}, {"name": "tomato", "quantity": 2.0}]}})
    assert hub.spec.toppings == [PizzaTopping("salami", 1), PizzaTopping("tomato", 2)]
    assert type(hub.spec.toppings[1].quantity) is int


def test_numbers_keep_their_type() -> None:
    for kind in (ALPHA_TOPPING, BETA_TOPPING):
        assert kind.from_hub(kind.to_hub({"spec": {"cost": 2}}))["spec"]["cost"].__class__ is int
        assert kind.from_hub(kind.to_hub({"spec": {"cost": 2.0}}))["spec"]["cost"].__class__ is float
    for kind in (ALPHA_PIZZA, BETA_PIZZA):
        assert kind.from_hub(kind.to_hub({"status": {"cost": 3}}))["status"]["cost"].__class__ is int


def test_topping_has_no_status_in_any_version() -> None:
    hub = Topping({"name": "basil"}, ToppingSpec(0.25))
    for kind in (ALPHA_TOPPING, BETA_TOPPING):
        assert kind.from_hub(hub) == {"metadata": {"name": "basil"}, "spec": {"cost": 0.25}}
