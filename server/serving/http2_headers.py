"""A received HTTP/2 header block: RFC 9113 §8.2-8.3 checks in one pass, then aiohttp's request message.

h2 makes these checks itself when `validate_inbound_headers` is on, as seven chained generators
that look at every byte of every name and value in Python. Profiled behind kube-aggregator (every
request is an HTTP/2 stream), that chain cost 8% of a worker's CPU, more than authentication. This
module makes the same decisions (tests/server/test_http2_headers.py compares it with h2's own
`validate_headers` on generated header lists) with bytes methods that run in C, and H2Protocol
turns h2's check off. The outcome of a bad block is what h2 did: the connection ends with a GOAWAY
PROTOCOL_ERROR.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp.http import HttpVersion11, RawRequestMessage
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

# A field name holds none of 0x00-0x20, A-Z, 0x7f-0xff (§8.2.1): deleting every allowed byte
# leaves nothing of a good name.
_NAME_BYTES = bytes(c for c in range(256) if 0x20 < c < 0x7F and not 0x41 <= c <= 0x5A)
_CONNECTION_HEADERS = frozenset(
    (b"connection", b"proxy-connection", b"keep-alive", b"transfer-encoding", b"upgrade")
)
_PSEUDO = frozenset((b":method", b":scheme", b":authority", b":path", b":status", b":protocol"))
_SPACE = (0x20, 0x09)

Headers = Iterable[tuple[bytes, bytes]]


def _field_error(name: bytes, value: bytes) -> str | None:
    """What is wrong with one field whatever the block: its characters, TE, connection headers."""
    if not name:
        return "Received header name with zero length."
    if name.translate(None, _NAME_BYTES):
        if name.lower() != name:
            return f"Received uppercase header name {name!r}."
        return f"Illegal character in header name: {name!r}"
    if name.find(b":", 1) != -1:
        return f"Illegal character ':' in header name: {name!r}"
    if value:
        if b"\x00" in value or b"\n" in value or b"\r" in value:
            return f"Illegal character in header value: {value!r}"
        if value[0] in _SPACE or value[-1] in _SPACE:
            return f"Received header value surrounded by whitespace {value!r}"
    if name == b"te" and value.lower() != b"trailers":
        return f"Invalid value for TE header: {value!r}"
    if name in _CONNECTION_HEADERS:
        return f"Connection-specific header field present: {name!r}."
    return None


def request_error(headers: Headers) -> str | None:
    """Why a request's header block is malformed, or None: h2's `validate_headers` for a server."""
    seen: set[bytes] = set()
    regular = False
    method: bytes | None = None
    authority: bytes | None = None
    host: bytes | None = None
    for name, value in headers:
        error = _field_error(name, value)
        if error is not None:
            return error
        if name[0] == 0x3A:  # ":"
            if name in seen:
                return f"Received duplicate pseudo-header field {name!r}"
            seen.add(name)
            if regular:
                return f"Received pseudo-header field out of sequence: {name!r}"
            if name not in _PSEUDO:
                return f"Received custom pseudo-header field {name!r}"
            if name == b":method":
                method = value
            elif name == b":authority":
                authority = value
            elif name == b":path" and not value:
                return "An empty :path header is forbidden"
        else:
            regular = True
            if name == b"host":
                if host is not None:
                    return "Request header block has multiple Host headers."
                host = value
    return _pseudo_error(seen, method) or _authority_error(authority, host)


def _pseudo_error(seen: set[bytes], method: bytes | None) -> str | None:
    """RFC 9113 §8.3.1 and RFC 8441 §4: which pseudo-headers a request must and must not have."""
    if b":method" not in seen:
        return "Header block missing mandatory b':method' header"
    connect = method == b"CONNECT"
    if connect and b":protocol" not in seen:
        if b":scheme" in seen or b":path" in seen:
            return "Ordinary CONNECT MUST NOT include :scheme or :path"
    else:
        for required in (b":scheme", b":path"):
            if required not in seen:
                return f"Header block missing mandatory {required!r} header"
    if b":status" in seen:
        return "Encountered response-only headers {b':status'}"
    if not connect and b":protocol" in seen:
        return "Encountered connect-request-only headers {b':protocol'}"
    return None


def _authority_error(authority: bytes | None, host: bytes | None) -> str | None:
    if authority is None and host is None:
        return "Request header block does not have an :authority or Host header."
    if authority is not None and host is not None and authority != host:
        return f"Request header block has mismatched :authority and Host headers: {authority!r} / {host!r}"
    return None


def trailers_error(headers: Headers) -> str | None:
    """Why a trailer block is malformed, or None: the field checks, and no pseudo-header at all."""
    for name, value in headers:
        error = _field_error(name, value)
        if error is not None:
            return error
        if name[0] == 0x3A:
            return f"Received pseudo-header in trailer {name!r}"
    return None


def request_message(headers: Headers) -> tuple[RawRequestMessage | None, int]:
    """aiohttp's RawRequestMessage from an HTTP/2 header list, and the list's size as Go counts it."""
    method = path = authority = None
    fields: CIMultiDict[str] = CIMultiDict()
    raw: list[tuple[bytes, bytes]] = []
    size = 0
    for name, value in headers:
        size += len(name) + len(value) + 32
        if name[:1] == b":":
            if name == b":method":
                method = value.decode("ascii", "surrogateescape")
            elif name == b":path":
                path = value.decode("utf-8", "surrogateescape")
            elif name == b":authority":
                authority = value.decode("utf-8", "surrogateescape")
            continue
        raw.append((name, value))
        fields.add(name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
    if method is None or path is None:
        return None, size
    if authority is not None and "Host" not in fields:
        fields["Host"] = authority
        raw.append((b"host", authority.encode("utf-8", "surrogateescape")))
    if path.startswith("/"):
        # As aiohttp's HTTP/1.1 parser builds an origin-form target.
        path_part, _, fragment = path.partition("#")
        path_part, _, query = path_part.partition("?")
        url = URL.build(path=path_part, query_string=query, fragment=fragment, encoded=True)
    else:
        url = URL(path, encoded=True)
    message = RawRequestMessage(
        method, path, HttpVersion11, CIMultiDictProxy(fields), tuple(raw), False, None, False, False, url
    )
    return message, size
