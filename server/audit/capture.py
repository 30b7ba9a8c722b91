"""Seeing request and response bodies for audit without taking them away from the handler.

kube logs the request object from inside its handlers (LogRequestObject / LogRequestPatch), so an
event carries one only when a handler actually decoded the body — a request refused by authorization
has none. Here the audit filter reads the body up front and hands the handler an identical stream;
afterwards, the event keeps the object only if the handler consumed that stream.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import StreamReader, web

from apis.meta.errors import StatusError
from server.endpoints.body import MAX_BODY_BYTES, YAML_TYPE, decode

_READ_CHUNK = 64 * 1024


@dataclass(slots=True)
class CapturedBody:
    raw: bytes
    media: str
    replay: StreamReader
    # False when the body went past the size limit: the handler answers 413 and nothing is logged.
    whole: bool

    def consumed(self) -> bool:
        """Whether the handler read the body to its end (kube logs request objects from handlers)."""
        return self.replay.at_eof()

    def decoded(self) -> Any | None:
        if not self.whole or not self.raw.strip():
            return None
        return decode_body(self.raw, self.media)


async def capture_request_body(request: web.Request) -> CapturedBody | None:
    """Read the body (at most the API's size limit, plus one byte) and put an identical stream back."""
    if not request.body_exists:
        return None
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return None  # the handler refuses it with 413 before reading
    data = bytearray()
    while len(data) <= MAX_BODY_BYTES:
        chunk = await request.content.read(_READ_CHUNK)
        if not chunk:
            break
        data.extend(chunk)
    raw = bytes(data)
    # The limit is above the buffered size, so feeding never pauses the real connection's reading.
    replay = StreamReader(request.protocol, limit=len(raw) + 1, loop=asyncio.get_running_loop())
    if raw:
        replay.feed_data(raw)
    replay.feed_eof()
    # aiohttp has no public way to hand a read body back to the request (unread_data() is deprecated).
    # `_payload` is what read(), post() and clone() use; `content` is a reified property cached in
    # `_cache`. aiohttp is pinned, and tests/server/audit check a real handler still reads the body.
    request._payload = replay
    request._cache["content"] = replay
    return CapturedBody(
        raw, _media(request.headers.get("Content-Type", "")), replay, len(raw) <= MAX_BODY_BYTES
    )


def decode_body(raw: bytes, media: str) -> Any | None:
    """JSON or YAML body → JSON value, None if it is neither or does not parse (no event field then)."""
    try:
        if media.endswith("json"):
            return orjson.loads(raw)
        if media.endswith("yaml"):
            value, _ = decode(raw, YAML_TYPE)
            return value
    except (orjson.JSONDecodeError, StatusError):
        return None
    return None


def response_body(response: web.StreamResponse, *, only_status: bool = False) -> Any | None:
    """The JSON value of a finished in-memory response, None for streams and other media.

    `only_status`: skip decoding bodies that cannot be a Status (below RequestResponse only a Status
    matters, and decoding every list there would be wasted work on the event loop).
    """
    if not isinstance(response, web.Response):
        return None
    body = response.body
    if not isinstance(body, bytes | bytearray) or not body:
        return None
    if only_status and b'"Status"' not in body:
        return None
    return decode_body(bytes(body), _media(response.content_type))


def _media(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()
