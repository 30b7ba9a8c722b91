"""Declare a kind once: its versions' structural schemas, from which the hub type and conversions follow.

The schema is the source of truth (it already drives pruning, defaults, validation and OpenAPI). One
version's schema is the hub's shape: the hub type is generated from it (a slotted dataclass per object
with properties; attribute names are the JSON names in snake_case, so `flunderReference` is
`spec.flunder_reference`), and the conversion between that shape and the hub is automatic. Another
version writes only what really differs, as two functions between its JSON and the hub's JSON shape
(`up`, `down`); everything else (metadata, copying, omitting empties) is generated
(apis/runtime/hub_shape.py).

Conversions never share anything with their input: the watch cache hands one decoded object to
many readers. The one exception is Codec.view, for callers that only read the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apis.runtime.hub_shape import HubShape, hub_shape
from apis.runtime.kinds import ALL_VERBS, Column, HubObject, KindInfo, VersionedKind
from apis.runtime.lifecycle import Lifecycle
from apis.runtime.scale import ScaleSubresource
from apis.schema.cel_rules import compile_rules

JsonTransform = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Version:
    """One served version of a kind. `up`/`down` translate this version's JSON to and from the hub's
    JSON shape; leave both out for a version that has the hub's shape."""

    schema: dict[str, Any]
    up: JsonTransform | None = None
    down: JsonTransform | None = None
    lifecycle: Lifecycle | None = None


def _versioned(shape: HubShape, version: str, declared: Version) -> VersionedKind:
    """A version in the hub's shape converts with the shape's own functions; another goes through
    its `up`/`down` first."""
    up, down = declared.up, declared.down
    to_hub: Callable[[dict[str, Any]], HubObject] = shape.to_hub
    from_hub: Callable[[Any], dict[str, Any]] = shape.from_hub
    if up is not None:

        def to_hub(data: dict[str, Any]) -> HubObject:
            return shape.to_hub(up(data))

    if down is not None:

        def from_hub(obj: Any) -> dict[str, Any]:
            return down(shape.from_hub(obj))

    # Raises SchemaRulesError where kube would refuse the CRD: the kind cannot be declared, so a
    # server with such a rule does not start.
    rules = compile_rules(declared.schema)
    # A `down` may change what it is given, so only a version in the hub's shape shares values.
    view = shape.from_hub_view if down is None else None
    return VersionedKind(version, declared.schema, to_hub, from_hub, declared.lifecycle, rules, view)


def declare_kind(
    kind: str,
    *,
    hub_version: str,
    versions: dict[str, Version],
    storage_version: str,
    namespaced: bool,
    module: str,
    names: dict[str, str] | None = None,
    plural: str = "",
    short_names: tuple[str, ...] = (),
    columns: tuple[Column, ...] | None = None,
    subresources: tuple[str, ...] = (),
    scale: ScaleSubresource | None = None,
    verbs: tuple[str, ...] = ALL_VERBS,
    stored: bool = True,
) -> tuple[KindInfo, type]:
    """The kind's KindInfo and its generated hub class (`module` names where the class is declared).

    `versions` in priority order; `hub_version` is the one whose schema the hub has the shape of.
    `names` names nested hub classes by property path (`{"spec.toppings": "PizzaTopping"}`).
    `scale` serves `<resource>/scale` (its paths in the hub's shape) and adds "scale" to `subresources`.
    `verbs` and `stored`: a kind served by a class of the group's own rather than a Store
    (READ_VERBS, stored=False: GroupInstallation.resources).
    """
    if scale is not None and "scale" not in subresources:
        subresources = (*subresources, "scale")
    shape = hub_shape(kind, versions[hub_version].schema, module, names)
    info = KindInfo(
        kind=kind,
        list_kind=f"{kind}List",
        resource=plural or f"{kind.lower()}s",
        singular=kind.lower(),
        namespaced=namespaced,
        versions={v: _versioned(shape, v, declared) for v, declared in versions.items()},
        storage_version=storage_version,
        short_names=short_names,
        columns=columns,
        subresources=subresources,
        scale=scale,
        verbs=verbs,
        stored=stored,
        type_names=dict(names or {}),
    )
    return info, shape.cls
