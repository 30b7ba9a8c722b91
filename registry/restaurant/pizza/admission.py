"""PizzaToppings: a pizza may only name toppings that exist (the book's admission plugin).

It reads toppings in-process through the topping Store, not through a loopback HTTP client: the same
consistent storage read every other request gets, without a second trip through the handler chain.
"""

from __future__ import annotations

from dataclasses import dataclass

from apis.meta.errors import StatusError
from apis.restaurant.types import GROUP_NAME
from registry.generic.admission import Attributes, Operation, deny
from registry.generic.store import Store


@dataclass(frozen=True)
class PizzaToppings:
    toppings: Store
    name: str = "PizzaToppings"

    def handles(self, operation: Operation) -> bool:
        return operation in (Operation.CREATE, Operation.UPDATE)

    async def validate(self, attrs: Attributes) -> None:
        if attrs.group != GROUP_NAME or attrs.resource != "pizzas" or attrs.subresource:
            return
        for topping in attrs.object.spec.toppings:
            try:
                # read, not get: only existence matters, so the cached bytes need no decoding.
                await self.toppings.read("", topping.name)
            except StatusError as e:
                if e.code != 404:
                    raise
                raise deny(attrs, f"unknown topping: {topping.name}") from None
