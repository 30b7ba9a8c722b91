"""PizzaToppings: a pizza may only name toppings that exist (the book's admission plugin).

It reads toppings in-process through the topping Store, not through a loopback HTTP client. A topping
is looked up in the watch cache as it stands (resourceVersion "0", what the book's informer lister
gives); only when it is missing there does a consistent read decide, so that a topping created just
before the pizza is never refused, and a create on etcd does not pay a quorum read per topping. (As
with kube's listers, a topping deleted a moment ago may still be seen for as long as the cache lags.)
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
            # read, not get: only existence matters, so the cached bytes need no decoding.
            if not await self._exists(topping.name, "0") and not await self._exists(topping.name, ""):
                raise deny(attrs, f"unknown topping: {topping.name}")

    async def _exists(self, name: str, resource_version: str) -> bool:
        try:
            await self.toppings.read("", name, resource_version=resource_version)
        except StatusError as e:
            if e.code != 404:
                raise
            return False
        return True
