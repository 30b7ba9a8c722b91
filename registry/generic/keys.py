"""Storage key layout, as kube and sample-apiserver key theirs (docs/storage.md):

    <prefix>/<group>/<resource>/[<namespace>/]<name>

The backend adds `<prefix>` (`--etcd-prefix`, default `/registry`); the registry builds the rest. The
group is part of every key so two groups serving a resource of the same name never share keys.

Allocated numbers (registry/generic/allocation.py) have one key each, outside the group's directory
so the watch cache, which lists and watches `/<group>/`, never reads them:

    <prefix>/_allocations/<group>/<resource>/<field>/<number>
"""

from __future__ import annotations


def resource_prefix(group: str, resource: str) -> str:
    """The directory holding every object of one resource; always ends in "/"."""
    return f"/{group}/{resource}/"


def object_key(group: str, resource: str, namespace: str, name: str) -> str:
    base = resource_prefix(group, resource)
    return f"{base}{namespace}/{name}" if namespace else f"{base}{name}"


def list_prefix(group: str, resource: str, namespace: str) -> str:
    """The directory holding a namespace's objects (or all of them); always ends in "/"."""
    base = resource_prefix(group, resource)
    return f"{base}{namespace}/" if namespace else base


def legacy_resource_prefix(resource: str) -> str:
    """Where releases before the group was part of the key kept a resource, relative to the prefix."""
    return f"/{resource}/"


def allocation_prefix(group: str, resource: str, field: str) -> str:
    """The directory of one allocated field's number keys; always ends in "/". `_allocations` cannot
    be a group or a resource name (neither may hold "_"), so it never meets their keys."""
    return f"/_allocations/{group}/{resource}/{field.removeprefix('.')}/"
