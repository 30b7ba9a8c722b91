"""Caps how many requests execute at once, answering 429 at once beyond that (kube's WithMaxInFlightLimit).

Ported from k8s.io/apiserver pkg/server/filters/maxinflight.go. Read-only requests (verbs get, list,
watch) and mutating ones (everything else, including non-resource POSTs) have separate budgets, so a
flood of writes cannot starve reads and the reverse; a limit of 0 lifts that budget. Long-running
requests (watches) are not counted at all: one informer holds a watch for half an hour, and counting
them would let a few hundred idle watches lock out every other request.

There is no queue: a request over its budget is rejected immediately with Retry-After: 1, because
clients (client-go) retry 429 with that delay themselves, and queueing here would only hold memory
and connections while hiding the overload. A user in system:masters still gets through when the
budget is exhausted, as in kube: the super-admin (or the aggregator's availability probe) must
always get an answer, and their requests are not counted against anyone.

The rejection is a `Status` (reason TooManyRequests, details.retryAfterSeconds 1) with kube's
message and header. kube itself writes the same message as text/plain here; client-go maps either
to the same TooManyRequests error, and this server's rule is that every error is a Status.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import GaugeMetricFamily

from apis.meta.errors import too_many_requests
from apis.meta.user import UserInfo
from server import metrics_multiprocess
from server.filters.authentication import user_of
from server.filters.immediate import immediate
from server.filters.request_info import request_info_of
from server.longrunning import DEFAULT_LONG_RUNNING, LongRunningCheck
from server.responses import status_response

TOO_MANY_REQUESTS_MESSAGE = "Too many requests, please try again later."
RETRY_AFTER_SECONDS = 1
# user.SystemPrivilegedGroup: never throttled by max-in-flight.
SYSTEM_PRIVILEGED_GROUP = "system:masters"
READ_ONLY_KIND = "readOnly"
MUTATING_KIND = "mutating"
_NON_MUTATING_VERBS = frozenset({"get", "list", "watch"})

INFLIGHT_METRIC = "apiserver_current_inflight_requests"
_INFLIGHT_HELP = (
    "Maximal number of currently used inflight request limit of this apiserver "
    "per request kind in last second."
)
# kube's inflightUsageMetricUpdatePeriod.
WATERMARK_PERIOD = 1.0


@dataclass(slots=True)
class _Seats:
    """One budget. The event loop is single-threaded and nothing awaits between check and take."""

    limit: int  # 0: unlimited
    in_use: int = 0


def max_in_flight(
    limit: int,
    mutating_limit: int,
    *,
    long_running: LongRunningCheck = DEFAULT_LONG_RUNNING,
    registry: CollectorRegistry | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Middleware:
    """`limit` caps read-only requests, `mutating_limit` the others (kube's --max-requests-inflight and
    --max-mutating-requests-inflight); 0 lifts a cap. Must run after authentication (for the
    system:masters exemption). With `registry`, exports apiserver_current_inflight_requests on it
    (one max_in_flight per registry).
    """
    watermark = InflightWatermark(clock, shared=metrics_multiprocess.enabled())
    if registry is not None:
        registry.register(watermark)
    budgets = {READ_ONLY_KIND: _Seats(limit), MUTATING_KIND: _Seats(mutating_limit)}
    disabled = limit == 0 and mutating_limit == 0

    @web.middleware
    def limit_in_flight(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # A plain function: requests that take no seat (watches: for their whole life) pass straight
        # through, without a frame of this filter; only seat holders run `occupy`.
        if disabled:
            return handler(request)
        info = request_info_of(request)
        if long_running(info):
            return handler(request)
        kind = READ_ONLY_KIND if info.verb in _NON_MUTATING_VERBS else MUTATING_KIND
        seats = budgets[kind]
        if seats.limit == 0:
            return handler(request)
        if seats.in_use >= seats.limit:
            if _is_privileged(user_of(request)):
                return handler(request)
            refusal = too_many_requests(TOO_MANY_REQUESTS_MESSAGE, RETRY_AFTER_SECONDS)
            return immediate(status_response(refusal, request))
        return occupy(request, handler, kind, seats)

    async def occupy(request: web.Request, handler: Handler, kind: str, seats: _Seats) -> web.StreamResponse:
        seats.in_use += 1
        # Noted on entry and on exit, as kube does: both moments feed the per-second maximum.
        watermark.record(kind, seats.in_use)
        try:
            return await handler(request)
        finally:
            seats.in_use -= 1
            watermark.record(kind, seats.in_use)

    return limit_in_flight


def _is_privileged(user: UserInfo | None) -> bool:
    return user is not None and SYSTEM_PRIVILEGED_GROUP in user.groups


class InflightWatermark:
    """The highest in-flight count per kind seen in the last whole second, as kube's gauge reports it.

    kube keeps a watermark that a goroutine publishes and resets to zero every second. Here the
    rollover happens lazily, on the next record or scrape, which gives the same numbers without a
    background task: a second in which nothing was recorded publishes 0, exactly like kube's reset
    (kube also only records on a request's entry and exit, not while it is merely running).

    `shared` (under `--workers N`): the scrape may land on another worker, which cannot roll this
    one's window, so each rollover is also written to a gauge in the workers' shared metric files,
    summed over the live workers (the server's requests in flight: each worker has its own budget),
    and while anything is nonzero a timer rolls the window every period, as kube's goroutine does.
    """

    __slots__ = ("_clock", "_gauge", "_peaks", "_period", "_published", "_ticking", "_window_start")

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        period: float = WATERMARK_PERIOD,
        *,
        shared: bool = False,
    ) -> None:
        self._clock = clock
        self._period = period
        self._window_start = clock()
        self._peaks = {READ_ONLY_KIND: 0, MUTATING_KIND: 0}
        self._published = dict(self._peaks)
        self._ticking = False
        self._gauge: Gauge | None = None
        if shared:
            self._gauge = Gauge(
                INFLIGHT_METRIC, _INFLIGHT_HELP, ["request_kind"], registry=None, multiprocess_mode="livesum"
            )
            for kind in self._peaks:
                self._gauge.labels(kind).set(0)

    def record(self, kind: str, in_use: int) -> None:
        self._roll()
        if in_use > self._peaks[kind]:
            self._peaks[kind] = in_use
        if self._gauge is not None and not self._ticking:
            self._ticking = True
            asyncio.get_running_loop().call_later(self._period, self._tick)

    def _tick(self) -> None:
        self._roll()
        if any(self._peaks.values()) or any(self._published.values()):
            asyncio.get_running_loop().call_later(self._period, self._tick)
        else:
            self._ticking = False

    def published(self) -> dict[str, int]:
        """request_kind → the maximum of the last completed period."""
        self._roll()
        return dict(self._published)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """Lets the registry refuse a second collector with the same name."""
        yield GaugeMetricFamily(INFLIGHT_METRIC, _INFLIGHT_HELP, labels=["request_kind"])

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(INFLIGHT_METRIC, _INFLIGHT_HELP, labels=["request_kind"])
        for kind, value in self.published().items():
            family.add_metric([kind], value)
        yield family

    def _roll(self) -> None:
        elapsed = self._clock() - self._window_start
        if elapsed < self._period:
            return
        if elapsed < 2 * self._period:
            self._published = dict(self._peaks)
        else:
            # At least one whole period passed with nothing recorded: kube would have published 0.
            self._published = dict.fromkeys(self._peaks, 0)
        self._peaks = dict.fromkeys(self._peaks, 0)
        self._window_start += elapsed - elapsed % self._period
        if self._gauge is not None:
            for kind, value in self._published.items():
                self._gauge.labels(kind).set(value)
