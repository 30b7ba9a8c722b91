"""restaurant.programming-kubernetes.info/v1alpha1: the first version, toppings as a list of names.

Only a Pizza's toppings differ from the hub's shape (conversion.py); the rest converts by itself.
"""

from __future__ import annotations

from apis.restaurant.v1alpha1.conversion import pizza_down, pizza_up
from apis.restaurant.v1alpha1.schema import MENU_ITEM_SCHEMA, PIZZA_SCHEMA, TOPPING_SCHEMA
from apis.runtime.declare import Version

VERSION = "v1alpha1"

TOPPING = Version(TOPPING_SCHEMA)
PIZZA = Version(PIZZA_SCHEMA, up=pizza_up, down=pizza_down)
MENU_ITEM = Version(MENU_ITEM_SCHEMA)

__all__ = ["MENU_ITEM", "PIZZA", "TOPPING", "VERSION"]
