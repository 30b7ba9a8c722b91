"""The restaurant API group as the generic machinery installs it.

v1beta1 comes first: it is the preferred version in discovery and the version objects are stored in
(the book's `SetVersionPriority(v1beta1, v1alpha1)`), since only it can say "two portions" without
relying on repeated names.
"""

from __future__ import annotations

from apis.restaurant import v1alpha1, v1beta1
from apis.restaurant.tables import PIZZA_COLUMNS, TOPPING_COLUMNS
from apis.restaurant.types import GROUP_NAME
from apis.runtime.kinds import GroupInfo, KindInfo

STORAGE_VERSION = v1beta1.VERSION

# The book's API has neither short names nor categories; adding a category such as "all" would make
# `kubectl get all` list pizzas, which it does not do for the original server.
TOPPING_KIND = KindInfo(
    kind="Topping",
    list_kind="ToppingList",
    resource="toppings",
    singular="topping",
    namespaced=False,
    versions={v1beta1.VERSION: v1beta1.TOPPING, v1alpha1.VERSION: v1alpha1.TOPPING},
    storage_version=STORAGE_VERSION,
    columns=TOPPING_COLUMNS,
)

PIZZA_KIND = KindInfo(
    kind="Pizza",
    list_kind="PizzaList",
    resource="pizzas",
    singular="pizza",
    namespaced=True,
    versions={v1beta1.VERSION: v1beta1.PIZZA, v1alpha1.VERSION: v1alpha1.PIZZA},
    storage_version=STORAGE_VERSION,
    columns=PIZZA_COLUMNS,
    subresources=("status",),
)

GROUP = GroupInfo(
    group=GROUP_NAME,
    versions=(v1beta1.VERSION, v1alpha1.VERSION),
    kinds=(TOPPING_KIND, PIZZA_KIND),
)
