"""The bakery controller: two informers feed one work queue, workers reconcile pizzas.

Pizza events enqueue the pizza; Topping events enqueue every pizza that names the topping (the
ToppingIndex kept from pizza events). Workers retry a failed key with the queue's exponential backoff
up to `max_retries`, then drop it until its next event (client-go's sample-controller pattern).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from kubernetes import client

from controller.bakery import Bakery
from controller.cost import ToppingIndex, topping_names
from controller.informer import Informer, Obj, object_key
from controller.status_apply import GROUP, VERSION
from controller.workqueue import ShutDown, WorkQueue

logger = logging.getLogger(__name__)
MAX_RETRIES = 15
SYNC_TIMEOUT = 60.0


@dataclass
class PizzaController:
    api: client.ApiClient
    bake_delay: float = 0.0
    workers: int = 2
    watch_timeout: float = 300.0
    queue: WorkQueue[str] = field(default_factory=WorkQueue)
    index: ToppingIndex = field(default_factory=ToppingIndex)
    pizzas: Informer = field(init=False)
    toppings: Informer = field(init=False)
    bakery: Bakery = field(init=False)

    def __post_init__(self) -> None:
        self.pizzas = Informer(self.api, GROUP, VERSION, "pizzas", self._on_pizza, self.watch_timeout)
        self.toppings = Informer(self.api, GROUP, VERSION, "toppings", self._on_topping, self.watch_timeout)
        self.bakery = Bakery(self.api, self.pizzas, self.toppings, self.queue.add_after, self.bake_delay)

    def _on_pizza(self, kind: str, pizza: Obj, previous: Obj | None) -> None:
        key = object_key(pizza)
        self.index.update(key, None if kind == "DELETED" else topping_names(pizza))
        self.queue.add(key)

    def _on_topping(self, kind: str, topping: Obj, previous: Obj | None) -> None:
        for key in self.index.pizzas_naming(topping["metadata"]["name"]):
            self.queue.add(key)

    def run(self, stop: threading.Event) -> None:
        """Informers and workers until `stop` is set; then the queue drains and everything joins."""
        informers = [
            threading.Thread(target=i.run, name=f"informer-{i.plural}", daemon=True)
            for i in (self.toppings, self.pizzas)
        ]
        for thread in informers:
            thread.start()
        # Reconciling before the toppings are known would price pizzas as "missing topping".
        for informer in (self.toppings, self.pizzas):
            while not informer.synced.wait(1.0):
                if stop.is_set():
                    break
        workers = [
            threading.Thread(target=self._work, name=f"worker-{n}", daemon=True) for n in range(self.workers)
        ]
        for thread in workers:
            thread.start()
        logger.info("pizza-controller running with %d workers", self.workers)
        stop.wait()
        logger.info("pizza-controller stopping")
        for informer in (self.pizzas, self.toppings):
            informer.stop()
        self.queue.shut_down()
        for thread in workers + informers:
            thread.join(timeout=SYNC_TIMEOUT)

    def _work(self) -> None:
        while True:
            try:
                key = self.queue.get()
            except ShutDown:
                return
            try:
                self.bakery.reconcile(key)
                self.queue.forget(key)
            except Exception as err:
                if self.queue.num_requeues(key) < MAX_RETRIES:
                    delay = self.queue.add_rate_limited(key)
                    logger.warning("reconciling %s failed (%s); retry in %.3fs", key, err, delay)
                else:
                    self.queue.forget(key)
                    logger.error("dropping %s after %d retries: %s", key, MAX_RETRIES, err)
            finally:
                self.queue.done(key)
