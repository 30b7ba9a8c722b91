"""Installs the restaurant group: a Store per stored kind, the menu computed from them, the /status
strategy, the pizzas' bill (a getter) and oven (a streaming connecter), the PizzaToppings plugin."""

from __future__ import annotations

from apis.restaurant.install import GROUP, MENU_ITEM_KIND, PIZZA_KIND, TOPPING_KIND
from apis.runtime.codec import Codec
from registry.generic.installation import GroupInstallation
from registry.generic.store import Store
from registry.restaurant.menu import menu_items
from registry.restaurant.pizza import strategy as pizza
from registry.restaurant.pizza.admission import PizzaToppings
from registry.restaurant.pizza.bill import Bill
from registry.restaurant.pizza.oven import Oven
from registry.restaurant.topping import strategy as topping
from storage.interface import Interface


def install(storage: Interface) -> GroupInstallation:
    toppings = Store(Codec(GROUP.group, TOPPING_KIND), topping.STRATEGY, storage)
    pizzas = Store(Codec(GROUP.group, PIZZA_KIND), pizza.STRATEGY, storage)
    return GroupInstallation(
        group=GROUP,
        stores={TOPPING_KIND.resource: toppings, PIZZA_KIND.resource: pizzas},
        subresources={PIZZA_KIND.resource: {"status": pizza.STATUS_STRATEGY}},
        custom_subresources={PIZZA_KIND.resource: {"bill": Bill(pizzas, toppings), "oven": Oven(pizzas)}},
        validating=(PizzaToppings(toppings),),
        resources={MENU_ITEM_KIND.resource: menu_items()},
    )
