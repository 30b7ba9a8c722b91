"""Graceful deletion as for pods: kube's RESTGracefulDeleteStrategy and the part of rest.BeforeDelete
(k8s.io/apiserver pkg/registry/rest/delete.go) that decides what a DELETE of such a kind does.

A strategy declares `GracefulDeletion` to have its objects deleted gracefully: a DELETE with a grace
period of N > 0 seconds does not remove the object but sets `metadata.deletionTimestamp` (now + N)
and `metadata.deletionGracePeriodSeconds` (N) in one update; the object stays readable and
watchable until something deletes it with a shorter period, ultimately 0 (for pods the kubelet, here
registry/generic/graceful_finisher.py when the period is over, or a controller before that). A
later DELETE may shorten the period, never lengthen it.

Kinds without the declaration ignore the grace period entirely, as kube's do.

One difference from kube, so that a graceful kind whose default period is 0 deletes exactly as a
kind without graceful deletion: a period of 0 on an object not yet being deleted removes it at once
(kube's generic Store would first write the deletion timestamp, then delete, so watchers would see a
MODIFIED no one can act on before the DELETED).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apis.runtime.kinds import HubObject
from registry.generic.options import DeleteOptions


@dataclass(frozen=True)
class GracefulDeletion:
    """kube's RESTGracefulDeleteStrategy, declared on a strategy.

    `default_seconds` is the period of a DELETE that names none (a pod's
    terminationGracePeriodSeconds); 0 keeps such deletes immediate.
    """

    default_seconds: int = 0

    def grace_period(self, obj: HubObject, requested: int | None) -> int:
        """kube's CheckGracefulDelete: the period this delete of `obj` gets. A group wanting a period
        per object (as pods take theirs from the spec) overrides this."""
        return requested if requested is not None else self.default_seconds


@dataclass(frozen=True, slots=True)
class Grace:
    """What rest.BeforeDelete decided for one state of an object.

    graceful: write `deletion_timestamp` / `period` (and bump the generation when `first`);
    pending: the object is already being deleted at least as soon as asked: nothing to write.
    Neither: the kind's ordinary deletion (at once, or marking while finalizers remain).
    """

    graceful: bool = False
    pending: bool = False
    period: int = 0
    deletion_timestamp: str = ""
    first: bool = False


NOT_GRACEFUL = Grace()
PENDING = Grace(pending=True)


def before_delete(
    policy: GracefulDeletion | None, obj: HubObject, options: DeleteOptions, now: float | None = None
) -> Grace:
    """rest.BeforeDelete's graceful part for the state `obj` (not changed: `set_grace` applies it).

    The preconditions and the DeleteOptions are checked before (deletion.py, server/endpoints/query.py).
    """
    if policy is None:
        return NOT_GRACEFUL
    meta = obj.metadata
    now = time.time() if now is None else now
    second = int(now)
    existing_timestamp = meta.get("deletionTimestamp")
    if existing_timestamp:
        existing = meta.get("deletionGracePeriodSeconds")
        if not existing:
            # Being deleted without a grace period (finalizers): the ordinary rules go on.
            return NOT_GRACEFUL
        requested = options.grace_period_seconds
        if requested is None or requested >= existing:
            return PENDING  # only a shorter period may be asked for
        # The deadline moves back by the difference, never into the past; a graceful request whose
        # whole period is already over keeps the smallest graceful period, 1 s (kube's words).
        deadline = parse_timestamp(existing_timestamp) - existing + requested
        period = requested
        if deadline < second:
            deadline = second
            if period != 0:
                period = 1
        return Grace(graceful=True, period=period, deletion_timestamp=format_timestamp(deadline))
    period = policy.grace_period(obj, options.grace_period_seconds)
    if period <= 0:
        return NOT_GRACEFUL
    # deletionTimestamp has whole seconds: rounded up, so that the object is kept at least the
    # period asked for (kube's truncation would keep it up to a second less).
    timestamp = format_timestamp(math.ceil(now + period))
    return Grace(graceful=True, period=period, deletion_timestamp=timestamp, first=True)


def set_grace(meta: dict[str, Any], grace: Grace) -> None:
    """Write a graceful decision into metadata. The first one bumps the generation: the object's
    controllers must notice it is going away (kube does this here, and in markAsDeleting for kinds
    without graceful deletion)."""
    meta["deletionTimestamp"] = grace.deletion_timestamp
    meta["deletionGracePeriodSeconds"] = grace.period
    if grace.first and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def parse_timestamp(value: str) -> int:
    """metav1.Time's JSON form (RFC 3339, whole seconds) → seconds since the epoch."""
    return int(datetime.fromisoformat(value).timestamp())


def format_timestamp(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
