"""restaurant.programming-kubernetes.info/v1beta1: toppings with quantities; the storage version.

It has the hub's shape, so its conversion is the generated one (apis/runtime/declare.py).
"""

from __future__ import annotations

from apis.restaurant.v1beta1.schema import MENU_ITEM_SCHEMA, PIZZA_SCHEMA, TOPPING_SCHEMA
from apis.runtime.declare import Version

VERSION = "v1beta1"

TOPPING = Version(TOPPING_SCHEMA)
PIZZA = Version(PIZZA_SCHEMA)
MENU_ITEM = Version(MENU_ITEM_SCHEMA)

__all__ = ["MENU_ITEM", "PIZZA", "TOPPING", "VERSION"]
