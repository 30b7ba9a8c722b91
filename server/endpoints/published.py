"""Handlers for what the server publishes about itself: discovery and OpenAPI.

The documents depend only on the installed groups, so they are built once at start and served as
bytes; the OpenAPI ones in every format kube-openapi offers (openapi/serving.py, protobuf encoded once
on first request). Aggregated discovery is answered only when the Accept header asks for it, with exactly that
content type: kube-aggregator trusts the content type, and a mismatch breaks discovery cluster-wide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import orjson
from aiohttp import web

from apis.runtime.kinds import GroupInfo
from registry.generic.custom_subresources import CustomSubresources
from server.endpoints import discovery
from server.endpoints.dispatch import path_not_found
from server.endpoints.openapi import encode_document, openapi_v2, openapi_v3_group_version, openapi_v3_index
from server.endpoints.openapi.gnostic.encode import encode_v2, encode_v3
from server.endpoints.openapi.serving import ServedDocument, serve, serve_index
from server.responses import JSON


@dataclass(frozen=True)
class PublishedDocuments:
    group_list: bytes
    aggregated: dict[str, bytes]  # by discovery version ("v2", "v2beta1")
    groups: dict[str, bytes]
    resource_lists: dict[tuple[str, str], bytes]
    openapi_v2: ServedDocument
    openapi_v3_index: ServedDocument
    openapi_v3: dict[tuple[str, str], ServedDocument]


def build_documents(
    groups: tuple[GroupInfo, ...],
    *,
    patch_types: tuple[str, ...],
    version_info: dict,
    custom: Mapping[str, CustomSubresources] | None = None,
) -> PublishedDocuments:
    """`custom`: each group's custom subresources (by group name), listed and described with its kinds."""
    custom = custom or {}
    return PublishedDocuments(
        group_list=orjson.dumps(discovery.api_group_list(groups)),
        aggregated={
            v: orjson.dumps(discovery.aggregated_discovery(groups, f"apidiscovery.k8s.io/{v}", custom))
            for v in ("v2", "v2beta1")
        },
        groups={g.group: orjson.dumps(discovery.api_group(g)) for g in groups},
        resource_lists={
            (g.group, v): orjson.dumps(discovery.api_resource_list(g, v, custom.get(g.group, {})))
            for g in groups
            for v in g.versions
        },
        openapi_v2=ServedDocument(
            orjson.dumps(
                openapi_v2(groups, patch_types=patch_types, version_info=version_info, custom=custom)
            ),
            encode_v2,
        ),
        openapi_v3_index=ServedDocument(
            orjson.dumps(openapi_v3_index(groups, patch_types=patch_types, custom=custom))
        ),
        openapi_v3={
            (g.group, v): ServedDocument(
                encode_document(
                    openapi_v3_group_version(g, v, patch_types=patch_types, custom=custom.get(g.group))
                ),
                encode_v3,
            )
            for g in groups
            for v in g.versions
        },
    )


DOCUMENTS = web.AppKey("published_documents", PublishedDocuments)


def _json(body: bytes, content_type: str = JSON) -> web.Response:
    response = web.Response(body=body)
    response.headers["Content-Type"] = content_type
    return response


async def apis(request: web.Request) -> web.Response:
    docs = request.app[DOCUMENTS]
    version = discovery.negotiate_discovery(request.headers.get("Accept", ""))
    if version is not None:
        response = _json(docs.aggregated[version], discovery.aggregated_content_type(version))
        response.headers["Vary"] = "Accept"
        return response
    return _json(docs.group_list)


async def api_group(request: web.Request) -> web.Response:
    body = request.app[DOCUMENTS].groups.get(request.match_info["group"])
    if body is None:
        raise path_not_found()
    return _json(body)


async def api_resource_list(request: web.Request) -> web.Response:
    key = (request.match_info["group"], request.match_info["version"])
    body = request.app[DOCUMENTS].resource_lists.get(key)
    if body is None:
        raise path_not_found()
    return _json(body)


async def openapi_v2_document(request: web.Request) -> web.StreamResponse:
    return await serve(request, request.app[DOCUMENTS].openapi_v2, "v2")


async def openapi_v3_paths(request: web.Request) -> web.StreamResponse:
    return await serve_index(request, request.app[DOCUMENTS].openapi_v3_index)


async def openapi_v3_document(request: web.Request) -> web.StreamResponse:
    group, version = request.match_info["group"], request.match_info["version"]
    document = request.app[DOCUMENTS].openapi_v3.get((group, version))
    if document is None:
        raise path_not_found()
    current = f"/openapi/v3/apis/{group}/{version}?hash={document.etag}"
    return await serve(request, document, "v3", current_url=current)
