"""Conversion of what every served restaurant version has in the hub's shape: metadata, a Pizza's status
and the whole Topping kind. Only a Pizza's toppings differ between versions; each version's conversion
module converts those and leaves the rest to this one.

Nothing returned shares anything with its input (metadata is deep-copied): callers such as a watch
cache hand the same decoded object to many readers.
"""

from __future__ import annotations

from typing import Any

from apis.meta.json_copy import copy_json
from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, PizzaTopping, Topping, ToppingSpec


def hub_pizza(obj: dict[str, Any], toppings: list[PizzaTopping]) -> Pizza:
    """The hub Pizza of a versioned object whose toppings are already converted."""
    status = obj.get("status") or {}
    return Pizza(
        metadata=_metadata(obj),
        spec=PizzaSpec(toppings=toppings),
        status=PizzaStatus(cost=status.get("cost")),
    )


def versioned_pizza(pizza: Pizza, toppings: list[Any]) -> dict[str, Any]:
    """The versioned object of a hub Pizza, given its toppings in that version's shape."""
    status: dict[str, Any] = {} if pizza.status.cost is None else {"cost": pizza.status.cost}
    return {"metadata": copy_json(pizza.metadata), "spec": {"toppings": toppings}, "status": status}


def topping_to_hub(obj: dict[str, Any]) -> Topping:
    # The schema requires spec.cost; 0 only keeps the conversion total for input that skipped validation.
    spec = obj.get("spec") or {}
    return Topping(metadata=_metadata(obj), spec=ToppingSpec(cost=spec.get("cost", 0)))


def topping_from_hub(topping: Topping) -> dict[str, Any]:
    return {"metadata": copy_json(topping.metadata), "spec": {"cost": topping.spec.cost}}


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return copy_json(obj.get("metadata") or {})
