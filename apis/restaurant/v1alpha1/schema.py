"""Structural schemas of restaurant.programming-kubernetes.info/v1alpha1, with declarative defaults.

These drive pruning, defaulting, validation and the published OpenAPI (and thus `kubectl explain`), so
descriptions are written for users. Defaults live here rather than in conversion code so that they are
applied on request decode, after mutating admission and on read from storage alike (KEP-575), and so
that they are documented.
"""

from __future__ import annotations

import copy
from typing import Any

from apis.meta.schemas import object_schema
from apis.restaurant.rules import COST_MAY_AT_MOST_DOUBLE, PORTIONS_MESSAGE
from apis.restaurant.v1beta1 import schema as v1beta1_schema
from apis.restaurant.validation import MAX_QUANTITY, MAX_TOPPINGS

DEFAULT_TOPPINGS: tuple[str, ...] = ("salami", "mozzarella", "tomato")

TOPPING_SCHEMA: dict[str, Any] = object_schema(
    "Topping is a topping that can be put onto a pizza, e.g. salami, mozzarella or tomato. "
    "Toppings are cluster-wide; a Pizza may only name toppings that exist.",
    {
        "spec": {
            "type": "object",
            "description": "ToppingSpec is the specification of a topping.",
            "required": ["cost"],
            "properties": {
                "cost": {
                    "type": "number",
                    "minimum": 0,
                    "description": (
                        "cost is the cost of one portion of this topping. "
                        "An update may at most double it (rule: self <= oldSelf * 2.0)."
                    ),
                    "x-kubernetes-validations": [COST_MAY_AT_MOST_DOUBLE],
                },
            },
        },
    },
    required=["spec"],
)

PIZZA_SCHEMA: dict[str, Any] = object_schema(
    "Pizza specifies a pizza offered by the restaurant and the toppings put onto it.",
    {
        "spec": {
            "type": "object",
            "description": f"PizzaSpec is the specification of a pizza. Rule: {PORTIONS_MESSAGE}.",
            "x-kubernetes-validations": [
                {"rule": "!has(self.toppings) || self.toppings.size() <= 30", "message": PORTIONS_MESSAGE}
            ],
            # An empty object as default lets the toppings default below apply when spec is omitted
            # altogether: defaulting runs top-down (KEP-575).
            "default": {},
            "properties": {
                "toppings": {
                    "type": "array",
                    "description": (
                        "toppings is a list of Topping names. A name may appear more than once to put "
                        "more portions of that topping onto the pizza (e.g. extra cheese); the order "
                        "does not matter. Defaults to salami, mozzarella and tomato. At most "
                        f"{MAX_TOPPINGS} different toppings, {MAX_QUANTITY} portions of each."
                    ),
                    "items": {"type": "string"},
                    # A name per portion: as many as v1beta1's bounds allow in all.
                    "maxItems": MAX_TOPPINGS * MAX_QUANTITY,
                    # Repeated names carry meaning, so the list can be neither a set nor a map: it is
                    # replaced as a whole by patches and server-side apply.
                    "x-kubernetes-list-type": "atomic",
                    "default": list(DEFAULT_TOPPINGS),
                },
            },
        },
        "status": {
            "type": "object",
            "description": "PizzaStatus is the observed state of a pizza.",
            "properties": {
                "cost": {
                    "type": "number",
                    "minimum": 0,
                    "description": "cost is the cost of the whole pizza including all toppings.",
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "observedGeneration is the metadata.generation this status was made from.",
                },
            },
        },
    },
)

# The menu was added after both versions existed and has one shape in both: v1alpha1's toppings as
# repeated names are a pizza's, not a menu item's.
MENU_ITEM_SCHEMA: dict[str, Any] = copy.deepcopy(v1beta1_schema.MENU_ITEM_SCHEMA)
