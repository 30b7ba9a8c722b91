"""The GroupInfo the generic machinery installs, and the table cells it will print."""

from __future__ import annotations

from apis.restaurant.install import GROUP, PIZZA_KIND, TOPPING_KIND
from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping, Topping, ToppingSpec
from apis.runtime.kinds import GroupInfo


def test_group_serves_v1beta1_first() -> None:
    assert isinstance(GROUP, GroupInfo)
    assert GROUP.group == "restaurant.programming-kubernetes.info"
    assert GROUP.versions == ("v1beta1", "v1alpha1")
    assert GROUP.kind_for_resource("pizzas") is PIZZA_KIND
    assert GROUP.kind_for_resource("toppings") is TOPPING_KIND
    assert GROUP.kind_named("Topping") is TOPPING_KIND


def test_kinds_are_served_in_every_version_and_stored_in_v1beta1() -> None:
    for kind in GROUP.kinds:
        assert tuple(kind.versions) == GROUP.versions
        assert all(v.version == name for name, v in kind.versions.items())
        assert kind.storage_version == "v1beta1"


def test_names_scope_and_subresources() -> None:
    assert (TOPPING_KIND.kind, TOPPING_KIND.list_kind, TOPPING_KIND.resource, TOPPING_KIND.singular) == (
        "Topping",
        "ToppingList",
        "toppings",
        "topping",
    )
    assert TOPPING_KIND.namespaced is False
    assert TOPPING_KIND.subresources == ()
    assert (PIZZA_KIND.kind, PIZZA_KIND.list_kind, PIZZA_KIND.resource, PIZZA_KIND.singular) == (
        "Pizza",
        "PizzaList",
        "pizzas",
        "pizza",
    )
    assert PIZZA_KIND.namespaced is True
    assert PIZZA_KIND.subresources == ("status", "scale")
    for kind in GROUP.kinds:
        assert kind.short_names == () and kind.categories == ()


def _cells(kind, obj) -> dict:
    return {c.name: c.cell(obj) for c in kind.columns}


def test_pizza_columns() -> None:
    assert [(c.name, c.type) for c in PIZZA_KIND.columns] == [("Toppings", "string"), ("Cost", "number")]
    pizza = Pizza(
        metadata={"name": "hawaii"},
        spec=PizzaSpec([PizzaTopping("tomato", 1), PizzaTopping("pineapple", 3)]),
        status=PizzaStatus(cost=6.25),
    )
    assert _cells(PIZZA_KIND, pizza) == {"Toppings": "tomato, 3x pineapple", "Cost": 6.25}
    # Nothing to show → None, printed by kubectl as <none>.
    assert _cells(PIZZA_KIND, Pizza(metadata={"name": "plain"})) == {"Toppings": None, "Cost": None}


def test_topping_columns() -> None:
    assert [(c.name, c.type) for c in TOPPING_KIND.columns] == [("Cost", "number")]
    assert _cells(TOPPING_KIND, Topping({"name": "salami"}, ToppingSpec(2))) == {"Cost": 2}
    for kind in GROUP.kinds:
        assert all(c.description for c in kind.columns)
