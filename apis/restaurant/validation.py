"""Validation of restaurant objects on the hub, whatever version they arrived in.

The versioned schemas already reject wrong types and out-of-range numbers on the way in; these checks
are the ones a schema cannot express (unique topping names after v1alpha1 duplicates were collapsed),
and they hold the hub to its invariants even when an object reached it by another path (mutating
admission, a status update). Only spec and status are checked: metadata is validated generically.

Field paths are given in the v1beta1 (hub) shape, e.g. `spec.toppings[1].name`, as kube-apiserver
reports internal-version paths whatever version the client used.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from apis.meta import field
from apis.meta.field import FieldError, Path

if TYPE_CHECKING:  # the types are generated in types.py, which imports this module
    from apis.restaurant.types import Pizza, PizzaSpec, PizzaStatus, Topping, ToppingSpec

# apimachinery's IsNegativeErrorMsg, so clients see the same words as for built-in kinds.
_NEGATIVE = "must be greater than or equal to 0"

# v1alpha1 writes a quantity as that many repeated names: without bounds, one small v1beta1 request
# (`quantity: 1e12`) would make every later v1alpha1 read build an unbounded list. With these, the
# v1alpha1 form stays under the 3 MiB request limit (10 000 names of at most 253 characters), so a
# v1alpha1 client can always write back what it read. The versioned schemas publish the same bounds.
MAX_TOPPINGS = 100
MAX_QUANTITY = 100
# How many of one pizza may be ordered (spec.replicas, the scale subresource's replicas).
MAX_REPLICAS = 100


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _validate_cost(value: Any, path: Path) -> list[FieldError]:
    if not _is_number(value):
        return [field.invalid(path, value, "must be a number")]
    if not math.isfinite(value):
        return [field.invalid(path, value, "must be a finite number")]
    if value < 0:
        return [field.invalid(path, value, _NEGATIVE)]
    return []


def validate_pizza_spec(spec: PizzaSpec, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    toppings = path.child("toppings")
    if len(spec.toppings) > MAX_TOPPINGS:
        errors.append(field.too_many(toppings, len(spec.toppings), MAX_TOPPINGS))
    for i, topping in enumerate(spec.toppings):
        item = toppings.index(i)
        if not topping.name:
            errors.append(field.required(item.child("name"), ""))
        elif topping.name in seen:
            errors.append(field.duplicate(item.child("name"), topping.name))
        else:
            seen.add(topping.name)
        quantity = topping.quantity
        if not isinstance(quantity, int) or isinstance(quantity, bool):
            errors.append(field.invalid(item.child("quantity"), quantity, "must be an integer"))
        elif quantity < 1:
            errors.append(
                field.invalid(item.child("quantity"), quantity, "must be greater than or equal to 1")
            )
        elif quantity > MAX_QUANTITY:
            errors.append(
                field.invalid(
                    item.child("quantity"), quantity, f"must be less than or equal to {MAX_QUANTITY}"
                )
            )
    return errors + _validate_replicas(spec.replicas, path.child("replicas"), MAX_REPLICAS)


def _validate_replicas(value: Any, path: Path, maximum: int | None) -> list[FieldError]:
    """The v1beta1 schema's bounds, in its words, checked on the hub: a v1alpha1 write carries
    replicas in an annotation the v1alpha1 schema does not look into, and /scale sets them directly."""
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool):
        return [field.invalid(path, value, "must be an integer")]
    if value < 0:
        return [field.invalid(path, value, f"{path} in body should be greater than or equal to 0")]
    if maximum is not None and value > maximum:
        return [field.invalid(path, value, f"{path} in body should be less than or equal to {maximum}")]
    return []


def validate_pizza_status(status: PizzaStatus, path: Path) -> list[FieldError]:
    errors = _validate_replicas(status.replicas, path.child("replicas"), None)
    if status.cost is None:
        return errors
    return _validate_cost(status.cost, path.child("cost")) + errors


def validate_pizza(pizza: Pizza) -> list[FieldError]:
    return validate_pizza_spec(pizza.spec, Path("spec")) + validate_pizza_status(pizza.status, Path("status"))


def validate_pizza_update(new: Pizza, old: Pizza) -> list[FieldError]:
    # Every field may change; an update must simply leave a valid pizza behind.
    return validate_pizza(new)


def validate_pizza_status_update(new: Pizza, old: Pizza) -> list[FieldError]:
    """For the /status subresource, where only status can have changed."""
    return validate_pizza_status(new.status, Path("status"))


def validate_topping_spec(spec: ToppingSpec, path: Path) -> list[FieldError]:
    return _validate_cost(spec.cost, path.child("cost"))


def validate_topping(topping: Topping) -> list[FieldError]:
    return validate_topping_spec(topping.spec, Path("spec"))


def validate_topping_update(new: Topping, old: Topping) -> list[FieldError]:
    # A topping's cost may change at any time; pizzas pick the new cost up when they are re-priced.
    return validate_topping(new)
