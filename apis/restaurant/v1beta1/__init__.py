"""restaurant.programming-kubernetes.info/v1beta1: toppings with quantities; the storage version."""

from __future__ import annotations

from apis.restaurant.conversion_common import topping_from_hub, topping_to_hub
from apis.restaurant.v1beta1.conversion import pizza_from_hub, pizza_to_hub
from apis.restaurant.v1beta1.schema import PIZZA_SCHEMA, TOPPING_SCHEMA
from apis.runtime.kinds import VersionedKind

VERSION = "v1beta1"

TOPPING = VersionedKind(
    version=VERSION, schema=TOPPING_SCHEMA, to_hub=topping_to_hub, from_hub=topping_from_hub
)
PIZZA = VersionedKind(version=VERSION, schema=PIZZA_SCHEMA, to_hub=pizza_to_hub, from_hub=pizza_from_hub)

__all__ = ["PIZZA", "TOPPING", "VERSION"]
