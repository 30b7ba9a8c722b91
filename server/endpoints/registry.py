"""Builds the APIRegistry (one ResourceScope per group/version/resource) from installed groups."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apis.runtime.kinds import READ_VERBS, KindInfo
from registry.generic.admission import MutatingPlugin, ValidatingPlugin
from registry.generic.installation import GroupInstallation
from registry.generic.rest import ResourceStorage
from server.admission.chain import AdmissionChain
from server.admission.metrics import AdmissionMetrics
from server.endpoints.deprecation import version_warnings
from server.endpoints.scope import APIRegistry, ResourceScope


def build_registry(
    installations: Sequence[GroupInstallation],
    *,
    mutating: Sequence[MutatingPlugin] = (),
    validating: Sequence[ValidatingPlugin] = (),
    enabled: Callable[[str], bool] = lambda name: True,
    metrics: AdmissionMetrics | None = None,
) -> APIRegistry:
    """Generic plugins (e.g. NamespaceLifecycle, webhooks) run before every group's own plugins, as
    sample-apiserver appends BanFlunder after kube's recommended order; `enabled` says which of the
    groups' plugins --enable/--disable-admission-plugins leave on."""
    chain = AdmissionChain(
        mutating=[*mutating, *(p for i in installations for p in i.mutating if enabled(p.name))],
        validating=[*validating, *(p for i in installations for p in i.validating if enabled(p.name))],
        metrics=metrics,
    )
    scopes: dict[tuple[str, str, str], ResourceScope] = {}
    for installation in installations:
        group = installation.group
        for kind in group.kinds:
            reads = _storage_of(installation, kind)
            verbs = frozenset(kind.verbs)
            for version in kind.versions:
                scopes[(group.group, version, kind.resource)] = ResourceScope(
                    group=group,
                    kind=kind,
                    version=version,
                    reads=reads,
                    admission=chain,
                    subresources=installation.subresources.get(kind.resource, {}),
                    custom_subresources=installation.custom_subresources.get(kind.resource, {}),
                    warnings=version_warnings(group.group, kind, version),
                    verbs=verbs,
                )
    return APIRegistry(
        groups=tuple(i.group for i in installations),
        scopes=scopes,
        custom_subresources={i.group.group: i.custom_subresources for i in installations},
    )


def _storage_of(installation: GroupInstallation, kind: KindInfo) -> ResourceStorage:
    """The kind's Store, or the group's own class for it; a kind served by its own class declares
    only what such a class serves (reads, no subresources), so no write handler can reach it."""
    store = installation.stores.get(kind.resource)
    if store is not None:
        return store
    own = installation.resources.get(kind.resource)
    if own is None:
        raise ValueError(f"{installation.group.group}: no storage for {kind.resource}")
    if not set(kind.verbs) <= set(READ_VERBS) or kind.subresources or kind.stored:
        raise ValueError(
            f"{installation.group.group}: {kind.resource} is served by a class of its own, so its kind "
            f"must declare verbs within {READ_VERBS}, no subresources and stored=False"
        )
    return own
