"""Table columns for `kubectl get` (meta.k8s.io Table), read from hub objects.

A cell that has nothing to show is None, which kubectl prints as `<none>`, as it does for a custom
resource's printer column whose JSONPath finds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apis.runtime.kinds import Column

if TYPE_CHECKING:  # the types are generated in types.py, which imports this module
    from apis.restaurant.types import MenuItem, Pizza, Topping


def pizza_toppings_cell(pizza: Pizza) -> str | None:
    """ "salami, 2x mozzarella, tomato": one entry per topping, as a menu would list it."""
    parts = [t.name if t.quantity == 1 else f"{t.quantity}x {t.name}" for t in pizza.spec.toppings]
    return ", ".join(parts) if parts else None


def pizza_cost_cell(pizza: Pizza) -> Any:
    return pizza.status.cost


def topping_cost_cell(topping: Topping) -> Any:
    return topping.spec.cost


def menu_item_price_cell(item: MenuItem) -> Any:
    return item.price


def menu_item_available_cell(item: MenuItem) -> Any:
    return item.available


PIZZA_COLUMNS: tuple[Column, ...] = (
    Column(
        name="Toppings",
        type="string",
        description="The toppings on the pizza, with the number of portions where more than one.",
        cell=pizza_toppings_cell,
    ),
    Column(
        name="Cost",
        type="number",
        description="The cost of the whole pizza including all toppings.",
        cell=pizza_cost_cell,
    ),
)

TOPPING_COLUMNS: tuple[Column, ...] = (
    Column(
        name="Cost",
        type="number",
        description="The cost of one portion of the topping.",
        cell=topping_cost_cell,
    ),
)

MENU_ITEM_COLUMNS: tuple[Column, ...] = (
    Column(
        name="Price",
        type="number",
        description="The sum of the current cost of each topping times its quantity.",
        cell=menu_item_price_cell,
    ),
    Column(
        name="Available",
        type="boolean",
        description="Whether every topping of the pizza exists.",
        cell=menu_item_available_cell,
    ),
)
