"""The reconciler's desired status, without a server: pricing, observedGeneration, the bake delay's
rules in detail (test_controller.py bakes against a real server through kubectl scale)."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from controller.bakery import Bakery
from controller.informer import Informer

GROUP = "restaurant.programming-kubernetes.info"


def bakery(delay: float, requeued: list[tuple[str, float]]) -> Bakery:
    api = client.ApiClient()  # never called: desired_status only reads the caches
    toppings = Informer(api, GROUP, "v1beta1", "toppings", lambda *_: None)
    toppings.cache.update({"salami": {"metadata": {"name": "salami"}, "spec": {"cost": 2}}})
    pizzas = Informer(api, GROUP, "v1beta1", "pizzas", lambda *_: None)
    return Bakery(api, pizzas, toppings, lambda key, delay: requeued.append((key, delay)), delay)


def pizza(replicas: int | None = None, generation: int = 3) -> dict[str, Any]:
    spec: dict[str, Any] = {"toppings": [{"name": "salami", "quantity": 2}]}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"metadata": {"name": "p", "namespace": "ns", "generation": generation}, "spec": spec}


def test_without_spec_replicas_there_is_no_status_replicas() -> None:
    desired, wait = bakery(0, []).desired_status("ns/p", pizza(), {"replicas": 2})
    assert desired == {"cost": 4, "observedGeneration": 3} and wait is None


def test_no_delay_bakes_at_once() -> None:
    desired, wait = bakery(0, []).desired_status("ns/p", pizza(replicas=3), {})
    assert desired == {"cost": 4, "observedGeneration": 3, "replicas": 3} and wait is None


def test_a_bake_keeps_the_baked_number_until_the_delay_passed() -> None:
    b = bakery(0.3, [])
    desired, wait = b.desired_status("ns/p", pizza(replicas=3), {"replicas": 1})
    assert desired["replicas"] == 1  # still the old number
    assert wait is not None and 0 < wait <= 0.3
    desired, _ = b.desired_status("ns/p", pizza(replicas=3), {})
    assert "replicas" not in desired  # nothing baked yet, nothing claimed
    time.sleep(wait)
    desired, wait = b.desired_status("ns/p", pizza(replicas=3), {"replicas": 1})
    assert desired["replicas"] == 3 and wait is None


def test_asking_for_another_number_restarts_the_bake() -> None:
    b = bakery(0.3, [])
    _, first = b.desired_status("ns/p", pizza(replicas=3), {})
    assert first is not None
    time.sleep(first)
    desired, wait = b.desired_status("ns/p", pizza(replicas=5), {})
    assert "replicas" not in desired and wait is not None  # 5 is a new bake, not the finished 3
