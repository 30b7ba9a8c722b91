"""rest.BeforeDelete's graceful rules at the edges an HTTPS test cannot time: a shortened period whose
deadline is already past, the rounding of the deadline, kinds without the declaration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.generic.graceful_deletion import (
    NOT_GRACEFUL,
    PENDING,
    Grace,
    GracefulDeletion,
    before_delete,
    format_timestamp,
    parse_timestamp,
    set_grace,
)
from registry.generic.options import DeleteOptions

NOW = 1_700_000_000.25
POLICY = GracefulDeletion()


@dataclass
class Obj:
    metadata: dict[str, Any]


def deleting(period: int, deadline: float) -> Obj:
    return Obj(
        {
            "generation": 2,
            "deletionTimestamp": format_timestamp(int(deadline)),
            "deletionGracePeriodSeconds": period,
        }
    )


def test_kinds_without_graceful_deletion_ignore_the_period() -> None:
    assert before_delete(None, Obj({}), DeleteOptions(grace_period_seconds=30), NOW) == NOT_GRACEFUL


def test_the_first_graceful_delete_rounds_the_deadline_up_and_bumps_the_generation() -> None:
    obj = Obj({"generation": 1})
    grace = before_delete(POLICY, obj, DeleteOptions(grace_period_seconds=30), NOW)
    assert grace == Grace(
        graceful=True, period=30, deletion_timestamp=format_timestamp(int(NOW) + 31), first=True
    )
    set_grace(obj.metadata, grace)
    assert obj.metadata == {
        "generation": 2,
        "deletionTimestamp": grace.deletion_timestamp,
        "deletionGracePeriodSeconds": 30,
    }
    # The default period 0 (no gracePeriodSeconds) is no graceful deletion at all.
    assert before_delete(POLICY, Obj({}), DeleteOptions(), NOW) == NOT_GRACEFUL
    assert before_delete(GracefulDeletion(5), Obj({}), DeleteOptions(), NOW).period == 5


def test_a_pending_deletion_is_only_ever_shortened() -> None:
    obj = deleting(30, NOW + 20)
    for asked in (None, 30, 60):
        assert before_delete(POLICY, obj, DeleteOptions(grace_period_seconds=asked), NOW) == PENDING
    shorter = before_delete(POLICY, obj, DeleteOptions(grace_period_seconds=25), NOW)
    assert (shorter.period, shorter.first) == (25, False)
    assert parse_timestamp(shorter.deletion_timestamp) == int(NOW + 20) - 5


def test_a_shortened_deadline_never_goes_into_the_past() -> None:
    # 10 s of 30 are left: asking for 5 moves the deadline 25 s back, past now.
    obj = deleting(30, NOW + 10)
    graceful = before_delete(POLICY, obj, DeleteOptions(grace_period_seconds=5), NOW)
    # Still graceful, with the smallest graceful period; the deadline is now.
    assert (graceful.period, parse_timestamp(graceful.deletion_timestamp)) == (1, int(NOW))
    at_once = before_delete(POLICY, obj, DeleteOptions(grace_period_seconds=0), NOW)
    assert (at_once.graceful, at_once.period, parse_timestamp(at_once.deletion_timestamp)) == (
        True,
        0,
        int(NOW),
    )


def test_a_deletion_without_a_period_follows_the_ordinary_rules() -> None:
    # Finalizers hold it (period 0): nothing graceful left to shorten.
    held = deleting(0, NOW - 5)
    assert before_delete(POLICY, held, DeleteOptions(grace_period_seconds=0), NOW) == NOT_GRACEFUL
