"""The reconciler: from a pizza and the toppings it names, the status the controller owns.

Owned fields: `cost` (Σ topping cost * quantity; left unset when a named topping is missing: the
PizzaToppings admission refuses such pizzas, so it happens only when a topping is deleted later, and
no price is better than a wrong one), `replicas` (= spec.replicas once `bake_delay` has passed since
the controller first saw that number asked for; a pizza without spec.replicas gets none) and
`observedGeneration` (the generation these were computed from). It writes only when one differs.

A pizza deleted with a grace period is taken out of the oven at once (controller/out_of_oven.py)
instead of being priced or baked any further.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from controller.cost import pizza_cost
from controller.informer import Informer, Obj
from controller.out_of_oven import take_out_of_oven
from controller.status_apply import apply_pizza_status

logger = logging.getLogger(__name__)
OWNED = ("cost", "replicas", "observedGeneration")


@dataclass
class Bakery:
    api: client.ApiClient
    pizzas: Informer  # reads its cache (a relist replaces the dict, so never keep it)
    toppings: Informer  # cache keys are names: toppings are cluster-scoped
    requeue_after: Callable[[str, float], None]
    bake_delay: float = 0.0
    writes: int = 0  # status applies attempted (tests check that an unchanged pizza is not written)
    taken_out: int = 0  # pizzas deleted before their grace period was over
    # key → (replicas being baked, monotonic time baking started)
    _baking: dict[str, tuple[int, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reconcile(self, key: str) -> None:
        pizza = self.pizzas.cache.get(key)
        if pizza is None:
            with self._lock:
                self._baking.pop(key, None)
            return
        meta = pizza["metadata"]
        if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds"):
            # Deleted with a grace period: out of the oven now. Without one (finalizers hold the
            # pizza) there is nothing to shorten, and deleting again would only rewrite the mark.
            with self._lock:
                self._baking.pop(key, None)
            if take_out_of_oven(self.api, meta["namespace"], meta["name"], meta["uid"]):
                with self._lock:
                    self.taken_out += 1
            return
        current = pizza.get("status") or {}
        desired, wait = self.desired_status(key, pizza, current)
        if any(current.get(f) != desired.get(f) for f in OWNED):
            with self._lock:
                self.writes += 1  # counted before the write is visible, so a reader never sees it early
            apply_pizza_status(self.api, meta["namespace"], meta["name"], desired)
        if wait is not None:
            self.requeue_after(key, wait)

    def desired_status(
        self, key: str, pizza: Obj, current: Mapping[str, Any]
    ) -> tuple[dict[str, Any], float | None]:
        """The owned status fields, and in how many seconds to look again (a bake in progress)."""
        desired: dict[str, Any] = {}
        costs = {name: (t.get("spec") or {}).get("cost") for name, t in list(self.toppings.cache.items())}
        cost = pizza_cost(pizza, costs)
        if cost is None:
            logger.info("pizza %s names a topping that does not exist: no cost", key)
        else:
            desired["cost"] = cost
        generation = (pizza.get("metadata") or {}).get("generation")
        if generation is not None:
            desired["observedGeneration"] = generation
        replicas, wait = self._baked(key, (pizza.get("spec") or {}).get("replicas"), current.get("replicas"))
        if replicas is not None:
            desired["replicas"] = replicas
        return desired, wait

    def _baked(self, key: str, wanted: Any, baked: Any) -> tuple[Any, float | None]:
        """status.replicas now, and the seconds left of the bake (None: nothing is baking)."""
        with self._lock:
            if not isinstance(wanted, int) or wanted == baked:
                self._baking.pop(key, None)
                return (baked if isinstance(wanted, int) else None), None
            target, started = self._baking.get(key, (wanted, time.monotonic()))
            if target != wanted:  # asked for another number mid-bake: that bake starts over
                started = time.monotonic()
            left = self.bake_delay - (time.monotonic() - started)
            if left <= 0:
                self._baking.pop(key, None)
                return wanted, None
            self._baking[key] = (wanted, started)
            # Until baked, keep the number already baked (applying without it would remove it).
            return baked, left
