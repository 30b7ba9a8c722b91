"""/openapi/v2 and /openapi/v3 in every format kube-openapi serves, with its caching headers."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from server.endpoints.openapi.gnostic import openapiv2_pb2, openapiv3_pb2
from tests.server.endpoints.test_openapi_protobuf import to_json

GROUP = "restaurant.programming-kubernetes.info"
V2_PROTO = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
V2_PROTO_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
V3_PROTO = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
V3_PROTO_ANSWER = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"


@pytest.mark.parametrize("accept", [V2_PROTO, V2_PROTO_ANSWER, f"{V2_PROTO}, application/json"])
async def test_v2_protobuf_is_gnostics_document_of_the_json(api, accept: str) -> None:
    """What kubectl's validation asks for when a kind is missing from /openapi/v3."""
    json_reply = await api.get("/openapi/v2")
    assert json_reply.status == 200 and json_reply.headers["Content-Type"] == "application/json"
    r = await api.get("/openapi/v2", headers={"Accept": accept})
    assert r.status == 200, r
    assert r.headers["Content-Type"] == V2_PROTO_ANSWER
    assert r.headers["Vary"] == "Accept"
    message = openapiv2_pb2.Document()
    message.ParseFromString(r.raw)
    decoded = to_json(message)
    doc = json_reply.body
    assert decoded["swagger"] == "2.0" and decoded["paths"] == doc["paths"]
    assert set(decoded["definitions"]) == set(doc["definitions"])
    # Both formats carry the JSON's ETag (kube-openapi computeETag: sha512, upper-case hex).
    etag = f'"{hashlib.sha512(json_reply.raw).hexdigest().upper()}"'
    assert r.headers["Etag"] == json_reply.headers["Etag"] == etag


async def test_v2_etag_and_not_acceptable(api) -> None:
    r = await api.get("/openapi/v2")
    etag = r.headers["Etag"]
    for accept in ("application/json", V2_PROTO):
        again = await api.get("/openapi/v2", headers={"Accept": accept, "If-None-Match": etag})
        assert again.status == 304 and again.raw == b"", again
        assert again.headers["Etag"] == etag
    changed = await api.get("/openapi/v2", headers={"If-None-Match": '"other"'})
    assert changed.status == 200 and changed.raw == r.raw
    r = await api.get("/openapi/v2", headers={"Accept": "text/html"})
    assert r.status == 406 and r.raw == b""
    r = await api.get("/openapi/v2", headers={"Accept": "*/*"})
    assert r.status == 200 and r.headers["Content-Type"] == "application/json"


async def test_v3_formats_hash_and_cache_headers(api) -> None:
    index = await api.get("/openapi/v3")
    assert index.status == 200 and index.headers["Etag"]
    assert index.headers["Cache-Control"] == "no-cache, private"  # kube's WithCacheControl
    again = await api.get("/openapi/v3", headers={"If-None-Match": index.headers["Etag"]})
    assert again.status == 304 and again.raw == b""
    assert "Last-Modified" not in again.headers and "Content-Type" not in again.headers  # writeNotModified
    # handler3's HandleDiscovery does not negotiate: JSON whatever the client accepts.
    xml = await api.get("/openapi/v3", headers={"Accept": "application/xml"})
    assert xml.status == 200 and xml.headers["Content-Type"] == "application/json" and xml.raw == index.raw
    url = index.body["paths"][f"apis/{GROUP}/v1beta1"]["serverRelativeURL"]
    path = urlsplit(url).path
    [wanted] = parse_qs(urlsplit(url).query)["hash"]

    r = await api.get(url)
    assert r.status == 200 and r.headers["Content-Type"] == "application/json"
    assert r.headers["Etag"] == f'"{wanted}"'
    assert r.headers["Cache-Control"] == "public, immutable" and r.headers["Expires"]
    assert r.headers["Vary"] == "Accept"
    plain = await api.get(path)
    assert plain.headers["Cache-Control"] == "no-cache, private" and plain.raw == r.raw
    assert "Expires" not in plain.headers
    since = await api.get(path, headers={"If-Modified-Since": plain.headers["Last-Modified"]})
    assert since.status == 304, since

    proto = await api.get(url, headers={"Accept": V3_PROTO})
    assert proto.status == 200 and proto.headers["Content-Type"] == V3_PROTO_ANSWER
    message = openapiv3_pb2.Document()
    message.ParseFromString(proto.raw)
    decoded = to_json(message)
    doc = orjson.loads(r.raw)
    assert decoded["openapi"] == doc["openapi"] and decoded["paths"] == doc["paths"]
    assert set(decoded["components"]["schemas"]) == set(doc["components"]["schemas"])

    async with api.session.get(f"{path}?hash=ABC", allow_redirects=False) as stale:
        assert stale.status == 301
        assert stale.headers["Location"] == f"{path}?hash={wanted}"
        assert stale.headers["Etag"] == f'"{wanted}"' and stale.headers["Vary"] == "Accept"
        assert "public" not in stale.headers["Cache-Control"]
    # The format is negotiated before the hash is looked at: 406, not a redirect.
    r = await api.get(f"{path}?hash=ABC", headers={"Accept": "application/xml"})
    assert r.status == 406 and r.raw == b""
    r = await api.get(path, headers={"Accept": "application/xml"})
    assert r.status == 406
