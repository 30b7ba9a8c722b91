"""Pizzas: namespaced; users own spec, status changes only through /status."""

from __future__ import annotations

from apis.restaurant.types import PizzaStatus
from apis.restaurant.validation import validate_pizza, validate_pizza_status_update, validate_pizza_update
from registry.generic.strategy import SpecStatusStrategy, StatusStrategy

STRATEGY = SpecStatusStrategy(
    namespaced=True,
    validate_fn=validate_pizza,
    validate_update_fn=validate_pizza_update,
    empty_status=PizzaStatus,
)

STATUS_STRATEGY = StatusStrategy(main=STRATEGY, validate_status_fn=validate_pizza_status_update)
