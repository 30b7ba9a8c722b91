"""GET pizzas/{name}/bill: the pizza's toppings at their current prices (a rest.Getter).

Nothing is stored: each request reads the pizza and its toppings through their Stores, which answer
from the watch cache. Both are read "not older than" the store's revision when the request came, one
consistent point for the whole bill, so a price changed just before shows in it; the revision costs
one round trip, each read none more (a cache that has caught up answers at once).
"""

from __future__ import annotations

from typing import Any

from apis.meta.errors import StatusError
from apis.restaurant.bill import BILL_COLUMNS, BILL_KIND, BILL_SCHEMA
from apis.restaurant.types import Pizza
from registry.generic.custom_subresources import Getter, SubresourceRequest
from registry.generic.store import Store


class Bill(Getter):
    kind = BILL_KIND
    schema = BILL_SCHEMA
    columns = BILL_COLUMNS

    def __init__(self, pizzas: Store, toppings: Store) -> None:
        self.pizzas, self.toppings = pizzas, toppings

    async def get(self, request: SubresourceRequest) -> dict[str, Any]:
        revision = str(await self.pizzas.storage.current_revision())
        # A missing pizza is the pizzas' 404, as for any subresource of a missing object.
        pizza: Pizza = await self.pizzas.get(request.namespace, request.name, resource_version=revision)
        lines: list[dict[str, Any]] = []
        total: int | float = 0
        complete = True
        for topping in pizza.spec.toppings:
            line: dict[str, Any] = {"topping": topping.name, "quantity": topping.quantity}
            unit_cost = await self._cost(topping.name, revision)
            if unit_cost is None:
                complete = False
            else:
                line["unitCost"] = unit_cost
                line["cost"] = unit_cost * topping.quantity
                total += line["cost"]
            lines.append(line)
        return {
            "metadata": {"name": request.name, "namespace": request.namespace},
            "lines": lines,
            "total": total,
            "complete": complete,
        }

    async def _cost(self, name: str, revision: str) -> Any:
        """The topping's spec.cost, or None when it no longer exists."""
        try:
            topping = await self.toppings.read("", name, resource_version=revision)
        except StatusError as e:
            if e.code != 404:
                raise
            return None
        return topping.hub().spec.cost
