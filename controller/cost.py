"""What a pizza costs, and which pizzas name a topping (so a topping's new cost reaches them)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from decimal import Decimal
from typing import Any


def pizza_cost(pizza: Mapping[str, Any], topping_costs: Mapping[str, Any]) -> int | float | None:
    """Σ topping cost * quantity over v1beta1's `spec.toppings[].name/quantity`.

    None when a named topping does not exist (or has no cost): a partial sum would be a wrong price.
    Summed in Decimal so 0.1 + 0.2 is 0.3, and whole sums stay integers (`cost: 3`, not `3.0`), which
    is what a user compares against (`kubectl wait --for=jsonpath='{.status.cost}'=3`).
    """
    total = Decimal(0)
    for topping in (pizza.get("spec") or {}).get("toppings") or []:
        cost = topping_costs.get(topping.get("name", ""))
        if cost is None:
            return None
        total += Decimal(str(cost)) * int(topping.get("quantity", 1))
    return int(total) if total == total.to_integral_value() else float(total)


def topping_names(pizza: Mapping[str, Any]) -> set[str]:
    return {t.get("name", "") for t in (pizza.get("spec") or {}).get("toppings") or []}


class ToppingIndex:
    """topping name → keys of the pizzas that name it (client-go's Indexer, for one index).

    Updated from pizza events; a topping event looks up the pizzas to enqueue instead of scanning all.
    """

    def __init__(self) -> None:
        self._pizzas: dict[str, set[str]] = {}
        self._names: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def update(self, key: str, names: set[str] | None) -> None:
        """Record the pizza `key`'s toppings (None: the pizza is gone)."""
        with self._lock:
            for name in self._names.pop(key, set()):
                keys = self._pizzas.get(name)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._pizzas[name]
            if names:
                self._names[key] = set(names)
                for name in names:
                    self._pizzas.setdefault(name, set()).add(key)

    def pizzas_naming(self, topping: str) -> set[str]:
        with self._lock:
            return set(self._pizzas.get(topping, ()))
