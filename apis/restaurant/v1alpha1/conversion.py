"""Conversion between restaurant/v1alpha1 Pizzas (dicts) and the hub type; the rest is in conversion_common.

v1alpha1 lists a topping once per portion (`[mozzarella, mozzarella, tomato]` is extra cheese); the hub
counts portions. Collapsing keeps the order of first occurrence, so hub → v1alpha1 → hub is the
identity for every valid hub object (unique names, quantity ≥ 1). v1alpha1 → hub → v1alpha1 may
regroup repeated names, which the API declares meaningless (the order of toppings does not matter).

Neither direction mutates its input: results share nothing with it, since callers such as a watch
cache hand the same decoded object to many readers.
"""

from __future__ import annotations

from typing import Any

from apis.restaurant.conversion_common import hub_pizza, versioned_pizza
from apis.restaurant.types import Pizza, PizzaTopping


def pizza_to_hub(obj: dict[str, Any]) -> Pizza:
    spec = obj.get("spec") or {}
    toppings: list[PizzaTopping] = []
    index: dict[str, int] = {}
    for name in spec.get("toppings") or []:
        if name in index:
            toppings[index[name]].quantity += 1
        else:
            index[name] = len(toppings)
            toppings.append(PizzaTopping(name=name, quantity=1))
    return hub_pizza(obj, toppings)


def pizza_from_hub(pizza: Pizza) -> dict[str, Any]:
    return versioned_pizza(pizza, [t.name for t in pizza.spec.toppings for _ in range(t.quantity)])
