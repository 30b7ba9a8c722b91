"""Pizzas: namespaced; users own spec, status changes only through /status; deleted gracefully as
pods are (a DELETE with gracePeriodSeconds N leaves the pizza N seconds in the oven), at once when no
period is asked for."""

from __future__ import annotations

from apis.restaurant.types import PizzaStatus
from apis.restaurant.validation import validate_pizza, validate_pizza_status_update, validate_pizza_update
from registry.generic.graceful_deletion import GracefulDeletion
from registry.generic.strategy import SpecStatusStrategy, StatusStrategy

STRATEGY = SpecStatusStrategy(
    namespaced=True,
    validate_fn=validate_pizza,
    validate_update_fn=validate_pizza_update,
    empty_status=PizzaStatus,
    graceful_deletion=GracefulDeletion(default_seconds=0),
)

STATUS_STRATEGY = StatusStrategy(main=STRATEGY, validate_status_fn=validate_pizza_status_update)
