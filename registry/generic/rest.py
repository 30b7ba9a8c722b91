"""What the read handlers need of a resource's storage (kube's rest.Getter, rest.Lister, rest.Watcher).

The generic Store is one such storage; a group may serve a resource from a class of its own instead
(GroupInstallation.resources), as metrics-server serves PodMetrics from memory. GET, LIST, WATCH and
their Table and metadata renderings depend only on this protocol, so such a class serves them with
every query parameter, selector and output form a stored resource has. Writes go through the Store,
whose strategy, admission and managed fields they are made of: a resource of the group's own serves
the read verbs only (its kind declares them: KindInfo.verbs).
"""

from __future__ import annotations

from typing import Protocol

from apis.runtime.codec import Codec
from registry.generic.cache.stored import StoredObject
from registry.generic.cache.watchers import OpenWatch
from registry.generic.options import ListOptions, ObjectList, WatchOptions


class ResourceStorage(Protocol):
    """Reads of one resource. Errors are StatusErrors (404 for a missing object, 410 for a
    resourceVersion too old, ...), raised before a watch starts or set on its watcher after."""

    @property
    def codec(self) -> Codec:
        """How the resource's objects convert between the hub and its served versions."""
        ...

    @property
    def field_names(self) -> tuple[str, ...]:
        """Field selector names besides metadata.name and metadata.namespace."""
        ...

    async def read(self, namespace: str, name: str, *, resource_version: str = "") -> StoredObject:
        """One object: "" a consistent read, "0" any state, N a state not older than N."""
        ...

    async def read_list(self, namespace: str, options: ListOptions) -> ObjectList:
        """The objects of one namespace ("" for all) that match `options`, as StoredObjects."""
        ...

    async def watch(self, namespace: str, options: WatchOptions) -> OpenWatch:
        """A started watch of one namespace ("" for all)."""
        ...
