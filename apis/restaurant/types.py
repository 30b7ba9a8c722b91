"""The hub (internal) types of the restaurant group: the one shape every served version converts to.

Admission, validation and the registry only ever see these, so a new version means a new pair of
conversions and nothing else. The hub follows the richest version (v1beta1): a topping appears once with
a quantity, which is what v1alpha1's repeated names mean.

Numbers are kept exactly as decoded (an int stays an int) so that `cost: 2` is written back as `2`, not
`2.0`: a client that applies the same manifest twice must not see a spurious change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GROUP_NAME = "restaurant.programming-kubernetes.info"

Number = float | int


@dataclass(slots=True)
class PizzaTopping:
    # The name of a Topping object.
    name: str
    # How many portions of the topping go onto the pizza.
    quantity: int = 1


@dataclass(slots=True)
class PizzaSpec:
    # Order carries no meaning for the customer, but it is kept so that conversions round-trip.
    toppings: list[PizzaTopping] = field(default_factory=list)


@dataclass(slots=True)
class PizzaStatus:
    # The cost of the whole pizza; None until something (the server, a controller) has computed it.
    cost: Number | None = None


@dataclass(slots=True)
class Pizza:
    metadata: dict[str, Any]
    spec: PizzaSpec = field(default_factory=PizzaSpec)
    status: PizzaStatus = field(default_factory=PizzaStatus)


@dataclass(slots=True)
class ToppingSpec:
    # The cost of one portion of the topping.
    cost: Number


@dataclass(slots=True)
class Topping:
    metadata: dict[str, Any]
    spec: ToppingSpec
