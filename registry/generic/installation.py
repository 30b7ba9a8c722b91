"""What installing an API group yields: its stores, subresources and admission plugins.

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
from registry.generic.graceful_finisher import GracefulDeletionFinisher
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


def attach_watch_cache(installation: GroupInstallation) -> GroupFeed:
    """Give every store of the group a watch cache, all filled by one feed over the group's keys
    (started by the caller, which also stops it), and a graceful deletion finisher to the stores
    whose strategy declares graceful deletion."""
    stores = list(installation.stores.values())
    caches = [store.new_cache() for store in stores]
    storage = stores[0].storage
    feed = GroupFeed(storage, f"/{installation.group.group}/", caches)
    for store, cache in zip(stores, caches, strict=True):
        store.cache = cache
        _finish_graceful_deletions(store, cache, feed)
    return feed


def graceful_deletion_feed(installation: GroupInstallation) -> GroupFeed | None:
    """Without watch caches (--watch-cache=false) the finishers still need one: caches of the
    graceful stores only, that serve no reads. None when no store of the group is graceful."""
    stores = [store for store in installation.stores.values() if store.graceful_deletion is not None]
    if not stores:
        return None
    caches = [store.new_cache() for store in stores]
    feed = GroupFeed(stores[0].storage, f"/{installation.group.group}/", caches)
    for store, cache in zip(stores, caches, strict=True):
        _finish_graceful_deletions(store, cache, feed)
    return feed


def _finish_graceful_deletions(store: Store, cache: ResourceCache, feed: GroupFeed) -> None:
    if store.graceful_deletion is None:
        return
    finisher = GracefulDeletionFinisher(store.delete)
    cache.observer = finisher
    feed.companions.append(finisher)
