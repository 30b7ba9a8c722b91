"""Outermost filter: every failure below leaves the server as a kube `Status` (kube's WithPanicRecovery).

Handlers and filters raise `StatusError` for API errors; this turns them into responses. Anything
unexpected is logged with its traceback and answered 500 InternalError without leaking internals,
as kube answers a panicking handler. aiohttp's own HTTP exceptions (router 404/405, redirects) pass
through untouched.
"""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from apis.meta.errors import StatusError, internal_error
from server.responses import status_response

logger = logging.getLogger(__name__)

# kube's text for a handler that panicked; the details are in the server log only.
PANIC_MESSAGE = "This request caused apiserver to panic. Look in the logs for details."


@web.middleware
async def recovery(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except StatusError as err:
        if _response_started(request):
            raise
        return status_response(err, request)
    except Exception:
        logger.exception("observed an unexpected error handling %s %s", request.method, request.path_qs)
        if _response_started(request):
            raise
        return status_response(internal_error(PANIC_MESSAGE), request)


def _response_started(request: web.Request) -> bool:
    """Whether part of a response (e.g. a watch stream) is already on the wire.

    A second response cannot follow; the only honest signal left is breaking the connection, which
    aiohttp does for an error raised out of the handler.
    """
    return request.writer.output_size > 0
