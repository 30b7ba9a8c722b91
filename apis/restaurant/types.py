"""The restaurant kinds, declared once: hub types generated from v1beta1's schemas.

The hub follows the richest version (v1beta1): a topping appears once with a quantity, which is what
v1alpha1's repeated names mean. v1beta1 has the hub's shape, so it converts automatically; v1alpha1
only writes how its toppings differ (apis/restaurant/v1alpha1/conversion.py). Admission, validation
and the registry only ever see these types, so a new version means a schema and, where its shape
differs, a pair of JSON translations.

Numbers are kept exactly as decoded (an int stays an int) so that `cost: 2` is written back as `2`, not
`2.0`: a client that applies the same manifest twice must not see a spurious change. A whole float in
an integer field (`quantity: 2.0`, valid for the schema) becomes an int.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from apis.restaurant import v1alpha1, v1beta1
from apis.restaurant.tables import MENU_ITEM_COLUMNS, PIZZA_COLUMNS, TOPPING_COLUMNS
from apis.runtime.declare import declare_kind
from apis.runtime.hub_shape import nested_class
from apis.runtime.kinds import READ_VERBS
from apis.runtime.scale import ScaleSubresource

GROUP_NAME = "restaurant.programming-kubernetes.info"
# v1beta1 is the version objects are stored in (the book's SetVersionPriority(v1beta1, v1alpha1)).
STORAGE_VERSION = v1beta1.VERSION

# The book's API has neither short names nor categories; adding a category such as "all" would make
# `kubectl get all` list pizzas, which it does not do for the original server.
TOPPING_KIND, _topping = declare_kind(
    "Topping",
    hub_version=v1beta1.VERSION,
    versions={v1beta1.VERSION: v1beta1.TOPPING, v1alpha1.VERSION: v1alpha1.TOPPING},
    storage_version=STORAGE_VERSION,
    namespaced=False,
    module=__name__,
    columns=TOPPING_COLUMNS,
)
PIZZA_KIND, _pizza = declare_kind(
    "Pizza",
    hub_version=v1beta1.VERSION,
    versions={v1beta1.VERSION: v1beta1.PIZZA, v1alpha1.VERSION: v1alpha1.PIZZA},
    storage_version=STORAGE_VERSION,
    namespaced=True,
    module=__name__,
    names={"spec.toppings": "PizzaTopping"},
    columns=PIZZA_COLUMNS,
    subresources=("status",),
    # kubectl scale / an HPA set spec.replicas; a controller reports the baked ones in status.
    scale=ScaleSubresource(spec_replicas_path=".spec.replicas", status_replicas_path=".status.replicas"),
)
# One per pizza, computed by the server and never stored (registry/restaurant/menu.py): it serves reads
# only. v1beta1 is its storage version only in name: the form its objects are kept in, in memory.
MENU_ITEM_KIND, _menu_item = declare_kind(
    "MenuItem",
    hub_version=v1beta1.VERSION,
    versions={v1beta1.VERSION: v1beta1.MENU_ITEM, v1alpha1.VERSION: v1alpha1.MENU_ITEM},
    storage_version=STORAGE_VERSION,
    namespaced=True,
    module=__name__,
    names={"toppings": "MenuItemTopping"},
    columns=MENU_ITEM_COLUMNS,
    verbs=READ_VERBS,
    stored=False,
)

if TYPE_CHECKING:
    # The classes are generated from the schema at import time, so a type checker cannot see their
    # fields: the group's own code is checked with them as Any, while the generic machinery relies only
    # on the HubObject protocol (apis/runtime/kinds.py), which mypy checks.
    Topping: TypeAlias = Any
    Pizza: TypeAlias = Any
    ToppingSpec: TypeAlias = Any
    PizzaSpec: TypeAlias = Any
    PizzaStatus: TypeAlias = Any
    PizzaTopping: TypeAlias = Any
    MenuItem: TypeAlias = Any
else:
    Topping, Pizza, MenuItem = _topping, _pizza, _menu_item
    ToppingSpec = nested_class(Topping, "spec")
    PizzaSpec = nested_class(Pizza, "spec")
    PizzaStatus = nested_class(Pizza, "status")
    PizzaTopping = nested_class(Pizza, "spec.toppings")
