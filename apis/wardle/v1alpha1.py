"""wardle.example.com/v1alpha1: one `reference` whose type says what it names; deprecated since 1.3.

Only Flunder's spec differs from the hub: sample-apiserver's hand-written conversion (a reference
type that is neither Flunder nor Fischer is dropped) and its defaulting (a reference without a type
is a Flunder), which needs the reference and so cannot be a schema default.
"""

from __future__ import annotations

from typing import Any

from apis.meta.schemas import object_schema
from apis.runtime.lifecycle import Lifecycle
from apis.schema.build import array, string, struct

VERSION = "v1alpha1"
LIFECYCLE = Lifecycle(introduced=(1, 0), removed=(1, 10))
_TYPES = ("Flunder", "Fischer")

FLUNDER = object_schema(
    "Flunder is an example type with a spec and a status.",
    {
        "spec": struct(
            "FlunderSpec is the specification of a Flunder.",
            reference=string("A name of another flunder or fischer, depending on the reference type."),
            referenceType=string('The reference type, defaults to "Flunder" if reference is set.'),
        ),
        "status": struct("FlunderStatus is the status of a Flunder."),
    },
)

FISCHER = object_schema(
    "Fischer is an example type with a list of disallowed Flunder.Names",
    {
        "disallowedFlunders": array(
            {"type": "string"},
            "DisallowedFlunders holds a list of Flunder.Names that are disallowed.",
            **{"x-kubernetes-list-type": "atomic"},
        )
    },
)


def flunder_up(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    reference = spec.get("reference") or ""
    kind = spec.get("referenceType") or ("Flunder" if reference else "")
    hub_spec = {"referenceType": kind, f"{kind.lower()}Reference": reference} if kind in _TYPES else {}
    return {**obj, "spec": hub_spec}


def flunder_down(obj: dict[str, Any]) -> dict[str, Any]:
    kind = obj["spec"].get("referenceType") if obj["spec"].get("referenceType") in _TYPES else None
    spec = {"reference": obj["spec"].get(f"{kind.lower()}Reference"), "referenceType": kind} if kind else {}
    return {**obj, "spec": {key: value for key, value in spec.items() if value}}
