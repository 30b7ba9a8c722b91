"""Structural schemas of restaurant.programming-kubernetes.info/v1beta1, with declarative defaults.

v1beta1 replaces v1alpha1's repeated topping names by one entry per topping with a quantity. Its
defaults mean the same pizza as v1alpha1's (the versioning guide asks every version to default a field
that any version defaults, and to the same meaning, so that conversion never invents or loses data).
"""

from __future__ import annotations

from typing import Any

from apis.meta.schemas import object_schema
from apis.restaurant.rules import COST_MAY_AT_MOST_DOUBLE, PORTIONS_MESSAGE
from apis.restaurant.validation import MAX_QUANTITY, MAX_REPLICAS, MAX_TOPPINGS

DEFAULT_QUANTITY = 1
DEFAULT_TOPPINGS: tuple[tuple[str, int], ...] = (("salami", 1), ("mozzarella", 1), ("tomato", 1))

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
                {
                    "rule": "!has(self.toppings) || self.toppings.map(t, t.quantity).sum() <= 30",
                    "message": PORTIONS_MESSAGE,
                }
            ],
            # An empty object as default lets the toppings default below apply when spec is omitted
            # altogether: defaulting runs top-down (KEP-575).
            "default": {},
            "properties": {
                "toppings": {
                    "type": "array",
                    "description": (
                        "toppings is the list of toppings put onto the pizza, each named at most once; "
                        "the order does not matter. Defaults to one portion each of salami, mozzarella "
                        f"and tomato. At most {MAX_TOPPINGS} toppings."
                    ),
                    "items": {
                        "type": "object",
                        "description": "PizzaTopping is a topping with the number of its portions.",
                        "required": ["name"],
                        "properties": {
                            "name": {
                                "type": "string",
                                "description": "name is the name of a Topping object.",
                            },
                            "quantity": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": MAX_QUANTITY,
                                "default": DEFAULT_QUANTITY,
                                "description": (
                                    "quantity is how many portions of the topping are put onto the pizza. "
                                    f"Defaults to 1; at most {MAX_QUANTITY}."
                                ),
                            },
                        },
                    },
                    # Entries are identified by name: patches and server-side apply merge them by name
                    # (a client can change one topping's quantity without restating the others), and
                    # a name may appear only once.
                    "maxItems": MAX_TOPPINGS,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge",
                    "default": [{"name": name, "quantity": quantity} for name, quantity in DEFAULT_TOPPINGS],
                },
                # No default: a pizza nobody asked to bake in numbers has none (and /scale says so).
                "replicas": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_REPLICAS,
                    "description": (
                        "replicas is how many of this pizza to bake; the scale subresource "
                        f"(kubectl scale) sets it. At most {MAX_REPLICAS}."
                    ),
                },
                # No default: the server allocates it on create (registry/restaurant/install.py).
                "orderNumber": {
                    "type": "integer",
                    "minimum": 1,
                    "description": (
                        "orderNumber identifies the pizza's order, unique among all pizzas. The server "
                        "allocates a free one from its range (--order-numbers) when a create names "
                        "none; a create may ask for one that is free. It cannot change afterwards."
                    ),
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
                "replicas": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "replicas is how many of this pizza are baked.",
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

# A MenuItem is computed by the server from a Pizza and the Toppings' current costs; nothing of it is
# stored, and it cannot be written (registry/restaurant/menu.py).
MENU_ITEM_SCHEMA: dict[str, Any] = object_schema(
    "MenuItem is a pizza as the menu shows it: its toppings, its price from the toppings' current "
    "costs, and whether every topping is available. The server computes one for every Pizza, with "
    "the pizza's name, namespace and labels; menu items are read-only.",
    {
        "toppings": {
            "type": "array",
            "description": "toppings are the pizza's toppings with their number of portions.",
            "items": {
                "type": "object",
                "description": "MenuItemTopping is a topping of the pizza with its number of portions.",
                "required": ["name", "quantity"],
                "properties": {
                    "name": {"type": "string", "description": "name is the name of a Topping object."},
                    "quantity": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "quantity is how many portions of the topping are on the pizza.",
                    },
                },
            },
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        "price": {
            "type": "number",
            "minimum": 0,
            "description": (
                "price is the sum of the current cost of each topping times its quantity "
                "(toppings that do not exist count nothing)."
            ),
        },
        "available": {
            "type": "boolean",
            "description": "available is true when every topping of the pizza exists.",
        },
    },
    required=["price", "available"],
)
