"""A controller in a background thread of the test, against a real server over HTTPS."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubernetes import client

from controller.connection import api_client
from controller.controller import PizzaController
from controller.status_apply import GROUP

CONVERGE_TIMEOUT = 60.0  # a loaded machine: generous, and only an upper bound on waiting


@contextlib.contextmanager
def running_controller(kubeconfig: Path, **options: Any) -> Iterator[PizzaController]:
    api = api_client(kubeconfig)
    controller = PizzaController(api, **options)
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield controller
    finally:
        stop.set()
        thread.join(CONVERGE_TIMEOUT)
        api.close()
        assert not thread.is_alive(), "the controller did not stop"


def eventually(check: Callable[[], Any], what: str) -> Any:
    """Poll until `check()` is truthy (the controller is eventually consistent); its value."""
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.1)


class Restaurant:
    """Writes toppings and pizzas in v1beta1 through the kubernetes package, as a user would."""

    def __init__(self, kubeconfig: Path) -> None:
        self.api = api_client(kubeconfig)
        self.objects = client.CustomObjectsApi(self.api)

    def close(self) -> None:
        self.api.close()

    def topping(self, name: str, cost: float) -> None:
        body = {"apiVersion": f"{GROUP}/v1beta1", "kind": "Topping", "metadata": {"name": name}}
        self.objects.create_cluster_custom_object(
            GROUP, "v1beta1", "toppings", {**body, "spec": {"cost": cost}}
        )

    def set_cost(self, name: str, cost: float) -> None:
        self.objects.patch_cluster_custom_object(GROUP, "v1beta1", "toppings", name, {"spec": {"cost": cost}})

    def delete_topping(self, name: str) -> None:
        self.objects.delete_cluster_custom_object(GROUP, "v1beta1", "toppings", name)

    def pizza(self, name: str, toppings: dict[str, int], namespace: str = "default") -> None:
        body = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Pizza",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"toppings": [{"name": n, "quantity": q} for n, q in toppings.items()]},
        }
        self.objects.create_namespaced_custom_object(GROUP, "v1beta1", namespace, "pizzas", body)

    def set_toppings(self, name: str, toppings: dict[str, int], namespace: str = "default") -> None:
        patch = {"spec": {"toppings": [{"name": n, "quantity": q} for n, q in toppings.items()]}}
        self.objects.patch_namespaced_custom_object(GROUP, "v1beta1", namespace, "pizzas", name, patch)

    def delete_pizza(self, name: str, grace_period_seconds: int, namespace: str = "default") -> Any:
        """A graceful delete through the client's own parameter; the server answers the marked pizza."""
        return self.objects.delete_namespaced_custom_object(
            GROUP, "v1beta1", namespace, "pizzas", name, grace_period_seconds=grace_period_seconds
        )

    def get(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.objects.get_namespaced_custom_object(GROUP, "v1beta1", namespace, "pizzas", name)  # type: ignore[return-value]

    def status(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.get(name, namespace).get("status") or {}
