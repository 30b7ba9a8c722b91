"""Bill: what a pizza costs now, line by line (GET pizzas/{name}/bill).

A Bill is never stored: registry/restaurant/pizza/bill.py computes it per request from the toppings'
current prices. Its schema is declared here, with the group's kinds, so that OpenAPI describes it and
`kubectl explain`-style clients can read it, the same for every served version (the answer's apiVersion
is the URL's). Numbers stay as the toppings hold them: an int cost times an int quantity is an int.
"""

from __future__ import annotations

from typing import Any

from apis.meta.schemas import object_schema
from apis.runtime.kinds import Column

BILL_KIND = "Bill"

BILL_SCHEMA: dict[str, Any] = object_schema(
    "Bill is what a pizza costs at the toppings' current prices, computed when it is read. "
    "Its metadata names the pizza.",
    {
        "lines": {
            "type": "array",
            "description": "lines is one line per topping of the pizza, in the pizza's order.",
            "items": {
                "type": "object",
                "description": "BillLine is the cost of the portions of one topping.",
                "required": ["topping", "quantity"],
                "properties": {
                    "topping": {"type": "string", "description": "topping is the name of the Topping."},
                    "quantity": {
                        "type": "integer",
                        "description": "quantity is the number of portions on the pizza.",
                    },
                    "unitCost": {
                        "type": "number",
                        "description": "unitCost is the topping's current spec.cost; absent when the "
                        "topping no longer exists.",
                    },
                    "cost": {
                        "type": "number",
                        "description": "cost is unitCost times quantity; absent when the topping no "
                        "longer exists.",
                    },
                },
            },
        },
        "total": {
            "type": "number",
            "description": "total is the sum of the lines' costs (of the toppings that exist).",
        },
        "complete": {
            "type": "boolean",
            "description": "complete is false when a topping of the pizza no longer exists, so the total "
            "leaves it out.",
        },
    },
    required=["lines", "total", "complete"],
)


def _lines_cell(bill: dict[str, Any]) -> int:
    return len(bill.get("lines") or ())


def _total_cell(bill: dict[str, Any]) -> Any:
    return bill.get("total")


BILL_COLUMNS: tuple[Column, ...] = (
    Column(
        name="Lines",
        type="integer",
        description="The number of lines (toppings) of the bill.",
        cell=_lines_cell,
    ),
    Column(
        name="Total",
        type="number",
        description="The total at the toppings' current prices.",
        cell=_total_cell,
    ),
)
