"""Conversion between restaurant/v1alpha1 objects (dicts) and the hub types.

v1alpha1 lists a topping once per portion (`[mozzarella, mozzarella, tomato]` is extra cheese); the hub
counts portions. Collapsing keeps the order of first occurrence, so hub → v1alpha1 → hub is the
identity for every valid hub object (unique names, quantity ≥ 1). v1alpha1 → hub → v1alpha1 may
regroup repeated names, which the API declares meaningless (the order of toppings does not matter).

Neither direction mutates its input: results share nothing with it (metadata is deep-copied), since
callers such as a watch cache hand the same decoded object to many readers.
"""

from __future__ import annotations

import copy
from typing import Any

from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping, Topping, ToppingSpec


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj.get("metadata") or {})


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
    status = obj.get("status") or {}
    return Pizza(
        metadata=_metadata(obj),
        spec=PizzaSpec(toppings=toppings),
        status=PizzaStatus(cost=status.get("cost")),
    )


def pizza_from_hub(pizza: Pizza) -> dict[str, Any]:
    names = [t.name for t in pizza.spec.toppings for _ in range(t.quantity)]
    status: dict[str, Any] = {} if pizza.status.cost is None else {"cost": pizza.status.cost}
    return {"metadata": copy.deepcopy(pizza.metadata), "spec": {"toppings": names}, "status": status}


def topping_to_hub(obj: dict[str, Any]) -> Topping:
    # The schema requires spec.cost; 0 only keeps the conversion total for input that skipped validation.
    spec = obj.get("spec") or {}
    return Topping(metadata=_metadata(obj), spec=ToppingSpec(cost=spec.get("cost", 0)))


def topping_from_hub(topping: Topping) -> dict[str, Any]:
    return {"metadata": copy.deepcopy(topping.metadata), "spec": {"cost": topping.spec.cost}}
