"""The rules of deleting an object that finalizers hold, as k8s.io/apiserver's generic Store applies them.

Plain functions over ObjectMeta and DeleteOptions, kept apart from the Store so the garbage-collector
finalizer precedence (store.go: shouldOrphanDependents, shouldDeleteDependents,
deletionFinalizersForGarbageCollection), markAsDeleting and ShouldDeleteDuringUpdate read in one place.
The cluster's garbage collector does the rest through ownerReferences; this server only records the
intent as the `orphan` / `foregroundDeletion` finalizers.
"""

from __future__ import annotations

from typing import Any

from apis.meta import errors
from apis.meta.errors import GroupResource
from apis.meta.validation import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS
from registry.generic import metadata
from registry.generic.options import DeleteOptions

_GC_FINALIZERS = (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)


def _first_gc_finalizer(finalizers: list[str]) -> str | None:
    return next((f for f in finalizers if f in _GC_FINALIZERS), None)


def should_orphan(finalizers: list[str], options: DeleteOptions) -> bool:
    """shouldOrphanDependents: the request's choice (orphanDependents first), else the object's own."""
    if options.orphan_dependents is not None:
        return options.orphan_dependents
    if options.propagation_policy is not None:
        return options.propagation_policy == "Orphan"
    return _first_gc_finalizer(finalizers) == FINALIZER_ORPHAN_DEPENDENTS


def should_delete_dependents(finalizers: list[str], options: DeleteOptions) -> bool:
    """shouldDeleteDependents (foreground deletion), with the same order of precedence."""
    if options.orphan_dependents is not None:
        return False
    if options.propagation_policy is not None:
        return options.propagation_policy == "Foreground"
    return _first_gc_finalizer(finalizers) == FINALIZER_DELETE_DEPENDENTS


def finalizers_for(meta: dict[str, Any], options: DeleteOptions) -> tuple[bool, list[str]]:
    """deletionFinalizersForGarbageCollection: (changed, finalizers) with the propagation policy's
    finalizer in place; an unchanged set keeps the stored order (no write)."""
    current = list(meta.get("finalizers") or [])
    wanted = [f for f in current if f not in _GC_FINALIZERS]
    if should_orphan(current, options):
        wanted.append(FINALIZER_ORPHAN_DEPENDENTS)
    if should_delete_dependents(current, options):
        wanted.append(FINALIZER_DELETE_DEPENDENTS)
    if set(wanted) == set(current):
        return False, current
    return True, wanted


def mark_as_deleting(meta: dict[str, Any]) -> None:
    """markAsDeleting, for kinds without graceful deletion: the first mark bumps generation (its
    controllers must notice), deletionTimestamp never moves later, the grace period is 0."""
    now = metadata.now_rfc3339()
    existing = meta.get("deletionTimestamp")
    if not existing and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    if not existing or existing > now:
        meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0


def should_delete_during_update(meta: dict[str, Any], old: dict[str, Any]) -> bool:
    """ShouldDeleteDuringUpdate: no finalizer left on an object whose deletion was requested."""
    if meta.get("finalizers") or not old.get("deletionTimestamp"):
        return False
    return not old.get("deletionGracePeriodSeconds")


def preconditions_hold(meta: dict[str, Any], options: DeleteOptions) -> bool:
    """The uid and resourceVersion preconditions of a delete hold for this state (no error built)."""
    if options.uid is not None and options.uid != meta.get("uid"):
        return False
    return options.resource_version is None or options.resource_version == meta.get("resourceVersion")


def check_storage_preconditions(
    meta: dict[str, Any], options: DeleteOptions, resource: GroupResource
) -> None:
    """storage.Preconditions.Check: the preconditions, re-checked against the state a try of the
    storage delete starts from, in the storage layer's words (rest.BeforeDelete has its own)."""
    name, uid, rv = (meta.get(f, "") for f in ("name", "uid", "resourceVersion"))
    if options.uid is not None and options.uid != uid:
        raise errors.conflict(
            resource,
            name,
            f"Precondition failed: UID in precondition: {options.uid}, UID in object meta: {uid}",
        )
    if options.resource_version is not None and options.resource_version != rv:
        raise errors.conflict(
            resource,
            name,
            f"Precondition failed: ResourceVersion in precondition: {options.resource_version}, "
            f"ResourceVersion in object meta: {rv}",
        )
