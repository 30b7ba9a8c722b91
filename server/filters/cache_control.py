"""kube's WithCacheControl: every response says `Cache-Control: no-cache, private` unless its handler
chose otherwise.

Everything the server answers is behind authentication and authorization, so no shared cache may
keep it, and a client must revalidate. The one handler that chooses otherwise is an OpenAPI v3
document asked for by its hash (`public, immutable`, server/endpoints/openapi/serving.py).

An on_response_prepare hook rather than a middleware: a streamed answer (a watch) sends its headers
before a middleware would see the response.
"""

from __future__ import annotations

from aiohttp import web

CACHE_CONTROL = "Cache-Control"
NO_CACHE = "no-cache, private"


def cache_control(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Part of the response hook (server/app.py)."""
    if CACHE_CONTROL not in response.headers:
        response.headers[CACHE_CONTROL] = NO_CACHE
