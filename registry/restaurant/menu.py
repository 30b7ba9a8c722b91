"""MenuItems: one per pizza, computed from the pizzas and toppings in the watch cache, never stored.

A menu item shows a pizza's toppings, its price from the toppings' current costs and whether every
topping exists. It changes when its pizza changes or when a topping it names is created, deleted or
changes its cost, so the derivation keeps, besides each pizza's toppings and each topping's cost, an
index from a topping's name to the pizzas that name it: a pizza event is O(1) work, a topping event
O(pizzas naming it), and the other resources' hot paths do not see the menu at all.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apis.restaurant.install import GROUP, MENU_ITEM_KIND, PIZZA_KIND, TOPPING_KIND
from apis.runtime.codec import Codec
from registry.generic.cache.derived import DerivedName
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.window import CacheEvent
from registry.generic.derived import DerivedResource
from storage.interface import EventType

PIZZAS, TOPPINGS = PIZZA_KIND.resource, TOPPING_KIND.resource
# A sum of costs is rounded to this many decimals, so that 0.1 + 0.2 is priced 0.3.
PRICE_DECIMALS = 9


@dataclass(frozen=True, slots=True)
class _Pizza:
    """What the menu needs of a pizza: its toppings and the metadata a menu item takes over."""

    toppings: tuple[tuple[str, int], ...]
    created: str | None
    labels: dict[str, str] | None

    def metadata(self, namespace: str, name: str) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if self.created:
            metadata["creationTimestamp"] = self.created
        if self.labels:
            metadata["labels"] = self.labels
        return metadata


def _pizza(obj: StoredObject) -> _Pizza:
    data = obj.versioned(PIZZA_KIND.storage_version)
    meta = data["metadata"]
    toppings = tuple(
        (sys.intern(t["name"]), t.get("quantity", 1)) for t in data.get("spec", {}).get("toppings", ())
    )
    return _Pizza(toppings, meta.get("creationTimestamp"), meta.get("labels") or None)


def _cost(obj: StoredObject) -> Any:
    return obj.versioned(TOPPING_KIND.storage_version).get("spec", {}).get("cost", 0)


def price(parts: Iterable[tuple[Any, int]]) -> int | float:
    """The sum of cost * quantity, a whole number as an int (JSON `3`, not `3.0`)."""
    total = round(math.fsum(cost * quantity for cost, quantity in parts), PRICE_DECIMALS)
    return int(total) if total.is_integer() else total


class Menu:
    """The Derivation (registry/generic/cache/derived.py) of menu items from pizzas and toppings."""

    sources = (PIZZAS, TOPPINGS)

    def __init__(self) -> None:
        self._pizzas: dict[DerivedName, _Pizza] = {}
        self._costs: dict[str, Any] = {}
        # Topping name → the pizzas naming it, whether the topping exists or not (its creation
        # makes them available).
        self._users: dict[str, set[DerivedName]] = {}

    def reset(self, sources: Mapping[str, Iterable[StoredObject]]) -> Iterable[DerivedName]:
        self._pizzas, self._costs, self._users = {}, {}, {}
        for topping in sources[TOPPINGS]:
            self._costs[topping.name] = _cost(topping)
        for obj in sources[PIZZAS]:
            self._put((obj.namespace or "", obj.name), _pizza(obj))
        return list(self._pizzas)

    def changed(self, resource: str, event: CacheEvent) -> Iterable[DerivedName]:
        obj = event.object
        if resource == TOPPINGS:
            name = obj.name
            if event.type is EventType.DELETED:
                self._costs.pop(name, None)
            else:
                cost = _cost(obj)
                if name in self._costs and self._costs[name] == cost:
                    return ()
                self._costs[name] = cost
            return self._users.get(name, ())
        pizza = (obj.namespace or "", obj.name)
        self._remove(pizza)
        if event.type is not EventType.DELETED:
            self._put(pizza, _pizza(obj))
        return (pizza,)

    def derive(self, namespace: str, name: str) -> dict[str, Any] | None:
        pizza = self._pizzas.get((namespace, name))
        if pizza is None:
            return None
        costs = self._costs
        item: dict[str, Any] = {"metadata": pizza.metadata(namespace, name)}
        if pizza.toppings:
            item["toppings"] = [{"name": t, "quantity": q} for t, q in pizza.toppings]
        item["price"] = price((costs[t], q) for t, q in pizza.toppings if t in costs)
        item["available"] = all(t in costs for t, _ in pizza.toppings)
        return item

    def _put(self, key: DerivedName, pizza: _Pizza) -> None:
        self._pizzas[key] = pizza
        for topping, _ in pizza.toppings:
            self._users.setdefault(topping, set()).add(key)

    def _remove(self, key: DerivedName) -> None:
        pizza = self._pizzas.pop(key, None)
        if pizza is None:
            return
        for topping, _ in pizza.toppings:
            users = self._users.get(topping)
            if users is not None:
                users.discard(key)
                if not users:
                    del self._users[topping]


def menu_items() -> DerivedResource:
    return DerivedResource(Codec(GROUP.group, MENU_ITEM_KIND), Menu())
