"""Discovery documents (/apis, /apis/{g}, /apis/{g}/{v}, aggregated /apis) built from GroupInfo.

Clients cache these and kube-aggregator probes them, so their shape follows k8s.io/apiserver exactly:
field order as the Go structs serialise, verbs sorted, subresources as "<resource>/<sub>" entries in
the legacy document and nested under their parent in the aggregated one
(endpoints/installer.go, ConvertGroupVersionIntoToDiscovery).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apis.runtime.kinds import ALL_VERBS, GroupInfo, KindInfo
from registry.generic.custom_subresources import CustomSubresources

NO_CUSTOM: CustomSubresources = {}

# What a stored kind serves (sorted as the installer sorts them; a kind declares its own in
# KindInfo.verbs) and what the status subresource serves.
RESOURCE_VERBS: tuple[str, ...] = ALL_VERBS
SUBRESOURCE_VERBS: tuple[str, ...] = ("get", "patch", "update")

AGGREGATED_GROUP = "apidiscovery.k8s.io"
AGGREGATED_KIND = "APIGroupDiscoveryList"
AGGREGATED_VERSIONS: tuple[str, ...] = ("v2", "v2beta1")


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """discovery.StorageVersionHash: base64 of the first 8 bytes of sha256("group/version/kind").

    Clients (the storage version migrator) compare it across restarts to notice a storage version
    change, so it must be computed from the *storage* version, not the version being listed.
    """
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode("ascii")


def _group_version_for_discovery(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def api_group(group: GroupInfo) -> dict[str, Any]:
    """APIGroup for /apis/{g}: versions in priority order, the first one preferred."""
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        **_group_body(group),
    }


def _group_body(group: GroupInfo) -> dict[str, Any]:
    return {
        "name": group.group,
        "versions": [_group_version_for_discovery(group.group, v) for v in group.versions],
        "preferredVersion": _group_version_for_discovery(group.group, group.versions[0]),
    }


def api_group_list(
    groups: Iterable[GroupInfo], *, server_address_by_client_cidrs: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """APIGroupList for /apis.

    A standalone generic apiserver adds serverAddressByClientCIDRs (computed per client IP) to every
    group; pass it when the server knows its external address, leave it out otherwise.
    """
    items = []
    for group in groups:
        body = _group_body(group)
        if server_address_by_client_cidrs is not None:
            body["serverAddressByClientCIDRs"] = [dict(a) for a in server_address_by_client_cidrs]
        items.append(body)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}


def _kinds_in(group: GroupInfo, version: str) -> list[KindInfo]:
    # The installer registers storage paths in sorted order, which is the order clients see.
    return sorted((k for k in group.kinds if version in k.versions), key=lambda k: k.resource)


def _subresources(
    kind: KindInfo, group: str, version: str, custom: CustomSubresources
) -> list[tuple[str, str, str, str, list[str]]]:
    """(name, group, version, kind, verbs) of every subresource of `kind`, sorted by name as the
    installer registers paths: the kind's own (status, scale) and the group's getters and connecters."""
    subs = [
        (sub, *kind.subresource_kind(group, version, sub), list(SUBRESOURCE_VERBS))
        for sub in kind.subresources
    ]
    for name, sub in custom.get(kind.resource, {}).items():
        subs.append((name, group, version, sub.kind, sorted(sub.verbs)))
    return sorted(subs)


def api_resource_list(
    group: GroupInfo, version: str, custom: CustomSubresources = NO_CUSTOM
) -> dict[str, Any]:
    """APIResourceList for /apis/{g}/{v} (the document kube-aggregator's availability probe fetches)."""
    resources: list[dict[str, Any]] = []
    for kind in _kinds_in(group, version):
        entry: dict[str, Any] = {
            "name": kind.resource,
            "singularName": kind.singular,
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": list(kind.verbs),
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        if kind.stored:
            entry["storageVersionHash"] = storage_version_hash(group.group, kind.storage_version, kind.kind)
        resources.append(entry)
        for sub, sub_group, sub_version, sub_kind, verbs in _subresources(kind, group.group, version, custom):
            # Subresource storage has no singular name and no storage version of its own; one that
            # speaks another kind (/scale: autoscaling/v1 Scale) names its group and version.
            sub_entry: dict[str, Any] = {
                "name": f"{kind.resource}/{sub}",
                "singularName": "",
                "namespaced": kind.namespaced,
            }
            if (sub_group, sub_version) != (group.group, version):
                sub_entry["group"], sub_entry["version"] = sub_group, sub_version
            sub_entry["kind"] = sub_kind
            sub_entry["verbs"] = verbs
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group.group}/{version}",
        "resources": resources,
    }


def _response_kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _resource_discovery(
    group: GroupInfo, version: str, kind: KindInfo, custom: CustomSubresources
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": kind.resource,
        "responseKind": _response_kind(group.group, version, kind.kind),
        "scope": "Namespaced" if kind.namespaced else "Cluster",
        "singularResource": kind.singular,
        "verbs": list(kind.verbs),
    }
    if kind.short_names:
        entry["shortNames"] = list(kind.short_names)
    if kind.categories:
        entry["categories"] = list(kind.categories)
    subresources = _subresources(kind, group.group, version, custom)
    if subresources:
        entry["subresources"] = [
            {
                "subresource": sub,
                "responseKind": _response_kind(sub_group, sub_version, sub_kind),
                "verbs": verbs,
            }
            for sub, sub_group, sub_version, sub_kind, verbs in subresources
        ]
    return entry


def aggregated_discovery(
    groups: Iterable[GroupInfo], api_version: str, custom: Mapping[str, CustomSubresources] | None = None
) -> dict[str, Any]:
    """APIGroupDiscoveryList (apidiscovery.k8s.io/v2 or v2beta1; both have the same shape).

    Groups of equal priority are ordered by name (aggregated/handler.go); versions keep the group's
    priority order. metadata carries only the name: creationTimestamp is omitzero since kube 1.35.
    """
    if api_version not in {f"{AGGREGATED_GROUP}/{v}" for v in AGGREGATED_VERSIONS}:
        raise ValueError(f"no aggregated discovery in {api_version!r}")
    items = []
    for group in sorted(groups, key=lambda g: g.group):
        versions = [
            {
                "version": version,
                "resources": [
                    _resource_discovery(group, version, k, (custom or {}).get(group.group, NO_CUSTOM))
                    for k in _kinds_in(group, version)
                ],
                "freshness": "Current",
            }
            for version in group.versions
        ]
        items.append({"metadata": {"name": group.group}, "versions": versions})
    return {"kind": AGGREGATED_KIND, "apiVersion": api_version, "metadata": {}, "items": items}


# --- content negotiation (handlers/negotiation + discovery/aggregated/wrapper.go) ---------------------


@dataclass(slots=True)
class AcceptClause:
    type: str
    subtype: str
    q: float = 1.0
    params: dict[str, str] = field(default_factory=dict)


def _split(s: str, sep: str) -> tuple[str, str]:
    # goautoneg's nextSplitElement: the text before the first separator and the text after it.
    head, found, tail = s.partition(sep)
    return (head, tail) if found else (s, "")


def _go_float32(text: str) -> float:
    """strconv.ParseFloat(text, 32) with the error ignored, as goautoneg does (a bad q means 0)."""
    try:
        value = float(text)
    except ValueError:
        return 0.0
    if text.strip() != text or "_" in text:
        return 0.0  # Python accepts surrounding blanks and digit separators; Go does not
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def parse_accept(header: str) -> list[AcceptClause]:
    """goautoneg.ParseAccept: clauses sorted by q, then specificity, keeping header order on ties.

    The comparison is not a strict order (a specific clause with lower q still sorts before a
    wildcard), so the result depends on the algorithm: Go's sort.Sort runs insertion sort for the
    short slices an Accept header yields, which this reproduces.
    """
    clauses: list[AcceptClause] = []
    remaining = header
    while remaining:
        part, remaining = _split(remaining, ",")
        part = part.strip(" ")
        media, params_text = _split(part, ";")
        type_, rest = _split(media, "/")
        type_ = type_.strip(" ")
        if not rest:
            if type_ != "*":
                continue
            subtype = "*"
        else:
            subtype, extra = _split(rest, "/")
            if extra:
                continue
            subtype = subtype.strip(" ")
        clause = AcceptClause(type=type_, subtype=subtype)
        while params_text:
            param, params_text = _split(params_text, ";")
            key, value_part = _split(param, "=")
            if not value_part:
                continue
            value, extra = _split(value_part, "=")
            if extra:
                continue
            key = key.strip(" ")
            if key == "q":
                clause.q = _go_float32(value)
            else:
                clause.params[key] = value.strip(" ")
        clauses.append(clause)
    for i in range(1, len(clauses)):
        j = i
        while j > 0 and _less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def _less(a: AcceptClause, b: AcceptClause) -> bool:
    if a.q > b.q:
        return True
    if a.type != "*" and b.type == "*":
        return True
    return a.subtype != "*" and b.subtype == "*"


def _aggregated_version(params: dict[str, str]) -> str | None:
    """The aggregated discovery version a clause asks for, or None when the endpoint must skip it.

    DiscoveryEndpointRestrictions only allow a transformation to APIGroupDiscoveryList, so a clause
    without one (plain application/json) is skipped rather than chosen: an aggregated clause further
    down still wins, and only when none matches does /apis answer the plain APIGroupList.
    """
    convert: dict[str, str] = {}
    for key, value in params.items():
        if key in ("as", "g", "v"):
            convert[key] = value
        elif (key == "stream" and value and value != "watch") or (key == "sv" and value):
            return None
    if convert.get("g") != AGGREGATED_GROUP or convert.get("as") != AGGREGATED_KIND:
        return None
    version = convert.get("v")
    return version if version in AGGREGATED_VERSIONS else None


def negotiate_discovery(accept_header: str) -> str | None:
    """Which /apis document to serve: "v2", "v2beta1" (aggregated) or None (the plain APIGroupList).

    Only JSON is matched: the aggregated document is served as application/json only, so a clause
    for YAML or protobuf is passed over like any media type the server cannot produce.
    """
    if not accept_header:
        return None
    for clause in parse_accept(accept_header):
        if clause.type not in ("application", "*"):
            continue
        if clause.subtype not in ("json", "*"):
            continue
        if clause.type == "*" and clause.subtype != "*":
            continue
        version = _aggregated_version(clause.params)
        if version is not None:
            return version
    return None


def aggregated_content_type(version: str) -> str:
    """The Content-Type a response carrying aggregated discovery in `version` must declare."""
    return f"application/json;g={AGGREGATED_GROUP};v={version};as={AGGREGATED_KIND}"
