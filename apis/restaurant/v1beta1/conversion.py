"""Conversion between restaurant/v1beta1 Pizzas (dicts) and the hub type; the rest is in conversion_common.

v1beta1 has the hub's shape, so this is a copy. Copying (rather than sharing lists with the input, as
Go's generated conversions do) keeps both directions free of aliasing: nothing done to the result can
reach the input, which may be a cached object shared with other readers.
"""

from __future__ import annotations

from typing import Any

from apis.restaurant.conversion_common import hub_pizza, versioned_pizza
from apis.restaurant.types import Pizza, PizzaTopping
from apis.restaurant.v1beta1.schema import DEFAULT_QUANTITY


def _quantity(value: Any) -> Any:
    # JSON decoders may hand over 2.0 for an integer field; the hub counts portions in ints.
    if value is None:
        return DEFAULT_QUANTITY
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def pizza_to_hub(obj: dict[str, Any]) -> Pizza:
    spec = obj.get("spec") or {}
    toppings = [
        PizzaTopping(name=item.get("name") or "", quantity=_quantity(item.get("quantity")))
        for item in spec.get("toppings") or []
    ]
    return hub_pizza(obj, toppings)


def pizza_from_hub(pizza: Pizza) -> dict[str, Any]:
    return versioned_pizza(pizza, [{"name": t.name, "quantity": t.quantity} for t in pizza.spec.toppings])
