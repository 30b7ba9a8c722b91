"""Resolves what each request is about once, for every later filter and handler (kube's WithRequestInfo)."""

from __future__ import annotations

from collections.abc import Awaitable

from aiohttp import web
from aiohttp.typedefs import Handler

from apis.meta.errors import internal_error
from server.request_info import RequestInfo, RequestInfoError, ResolvedPaths, resolve
from server.request_state import REQUEST_INFO

# Shared by every app in the process: answers depend only on the request (kube's fixed rules).
_resolved = ResolvedPaths()


@web.middleware
def request_info(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """Resolve, store, and hand back the rest of the chain's awaitable.

    A plain function, not a coroutine: aiohttp awaits what a middleware returns, so returning
    ``handler(request)`` leaves no frame of this filter alive while the request runs (a watch runs
    for minutes), and saves a coroutine per request. A RequestInfoError still surfaces inside the
    ``await`` of the filter outside (recovery).
    """
    try:
        info = _resolved.resolve(request.method, request.path, request.query)
    except RequestInfoError as err:
        # kube answers 500 for paths such as /api/v1/watch that name a verb but no resource.
        raise internal_error(f"failed to create RequestInfo: {err}") from err
    request[REQUEST_INFO] = info
    return handler(request)


def request_info_of(request: web.Request) -> RequestInfo:
    """The RequestInfo the filter stored; resolved on the spot if the filter did not run (e.g. tests)."""
    info = request.get(REQUEST_INFO)
    if info is None:
        info = resolve(request.method, request.path, request.query)
    return info
