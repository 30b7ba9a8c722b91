"""The restaurant API group as the generic machinery installs it.

v1beta1 comes first: it is the preferred version in discovery and the version objects are stored in
(the book's `SetVersionPriority(v1beta1, v1alpha1)`), since only it can say "two portions" without
relying on repeated names. The kinds themselves are declared in apis/restaurant/types.py.
"""

from __future__ import annotations

from apis.restaurant import v1alpha1, v1beta1
from apis.restaurant.types import GROUP_NAME, MENU_ITEM_KIND, PIZZA_KIND, STORAGE_VERSION, TOPPING_KIND
from apis.runtime.kinds import GroupInfo

__all__ = ["GROUP", "MENU_ITEM_KIND", "PIZZA_KIND", "STORAGE_VERSION", "TOPPING_KIND"]

GROUP = GroupInfo(
    group=GROUP_NAME,
    versions=(v1beta1.VERSION, v1alpha1.VERSION),
    kinds=(TOPPING_KIND, PIZZA_KIND, MENU_ITEM_KIND),
    # Each version's messages next to its schema: apis/restaurant/<version>/generated.proto (+ _pb2).
    protobuf="apis.restaurant",
)
