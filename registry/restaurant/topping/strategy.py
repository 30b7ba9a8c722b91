"""Toppings: cluster-scoped, spec only (no status), validated on the hub."""

from __future__ import annotations

from apis.restaurant.validation import validate_topping, validate_topping_update
from registry.generic.strategy import SpecStatusStrategy

STRATEGY = SpecStatusStrategy(
    namespaced=False,
    validate_fn=validate_topping,
    validate_update_fn=validate_topping_update,
    has_status=False,
)
