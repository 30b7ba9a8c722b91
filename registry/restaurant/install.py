"""Installs the restaurant group: a Store per stored kind, the menu computed from them, the /status
strategy, the pizzas' bill (a getter) and oven (a streaming connecter), the PizzaToppings plugin, and
the pizzas' order numbers allocated at create from the range `--order-numbers` sets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apis.restaurant.install import GROUP, MENU_ITEM_KIND, PIZZA_KIND, TOPPING_KIND
from apis.runtime.codec import Codec
from registry.generic.allocation import Allocation, NumberRange
from registry.generic.group_flags import GroupFlag, InstallerWithFlags
from registry.generic.installation import GroupInstallation
from registry.generic.keys import allocation_prefix
from registry.generic.store import Store
from registry.restaurant.menu import menu_items
from registry.restaurant.pizza import strategy as pizza
from registry.restaurant.pizza.admission import PizzaToppings
from registry.restaurant.pizza.bill import Bill
from registry.restaurant.pizza.oven import Oven
from registry.restaurant.topping import strategy as topping
from storage.interface import Interface

ORDER_NUMBER_FIELD = ".spec.orderNumber"
ORDER_NUMBERS = GroupFlag(
    "order-numbers",
    "1-999999",
    "The range pizzas' spec.orderNumber is allocated from, FIRST-LAST (each pizza gets a number no "
    "other pizza holds).",
    NumberRange.parse,
    metavar="range",
)


def _install(storage: Interface, flags: Mapping[str, Any]) -> GroupInstallation:
    toppings = Store(Codec(GROUP.group, TOPPING_KIND), topping.STRATEGY, storage)
    order_numbers = Allocation(
        ORDER_NUMBER_FIELD,
        flags[ORDER_NUMBERS.name],
        allocation_prefix(GROUP.group, PIZZA_KIND.resource, ORDER_NUMBER_FIELD),
        noun="order number",
    )
    pizzas = Store(Codec(GROUP.group, PIZZA_KIND), pizza.STRATEGY, storage, allocation=order_numbers)
    return GroupInstallation(
        group=GROUP,
        stores={TOPPING_KIND.resource: toppings, PIZZA_KIND.resource: pizzas},
        subresources={PIZZA_KIND.resource: {"status": pizza.STATUS_STRATEGY}},
        custom_subresources={PIZZA_KIND.resource: {"bill": Bill(pizzas, toppings), "oven": Oven(pizzas)}},
        validating=(PizzaToppings(toppings),),
        resources={MENU_ITEM_KIND.resource: menu_items()},
    )


install = InstallerWithFlags(flags=(ORDER_NUMBERS,), install=_install)
