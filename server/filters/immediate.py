"""An awaitable that is already done, for filters written as plain functions.

Filters whose common path only passes the request on are plain functions returning the next
handler's awaitable (no coroutine frame of theirs stays alive while a watch runs). When such a
filter answers by itself instead, it must still return an awaitable: this one.
"""

from __future__ import annotations

from aiohttp import web


async def immediate(response: web.StreamResponse) -> web.StreamResponse:
    return response
