"""Writing API responses: every error leaves the server as a kube `Status`, every object as JSON or YAML."""

from __future__ import annotations

import json
from typing import Any

import orjson
import yaml
from aiohttp import web

from apis.meta.errors import StatusError
from server.endpoints import negotiation, protobuf

JSON = "application/json"
YAML = "application/yaml"


def encode(body: Any, content_type: str = JSON, *, pretty: bool = False) -> bytes:
    if content_type == YAML:
        return yaml.safe_dump(body, sort_keys=False, default_flow_style=False).encode()
    return orjson.dumps(body, option=orjson.OPT_INDENT_2 if pretty else 0)


def object_response(
    body: Any,
    *,
    status: int = 200,
    content_type: str = JSON,
    pretty: bool = False,
    headers: dict | None = None,
) -> web.Response:
    """`content_type` may carry parameters (a Table's `;as=Table;v=v1;g=meta.k8s.io`), sent back as chosen.
    A protobuf `body` comes encoded already (only the caller knows its message)."""
    media = content_type.split(";", 1)[0].strip()
    if media == negotiation.PROTOBUF:
        response = web.Response(body=body, status=status)
    else:
        response = web.Response(
            body=encode(body, YAML if media == YAML else JSON, pretty=pretty), status=status
        )
    response.headers["Content-Type"] = content_type
    if headers:
        response.headers.update(headers)
    return response


def status_response(err: StatusError, request: web.BaseRequest) -> web.Response:
    """A `Status` error body for `request`: JSON, or a protobuf `v1 Status` when its Accept asks for
    protobuf without a transform (kube's ErrorNegotiated). Only an Accept that mentions protobuf is
    negotiated at all, so JSON clients' errors cost what they always did."""
    accept = request.headers.get("Accept")
    if accept and "protobuf" in accept and negotiation.error_media(accept) == negotiation.PROTOBUF:
        response = web.Response(
            body=protobuf.status_body(err.status()), status=err.code, headers=err.headers or None
        )
        response.headers["Content-Type"] = negotiation.PROTOBUF
        return response
    return web.Response(
        body=orjson.dumps(err.status()), status=err.code, content_type=JSON, headers=err.headers or None
    )


async def answered(response: web.StreamResponse) -> web.StreamResponse:
    """A response ready now, as the awaitable a plain-function filter must return instead of calling on."""
    return response


def warning_header(text: str) -> str:
    """RFC 7234 warning as kube sends it: 299 - "<quoted, escaped text>"."""
    return "299 - " + json.dumps(text)


def add_warning(response: web.StreamResponse, text: str, *, first: bool = False) -> None:
    """Add a `Warning` header; `first` puts it before those already there (kube records a deprecated
    endpoint's warning before the handler adds its own)."""
    if not first:
        response.headers.add("Warning", warning_header(text))
        return
    others = response.headers.popall("Warning", [])
    response.headers.add("Warning", warning_header(text))
    for other in others:
        response.headers.add("Warning", other)
