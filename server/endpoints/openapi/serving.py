"""Serving an OpenAPI document as kube-openapi's handlers do: every format a client may ask for,
encoded once, with ETag / If-None-Match, Vary: Accept and, for a v3 URL naming its hash, caching
headers (pkg/handler and pkg/handler3).

- JSON, and gnostic's protobuf under both its current and its deprecated media type (answered as the
  current one, `...spec.vN.v1.0+protobuf`); anything else is a 406 with an empty body.
- The ETag is the upper-case hex sha512 of the JSON (kube's computeETag), for every format; an
  If-None-Match naming it is a 304, as Go's http.ServeContent answers.
- A v3 document asked for with `?hash=` other than its ETag is a 301 to the current one's URL (after
  negotiation: an unacceptable Accept is still a 406); with the right hash the answer is
  `Cache-Control: public, immutable` and expires in a year. Without it the answer keeps the
  `no-cache, private` every response gets (server/filters/cache_control.py, kube's WithCacheControl).
- The /openapi/v3 index is JSON whatever the client accepts, as handler3's HandleDiscovery.

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


def offers(version: str) -> tuple[tuple[str, str], ...]:
    """What a document of OpenAPI `version` is offered as: JSON, and gnostic's protobuf types."""
    current, deprecated = proto_types(version)
    return ((JSON, JSON), (deprecated, current), (current, current))


def _not_modified(request: web.Request, document: ServedDocument) -> bool:
    """http.ServeContent's checkPreconditions for a GET: If-None-Match (weak comparison, `*`), and only
    without it If-Modified-Since (at the second, as Last-Modified is written)."""
    header = request.headers.get("If-None-Match", "")
    if header:
        tags = [t.strip().removeprefix("W/") for t in header.split(",")]
        return "*" in tags or f'"{document.etag}"' in tags
    since = request.if_modified_since
    return since is not None and document.last_modified <= since


def _not_modified_response(headers: dict[str, str]) -> web.Response:
    """Go's writeNotModified: no representation headers, and no Last-Modified beside an ETag."""
    headers.pop("Content-Type", None)
    headers.pop("Last-Modified", None)
    return web.Response(status=304, headers=headers)


async def serve(
    request: web.Request,
    document: ServedDocument,
    openapi_version: str,
    *,
    current_url: str | None = None,
) -> web.StreamResponse:
    """Answer `document` (OpenAPI `openapi_version`, "v2" or "v3") in the negotiated format.

    `current_url` (a v3 group version: its URL with the current hash) makes the `hash` query count,
    as handler3's HandleGroupVersion: the format is negotiated first (406 wins), then a hash other
    than the ETag is a 301 to `current_url`, and the right one makes the answer cacheable for a year.
    """
    content_type = negotiate(request.headers.get("Accept"), offers(openapi_version))
    headers = {"Vary": "Accept"}
    if content_type is None:
        return web.Response(status=406, headers=headers)
    headers["Content-Type"] = content_type
    headers["Etag"] = f'"{document.etag}"'
    wanted = request.query.get("hash", "") if current_url is not None else ""
    if wanted and wanted != document.etag:
        # http.Redirect: with a Content-Type already set, no body.
        headers["Location"] = current_url or ""
        return web.Response(status=301, headers=headers)
    if wanted:
        headers["Cache-Control"] = "public, immutable"
        expires = datetime.now(UTC) + timedelta(days=365)
        headers["Expires"] = format_datetime(expires, usegmt=True)
    headers["Last-Modified"] = format_datetime(document.last_modified, usegmt=True)
    if _not_modified(request, document):
        return _not_modified_response(headers)
    body = document.json if content_type == JSON else await document.protobuf()
    response = web.Response(body=body, headers=headers)
    if openapi_version == "v2":
        response.enable_compression()  # kube wraps /openapi/v2 in a gzip handler
    return response


async def serve_index(request: web.Request, document: ServedDocument) -> web.Response:
    """handler3's HandleDiscovery (/openapi/v3): always JSON whatever the Accept header (no
    negotiation, no Vary), with its ETag and Go's conditional GET."""
    headers = {
        "Content-Type": JSON,
        "Etag": f'"{document.etag}"',
        "Last-Modified": format_datetime(document.last_modified, usegmt=True),
    }
    if _not_modified(request, document):
        return _not_modified_response(headers)
    return web.Response(body=document.json, headers=headers)
