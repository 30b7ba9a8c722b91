"""The ScaleHandler port: parent entries seen on the Scale and back, as kube's scalehandler.go."""

from __future__ import annotations

from typing import Any

from apis.restaurant.install import PIZZA_KIND
from apis.runtime.codec import Codec
from registry.generic.scale_fields import ScaleFields, replicas_paths

GROUP = "restaurant.programming-kubernetes.info"
PIZZAS = Codec(GROUP, PIZZA_KIND)
V1A1, V1B1 = f"{GROUP}/v1alpha1", f"{GROUP}/v1beta1"
REPLICAS = {"f:spec": {"f:replicas": {}}}
TOPPINGS = {"f:spec": {"f:toppings": {}}}
BOTH = {"f:spec": {"f:replicas": {}, "f:toppings": {}}}
T1, T2 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def entry(manager: str, operation: str, api_version: str, fields: dict, sub: str = "", time: str | None = T1):
    out: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": api_version}
    if time:
        out["time"] = time
    out |= {"fieldsType": "FieldsV1", "fieldsV1": fields}
    if sub:
        out["subresource"] = sub
    return out


def handler() -> ScaleFields:
    assert PIZZA_KIND.scale is not None
    return ScaleFields(replicas_paths(PIZZAS, PIZZA_KIND.scale), V1B1)


def test_replicas_path_per_version() -> None:
    paths = handler().mappings
    assert paths[V1B1] == ("f:spec", "f:replicas")
    assert paths[V1A1] is None  # v1alpha1 keeps replicas in an annotation


def test_to_scale_keeps_only_replicas_owners() -> None:
    parent = [
        entry("creator", "Update", V1B1, BOTH),
        entry("chef", "Update", V1B1, TOPPINGS),
        entry("old", "Update", V1A1, TOPPINGS),
        entry("gone", "Update", f"{GROUP}/v0", REPLICAS),
    ]
    assert handler().to_scale(parent) == [entry("creator", "Update", "autoscaling/v1", REPLICAS)]


def test_to_parent_steals_keeps_and_adds() -> None:
    parent = [
        entry("creator", "Update", V1B1, BOTH),
        entry("hpa", "Apply", V1B1, REPLICAS, "scale", T2),
        entry("chef", "Update", V1B1, TOPPINGS),
        entry("gone", "Update", f"{GROUP}/v0", REPLICAS),
    ]
    scale = [
        entry("hpa", "Apply", "autoscaling/v1", REPLICAS, "scale", "2026-03-01T00:00:00Z"),
        entry("creator", "Update", "autoscaling/v1", REPLICAS),  # an Update identifier has the version
        entry("new", "Apply", "autoscaling/v1", REPLICAS, "scale"),
    ]
    out = handler().to_parent(parent, scale)
    # The applier's parent entry is kept as it was (time too); the creator loses replicas on its own
    # entry (its Scale identifier names autoscaling/v1) and gets them back as a second entry, with no
    # time, as kube's map keys do; a Scale owner new to the parent gets the parent's version and no
    # time; an unserved version is dropped.
    assert out == [
        entry("new", "Apply", V1B1, REPLICAS, "scale", None),
        entry("hpa", "Apply", V1B1, REPLICAS, "scale", T2),
        entry("creator", "Update", V1B1, REPLICAS, "", None),
        entry("chef", "Update", V1B1, TOPPINGS),
        entry("creator", "Update", V1B1, TOPPINGS),
    ]


def test_kube_cases() -> None:
    """scalehandler_test.go: "different-managers: update -> apply", "same manager: apply -> apply"."""
    selector_and_replicas = {"f:spec": {"f:replicas": {}, "f:toppings": {}}}
    parent = [entry("test", "Update", V1B1, selector_and_replicas, time=None)]
    scale = [entry("scale", "Apply", "autoscaling/v1", REPLICAS, "scale", None)]
    assert handler().to_parent(parent, scale) == [
        entry("scale", "Apply", V1B1, REPLICAS, "scale", None),
        entry("test", "Update", V1B1, TOPPINGS, time=None),
    ]
    parent = [entry("test", "Apply", V1B1, selector_and_replicas, time=None)]
    scale = [entry("test", "Apply", "autoscaling/v1", REPLICAS, "scale", None)]
    assert handler().to_parent(parent, scale) == [
        entry("test", "Apply", V1B1, TOPPINGS, time=None),
        entry("test", "Apply", V1B1, REPLICAS, "scale", None),
    ]
