"""A made-up group "example.com" that exercises what the restaurant group does not.

Widget: cluster-scoped, served in v2 and v1, with short names, a category and typed columns.
Gadget: namespaced, served only in v2, with a status subresource.
v2 is the preferred version; v1 is the storage version (a storage version other than the preferred
one shows up in storageVersionHash).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from apis.meta.schemas import object_schema
from apis.runtime.kinds import Column, GroupInfo, KindInfo, VersionedKind


@dataclass(slots=True)
class Hub:
    metadata: dict[str, Any]
    spec: dict[str, Any]


def _to_hub(obj: dict[str, Any]) -> Hub:
    return Hub(metadata=copy.deepcopy(obj.get("metadata") or {}), spec=copy.deepcopy(obj.get("spec") or {}))


def _from_hub(hub: Hub) -> dict[str, Any]:
    return {"metadata": copy.deepcopy(hub.metadata), "spec": copy.deepcopy(hub.spec)}


def _versioned(version: str, kind: str) -> VersionedKind:
    schema = object_schema(
        f"{kind} is a made-up kind.",
        {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer"}, "color": {"type": "string"}},
            }
        },
    )
    return VersionedKind(version=version, schema=schema, to_hub=_to_hub, from_hub=_from_hub)


WIDGET_COLUMNS = (
    Column(name="Size", type="integer", description="How big.", cell=lambda h: h.spec.get("size")),
    Column(
        name="Color",
        type="string",
        description="Which color.",
        cell=lambda h: h.spec.get("color"),
        priority=1,
    ),
    Column(name="Ready", type="boolean", description="Ready or not.", cell=lambda h: h.spec.get("ready")),
    Column(name="Since", type="date", description="Since when.", cell=lambda h: h.spec.get("since")),
)

WIDGET = KindInfo(
    kind="Widget",
    list_kind="WidgetList",
    resource="widgets",
    singular="widget",
    namespaced=False,
    versions={"v2": _versioned("v2", "Widget"), "v1": _versioned("v1", "Widget")},
    storage_version="v1",
    short_names=("wd",),
    categories=("all",),
    columns=WIDGET_COLUMNS,
)

GADGET = KindInfo(
    kind="Gadget",
    list_kind="GadgetList",
    resource="gadgets",
    singular="gadget",
    namespaced=True,
    versions={"v2": _versioned("v2", "Gadget")},
    storage_version="v2",
    subresources=("status",),
)

EXAMPLE = GroupInfo(group="example.com", versions=("v2", "v1"), kinds=(WIDGET, GADGET))
