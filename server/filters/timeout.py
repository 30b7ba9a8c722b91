"""Ends non-long-running requests that overrun their time with a 504 `Status` (kube's request timeout).

Together this is kube's WithRequestDeadline (the allotted time: --request-timeout, or a shorter
`?timeout=` from the client) and WithTimeoutForNonLongRunningRequests (the 504 once it is over), from
k8s.io/apiserver pkg/endpoints/filters/request_deadline.go and pkg/server/filters/timeout.go. A stuck
storage call or webhook must not pin a client, a connection and (under max-in-flight) a seat forever.

Unlike Go, where the handler goroutine runs on and its writes are discarded, the handler here is
cancelled, so nothing it does after the deadline reaches the client or the storage. If it had
already started its response, no Status can follow; the connection is then broken (kube panics with
http.ErrAbortHandler for the same reason), so the client sees a truncated reply, never a
complete-looking one. Long-running requests (watches) are left alone: they end by their own
timeoutSeconds / --min-request-timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apis.meta.errors import StatusError, bad_request
from server.duration import parse_duration
from server.filters.request_info import request_info_of
from server.longrunning import DEFAULT_LONG_RUNNING, LongRunningCheck
from server.responses import status_response

logger = logging.getLogger(__name__)

# apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0).
TIMEOUT_MESSAGE = "Timeout: request did not complete within the allotted timeout"
INVALID_TIMEOUT_IN_URL = "invalid timeout specified in the request URL"


def timeout(request_timeout: float, *, long_running: LongRunningCheck = DEFAULT_LONG_RUNNING) -> Middleware:
    """`request_timeout`: seconds (kube's --request-timeout, 60 by default); 0 disables the filter.

    Place it after request info and before authentication, as kube does, so the deadline also
    covers authentication, authorization and admission webhooks.
    """

    @web.middleware
    def limit_time(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # A plain function for the pass-through case: a watch keeps no frame of this filter alive.
        if request_timeout <= 0 or long_running(request_info_of(request)):
            return handler(request)
        return limited(request, handler)

    async def limited(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            seconds = allotted_timeout(request.query.get("timeout", ""), request_timeout)
        except StatusError as err:
            return status_response(err, request)
        # asyncio.timeout's work with one timer handle and no coroutines of its own: this runs for
        # every request. A TimeoutError of the handler's own (a storage client's) is not ours.
        task = asyncio.current_task()
        assert task is not None
        expiry = _Expiry(task)
        timer = asyncio.get_running_loop().call_later(seconds, expiry)
        try:
            response = await handler(request)
        except asyncio.CancelledError:
            if not expiry.fired or task.uncancel() > 0:
                raise  # cancelled for another reason too (the server stopping)
            if request.writer.output_size > 0:
                logger.info("timed out %s %s after its response started", request.method, request.path)
                raise TimeoutError from None
            logger.info("timed out %s %s after %ss", request.method, request.path_qs, seconds)
            return status_response(timed_out(), request)
        finally:
            timer.cancel()
        if expiry.fired:
            task.uncancel()  # the handler swallowed the cancellation: it is not pending any more
        return response

    return limit_time


class _Expiry:
    """The timer's callback: cancels the request's task, and remembers that it did."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task, self.fired = task, False

    def __call__(self) -> None:
        self.fired = True
        self.task.cancel()


def allotted_timeout(requested: str, maximum: float) -> float:
    """Seconds a request may take: `?timeout=` (a Go duration) if positive and below `maximum`.

    Zero or negative mean "no preference" and get the server's maximum, as in kube; a malformed value
    is a 400 BadRequest with kube's message.
    """
    if not requested:
        return maximum
    try:
        seconds = parse_duration(requested)
    except ValueError as err:
        raise bad_request(f"{INVALID_TIMEOUT_IN_URL} - {err}") from err
    if 0 < seconds < maximum:
        return seconds
    return maximum


def timed_out() -> StatusError:
    """kube's 504 body: reason Timeout and an empty `details` (retryAfterSeconds 0 is omitted)."""
    return StatusError(504, "Timeout", TIMEOUT_MESSAGE, {})
