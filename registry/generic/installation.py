"""What installing an API group yields: its stores, resources served by classes of its own,
subresources and admission plugins.

A group's registry package (registry/<group>/install.py) returns one of these from the storage it is
given; the server turns it into routes, discovery and OpenAPI without knowing anything else about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apis.runtime.kinds import GroupInfo
from registry.generic.admission import MutatingPlugin, ValidatingPlugin
from registry.generic.cache.feed import GroupFeed
from registry.generic.cache.resource_cache import ResourceCache
from registry.generic.custom_subresources import CustomSubresource
from registry.generic.derived import DerivedResource
from registry.generic.graceful_finisher import GracefulDeletionFinisher
from registry.generic.rest import ResourceStorage
from registry.generic.store import Store
from registry.generic.strategy import Strategy


@dataclass(frozen=True)
class GroupInstallation:
    group: GroupInfo
    # One Store per resource (plural name); every served version shares it.
    stores: dict[str, Store]
    # Subresource strategies per resource, e.g. {"pizzas": {"status": ...}}.
    subresources: dict[str, dict[str, Strategy]] = field(default_factory=dict)
    # Getters and connecters per resource, e.g. {"pizzas": {"bill": Bill(...)}} (custom_subresources.py).
    custom_subresources: dict[str, dict[str, CustomSubresource]] = field(default_factory=dict)
    mutating: tuple[MutatingPlugin, ...] = ()
    validating: tuple[ValidatingPlugin, ...] = ()
    # Resources without storage of their own, served by a class of the group's (kube's rest.Storage
    # other than the generic Store: registry/generic/rest.py), e.g. a DerivedResource. Their kinds
    # declare the verbs they serve (KindInfo.verbs, stored=False).
    resources: dict[str, ResourceStorage] = field(default_factory=dict)


def attach_watch_cache(installation: GroupInstallation) -> GroupFeed:
    """Give every store of the group a watch cache, all filled by one feed over the group's keys
    (started by the caller, which also stops it): the group's derived resources are fed from them,
    and the stores whose strategy declares graceful deletion get a finisher."""
    stores = installation.stores
    caches = {resource: store.new_cache() for resource, store in stores.items()}
    feed = _feed(installation, caches)
    for resource, store in stores.items():
        store.cache = caches[resource]
    return feed


def attach_background_feed(installation: GroupInstallation) -> GroupFeed | None:
    """Without --watch-cache: caches that serve no reads (the stores keep reading storage), of the
    resources the group's derived resources are computed from and of the stores whose graceful
    deletions must be finished; None for a group with neither."""
    derived = _derived(installation)
    sources = {source for resource in derived for source in resource.derivation.sources}
    sources |= {name for name, store in installation.stores.items() if store.graceful_deletion is not None}
    if not sources:
        return None
    caches = {resource: installation.stores[resource].new_cache() for resource in sorted(sources)}
    return _feed(installation, caches)


def _derived(installation: GroupInstallation) -> list[DerivedResource]:
    return [r for r in installation.resources.values() if isinstance(r, DerivedResource)]


def _feed(installation: GroupInstallation, caches: dict[str, ResourceCache]) -> GroupFeed:
    derived = [
        resource.attach({source: caches[source] for source in resource.derivation.sources})
        for resource in _derived(installation)
    ]
    storage = next(iter(installation.stores.values())).storage
    feed = GroupFeed(storage, f"/{installation.group.group}/", list(caches.values()), derived=derived)
    for resource, cache in caches.items():
        _finish_graceful_deletions(installation.stores[resource], cache, feed)
    return feed


def _finish_graceful_deletions(store: Store, cache: ResourceCache, feed: GroupFeed) -> None:
    if store.graceful_deletion is None:
        return
    finisher = GracefulDeletionFinisher(store.delete)
    cache.observers.append(finisher)
    feed.companions.append(finisher)
