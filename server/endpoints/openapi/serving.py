"""Serving an OpenAPI document as kube-openapi's handlers do: every format a client may ask for,
encoded once, with ETag / If-None-Match, Vary: Accept and, for a v3 URL naming its hash, caching
headers (pkg/handler and pkg/handler3).

- JSON, and gnostic's protobuf under both its current and its deprecated media type (answered as the
  current one, `...spec.vN.v1.0+protobuf`); anything else is a 406 with an empty body.
- The ETag is the upper-case hex sha512 of the JSON (kube's computeETag), for every format; an
  If-None-Match naming it is a 304, as Go's http.ServeContent answers.
- A v3 document asked for with `?hash=` other than its ETag is a 301 to the current one's URL; with
  the right hash the answer is `Cache-Control: public, immutable` and expires in a year.

The protobuf form is encoded on first request, once per document (the documents are fixed while the
server runs), in a worker thread: it takes a few hundred milliseconds of CPU for the whole API, which
must not stall the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import orjson
from aiohttp import web

from server.endpoints.negotiation import parse_accept

JSON = "application/json"


def proto_types(version: str) -> tuple[str, str]:
    """(current, deprecated) media types of gnostic's protobuf for OpenAPI `version` ("v2", "v3")."""
    return (
        f"application/com.github.proto-openapi.spec.{version}.v1.0+protobuf",
        f"application/com.github.proto-openapi.spec.{version}@v1.0+protobuf",
    )


def etag_of(json: bytes) -> str:
    """kube-openapi computeETag."""
    return hashlib.sha512(json).hexdigest().upper()


@dataclass(eq=False)
class ServedDocument:
    """One document's JSON bytes and, encoded on demand and kept, its protobuf bytes."""

    json: bytes
    encode_proto: Callable[[dict[str, Any]], bytes] | None = None
    last_modified: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))
    etag: str = ""
    _proto: asyncio.Future[bytes] | None = None

    def __post_init__(self) -> None:
        self.etag = self.etag or etag_of(self.json)

    async def protobuf(self) -> bytes:
        """Encoded once; concurrent first requests wait for the same encoding."""
        assert self.encode_proto is not None
        if self._proto is None:
            encode, raw = self.encode_proto, self.json
            self._proto = asyncio.ensure_future(asyncio.to_thread(lambda: encode(orjson.loads(raw))))
        return await asyncio.shield(self._proto)


def negotiate(accept: str | None, offered: tuple[tuple[str, str], ...]) -> str | None:
    """goautoneg as kube-openapi uses it: the best clause, the first offered type it matches
    (`*` wildcards allowed); returns the content type to answer with, None for a 406."""
    for clause in parse_accept(accept or "*/*"):
        kind, _, sub = clause.type.partition("/")
        for media, answered in offered:
            offered_kind, _, offered_sub = media.partition("/")
            if kind in (offered_kind, "*") and sub in (offered_sub, "*"):
                return answered
    return None


def offers(version: str | None) -> tuple[tuple[str, str], ...]:
    """What a document of OpenAPI `version` is offered as: JSON, and the protobuf types if any."""
    if version is None:
        return ((JSON, JSON),)
    current, deprecated = proto_types(version)
    return ((JSON, JSON), (deprecated, current), (current, current))


def _not_modified(request: web.Request, etag: str) -> bool:
    header = request.headers.get("If-None-Match", "")
    if not header:
        return False
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or f'"{etag}"' in tags


async def serve(
    request: web.Request,
    document: ServedDocument,
    openapi_version: str | None,
    *,
    immutable: bool = False,
) -> web.StreamResponse:
    """Answer `document` in the negotiated format (`openapi_version` None: JSON only, no Vary)."""
    content_type = negotiate(request.headers.get("Accept"), offers(openapi_version))
    headers: dict[str, str] = {}
    if openapi_version is not None:
        headers["Vary"] = "Accept"
    if content_type is None:
        return web.Response(status=406, headers=headers)
    headers["Content-Type"] = content_type
    headers["Etag"] = f'"{document.etag}"'
    headers["Last-Modified"] = format_datetime(document.last_modified, usegmt=True)
    if immutable:
        headers["Cache-Control"] = "public, immutable"
        expires = datetime.now(UTC) + timedelta(days=365)
        headers["Expires"] = format_datetime(expires, usegmt=True)
    if _not_modified(request, document.etag):
        del headers["Content-Type"]
        return web.Response(status=304, headers=headers)
    body = document.json if content_type == JSON else await document.protobuf()
    response = web.Response(body=body, headers=headers)
    if openapi_version == "v2":
        response.enable_compression()  # kube wraps /openapi/v2 in a gzip handler
    return response
