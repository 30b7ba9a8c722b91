"""v1alpha1 Pizzas ⇄ the hub's JSON shape (v1beta1's): the only hand-written conversion of the group.

v1alpha1 lists a topping once per portion (`[mozzarella, mozzarella, tomato]` is extra cheese); the hub
counts portions. Collapsing keeps the order of first occurrence, so hub → v1alpha1 → hub is the
identity for every valid hub object (unique names, quantity ≥ 1). v1alpha1 → hub → v1alpha1 may
regroup repeated names, which the API declares meaningless (the order of toppings does not matter).

Both directions build new dicts and lists; what they pass on unchanged (metadata, status) is copied
by the generated conversion, so nothing returned shares anything with the input.
"""

from __future__ import annotations

import re
from typing import Any

# v1alpha1 has no spec.replicas / status.replicas / spec.orderNumber (added with v1beta1). kube's way
# for a field an older version lacks (api_changes.md, e.g. autoscaling/v1 HPA metrics): the older
# version carries it in an annotation, so hub → v1alpha1 → hub loses nothing and a v1alpha1 client
# that writes back what it read keeps the field. The hub never keeps these annotations: they become
# the fields again.
SPEC_REPLICAS_ANNOTATION = "restaurant.programming-kubernetes.info/spec.replicas"
STATUS_REPLICAS_ANNOTATION = "restaurant.programming-kubernetes.info/status.replicas"
ORDER_NUMBER_ANNOTATION = "restaurant.programming-kubernetes.info/spec.orderNumber"
# (part, field, annotation)
_CARRIED = (
    ("spec", "replicas", SPEC_REPLICAS_ANNOTATION),
    ("status", "replicas", STATUS_REPLICAS_ANNOTATION),
    ("spec", "orderNumber", ORDER_NUMBER_ANNOTATION),
)
_INTEGER = re.compile(r"-?[0-9]{1,18}")


def _from_annotation(text: str) -> int | str:
    """An integer when the annotation holds one; anything else stays a string, which the hub rejects
    (422 naming spec.replicas or spec.orderNumber) instead of silently dropping what the client wrote."""
    return int(text) if _INTEGER.fullmatch(text) else text


def pizza_up(obj: dict[str, Any]) -> dict[str, Any]:
    """v1alpha1 → hub shape: repeated names become one entry with a quantity; the replicas and order
    number annotations become the fields."""
    spec = obj.get("spec") or {}
    portions: dict[str, int] = {}
    for name in spec.get("toppings") or []:
        portions[name] = portions.get(name, 0) + 1
    toppings = [{"name": name, "quantity": quantity} for name, quantity in portions.items()]
    out = {**obj, "spec": {**spec, "toppings": toppings}}
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return out
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict) or not any(key in annotations for _, _, key in _CARRIED):
        return out
    annotations = dict(annotations)
    for part, name, key in _CARRIED:
        if key in annotations:
            value = _from_annotation(str(annotations.pop(key)))
            out[part] = {**(out.get(part) or {}), name: value}
    out["metadata"] = {**metadata, "annotations": annotations}
    if not annotations:
        del out["metadata"]["annotations"]
    return out


def pizza_down(obj: dict[str, Any]) -> dict[str, Any]:
    """hub shape → v1alpha1: each topping's name once per portion; replicas and the order number move
    to annotations."""
    spec = obj["spec"]
    names = [t.get("name", "") for t in spec.get("toppings", []) for _ in range(t.get("quantity", 1))]
    out = {**obj, "spec": {**spec, "toppings": names}}
    kept: dict[str, str] = {}
    for part, name, key in _CARRIED:
        section = out.get(part)
        if isinstance(section, dict) and name in section:
            kept[key] = str(section[name])
            out[part] = {k: v for k, v in section.items() if k != name}
    if kept:
        metadata = out.get("metadata") or {}
        out["metadata"] = {**metadata, "annotations": {**(metadata.get("annotations") or {}), **kept}}
    return out
