"""Conversion between restaurant/v1beta1 objects (dicts) and the hub types.

v1beta1 has the hub's shape, so this is a copy. Copying (rather than sharing lists with the input, as
Go's generated conversions do) keeps both directions free of aliasing: nothing done to the result can
reach the input, which may be a cached object shared with other readers.
"""

from __future__ import annotations

import copy
from typing import Any

from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping, Topping, ToppingSpec
from apis.restaurant.v1beta1.schema import DEFAULT_QUANTITY


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj.get("metadata") or {})


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
    status = obj.get("status") or {}
    return Pizza(
        metadata=_metadata(obj),
        spec=PizzaSpec(toppings=toppings),
        status=PizzaStatus(cost=status.get("cost")),
    )


def pizza_from_hub(pizza: Pizza) -> dict[str, Any]:
    toppings = [{"name": t.name, "quantity": t.quantity} for t in pizza.spec.toppings]
    status: dict[str, Any] = {} if pizza.status.cost is None else {"cost": pizza.status.cost}
    return {"metadata": copy.deepcopy(pizza.metadata), "spec": {"toppings": toppings}, "status": status}


def topping_to_hub(obj: dict[str, Any]) -> Topping:
    # The schema requires spec.cost; 0 only keeps the conversion total for input that skipped validation.
    spec = obj.get("spec") or {}
    return Topping(metadata=_metadata(obj), spec=ToppingSpec(cost=spec.get("cost", 0)))


def topping_from_hub(topping: Topping) -> dict[str, Any]:
    return {"metadata": copy.deepcopy(topping.metadata), "spec": {"cost": topping.spec.cost}}
