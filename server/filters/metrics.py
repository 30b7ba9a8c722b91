"""Counts every request and times it, labelled as kube labels them (kube's instrumented handlers).

It sits inside recovery and right after request info, so it knows what the request was and sees the
final code of everything below it, including the 401/403 of authentication and authorization and
errors that recovery turns into a Status afterwards.
"""

from __future__ import annotations

import time

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apis.meta.errors import StatusError
from server.filters.request_info import request_info_of
from server.metrics import Metrics, Observation


def metrics(recorder: Metrics) -> Middleware:
    @web.middleware
    async def observe(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.monotonic()
        # A cancelled request (BaseException: the client went away) sent no code and is not counted.
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            _record(recorder, request, exc.status, started)
            raise
        except StatusError as err:
            _record(recorder, request, err.code, started)
            raise
        except Exception:
            _record(recorder, request, 500, started)  # what the recovery filter will answer
            raise
        _record(recorder, request, response.status, started, response.headers.get("Content-Type", ""))
        return response

    return observe


def _record(
    recorder: Metrics, request: web.Request, code: int, started: float, response_type: str = ""
) -> None:
    seconds = time.monotonic() - started
    match = request.match_info
    resource = match.route.resource
    route = resource.canonical if resource is not None else ""
    routed = match.http_exception is None
    method = request.method
    query = request.query
    dry_run = tuple(query.getall("dryRun", ())) if "dryRun" in query else ()
    # Only an apply (a PATCH) is told apart by its content type.
    content_type = request.headers.get("Content-Type", "") if method == "PATCH" else ""
    # Everything request_labels reads: request info is a function of method, path and query, and of
    # the query the labels only depend on `watch`.
    key = (method, request.path, query.get("watch"), dry_run, content_type, route, routed)

    def seen() -> Observation:
        return Observation(
            info=request_info_of(request),
            method=method,
            query=query,
            dry_run=dry_run,
            content_type=content_type,
            code=code,
            seconds=seconds,
            route=route,
            routed=routed,
        )

    recorder.observe_request(key, seen, code, seconds)
    if response_type:
        recorder.observe_content_type(key, seen, response_type)
