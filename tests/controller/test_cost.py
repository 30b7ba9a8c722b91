"""Pricing a pizza and the topping → pizzas index."""

from __future__ import annotations

from controller.cost import ToppingIndex, pizza_cost, topping_names


def pizza(*toppings: tuple[str, int]) -> dict:
    return {"spec": {"toppings": [{"name": n, "quantity": q} for n, q in toppings]}}


def test_cost_is_the_sum_of_cost_times_quantity() -> None:
    costs = {"salami": 1.5, "mozzarella": 1, "tomato": 0.1}
    assert pizza_cost(pizza(("salami", 2), ("mozzarella", 1)), costs) == 4
    assert isinstance(pizza_cost(pizza(("salami", 2), ("mozzarella", 1)), costs), int)  # 4, not 4.0
    assert pizza_cost(pizza(("tomato", 3)), costs) == 0.3  # decimal sum, not 0.30000000000000004
    assert pizza_cost(pizza(), costs) == 0


def test_a_missing_topping_means_no_cost() -> None:
    assert pizza_cost(pizza(("salami", 1), ("anchovy", 1)), {"salami": 1}) is None


def test_the_index_follows_pizza_changes() -> None:
    index = ToppingIndex()
    index.update("ns/a", topping_names(pizza(("salami", 1), ("tomato", 1))))
    index.update("ns/b", topping_names(pizza(("tomato", 1))))
    assert index.pizzas_naming("tomato") == {"ns/a", "ns/b"}
    index.update("ns/a", topping_names(pizza(("mozzarella", 1))))
    assert index.pizzas_naming("salami") == set()
    assert index.pizzas_naming("tomato") == {"ns/b"}
    index.update("ns/b", None)
    assert index.pizzas_naming("tomato") == set()
    assert index.pizzas_naming("mozzarella") == {"ns/a"}
