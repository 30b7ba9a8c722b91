"""A watch's server-side timeout: timeoutSeconds, or kube's random pick that spreads reconnects."""

from __future__ import annotations

from server.endpoints.watch import watch_timeout


def test_watch_timeouts_are_spread_between_min_and_twice_min() -> None:
    draws = [watch_timeout(None, 100.0) for _ in range(200)]
    assert all(100 <= d < 200 for d in draws)
    assert max(draws) - min(draws) > 50  # actually randomized, not a constant
    assert watch_timeout(0, 100.0) >= 100  # 0 is "not set", as in kube


def test_timeout_seconds_is_taken_as_asked() -> None:
    assert watch_timeout(7, 1800.0) == 7.0
