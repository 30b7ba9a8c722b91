"""v1alpha1 Pizzas ⇄ the hub's JSON shape (v1beta1's): the only hand-written conversion of the group.

v1alpha1 lists a topping once per portion (`[mozzarella, mozzarella, tomato]` is extra cheese); the hub
counts portions. Collapsing keeps the order of first occurrence, so hub → v1alpha1 → hub is the
identity for every valid hub object (unique names, quantity ≥ 1). v1alpha1 → hub → v1alpha1 may
regroup repeated names, which the API declares meaningless (the order of toppings does not matter).

Both directions build new dicts and lists; what they pass on unchanged (metadata, status) is copied
by the generated conversion, so nothing returned shares anything with the input.
"""

from __future__ import annotations

from typing import Any


def pizza_up(obj: dict[str, Any]) -> dict[str, Any]:
    """v1alpha1 → hub shape: repeated names become one entry with a quantity."""
    spec = obj.get("spec") or {}
    portions: dict[str, int] = {}
    for name in spec.get("toppings") or []:
        portions[name] = portions.get(name, 0) + 1
    toppings = [{"name": name, "quantity": quantity} for name, quantity in portions.items()]
    return {**obj, "spec": {**spec, "toppings": toppings}}


def pizza_down(obj: dict[str, Any]) -> dict[str, Any]:
    """hub shape → v1alpha1: each topping's name once per portion."""
    spec = obj["spec"]
    names = [t.get("name", "") for t in spec.get("toppings", []) for _ in range(t.get("quantity", 1))]
    return {**obj, "spec": {**spec, "toppings": names}}
