"""http2_headers decides as h2's own inbound check does: same blocks accepted, same rejected.

H2Protocol turns h2's `validate_inbound_headers` off and relies on this module, so any header
block h2 would reject must be rejected here too (and nothing h2 accepts may be refused).
"""

from __future__ import annotations

from typing import Any

import h2.exceptions
import pytest
from h2.utilities import HeaderValidationFlags, validate_headers
from hypothesis import given, settings
from hypothesis import strategies as st

from server.serving.http2_headers import request_error, trailers_error

REQUEST = HeaderValidationFlags(
    is_client=False, is_trailer=False, is_response_header=False, is_push_promise=False
)
TRAILER = HeaderValidationFlags(
    is_client=False, is_trailer=True, is_response_header=False, is_push_promise=False
)

GOOD_REQUEST = [
    (b":method", b"GET"),
    (b":scheme", b"https"),
    (b":authority", b"127.0.0.1:8443"),
    (b":path", b"/apis"),
    (b"accept", b"application/json"),
    (b"x-remote-user", b"admin"),
]

# Pieces that are each fine or each break one rule, so that generated blocks hit every branch.
NAMES = st.sampled_from(
    [
        b":method", b":scheme", b":authority", b":path", b":status", b":protocol", b":custom",
        b"host", b"te", b"connection", b"upgrade", b"keep-alive", b"transfer-encoding", b"cookie",
        b"accept", b"x-remote-user", b"Accept", b"x:y", b"", b"a b", b"caf\xc3\xa9", b"x\x7f",
    ]
)  # fmt: skip
VALUES = st.sampled_from(
    [
        b"", b"GET", b"CONNECT", b"https", b"/", b"/apis", b"127.0.0.1:8443", b"other:1", b"trailers",
        b"TRAILERS", b"gzip", b" lead", b"trail\t", b"a\x00b", b"a\nb", b"a\rb", b"caf\xc3\xa9", b"websocket",
    ]
)  # fmt: skip
FIELDS = st.lists(st.tuples(NAMES, VALUES), max_size=9)


def _h2_accepts(headers: list[tuple[bytes, bytes]], flags: HeaderValidationFlags) -> bool:
    try:
        list(validate_headers(headers, flags))
    except h2.exceptions.ProtocolError:
        return False
    return True


@settings(max_examples=3000, deadline=None)
@given(FIELDS)
def test_requests_are_judged_as_h2_judges_them(headers: list[tuple[bytes, bytes]]) -> None:
    assert (request_error(headers) is None) == _h2_accepts(headers, REQUEST), request_error(headers)


@settings(max_examples=3000, deadline=None)
@given(st.permutations(GOOD_REQUEST), FIELDS)
def test_near_valid_requests_are_judged_as_h2_judges_them(
    good: list[tuple[bytes, bytes]], extra: list[tuple[bytes, bytes]]
) -> None:
    # Mostly-valid blocks: the random lists above are nearly always bad for several reasons at once.
    headers = (
        [h for h in good if h[0].startswith(b":")] + extra + [h for h in good if not h[0].startswith(b":")]
    )
    assert (request_error(headers) is None) == _h2_accepts(headers, REQUEST), request_error(headers)


@settings(max_examples=2000, deadline=None)
@given(FIELDS)
def test_trailers_are_judged_as_h2_judges_them(headers: list[tuple[bytes, bytes]]) -> None:
    assert (trailers_error(headers) is None) == _h2_accepts(headers, TRAILER), trailers_error(headers)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({b":path": b""}, "empty :path"),
        ({b"accept": None, b"Accept": b"x"}, "uppercase name"),
        ({b"te": b"gzip"}, "TE other than trailers"),
        ({b"connection": b"close"}, "connection-specific field"),
        ({b"host": b"elsewhere"}, "Host differs from :authority"),
        ({b":scheme": None}, "no :scheme"),
        ({b"x-remote-user": b"a\r\nb: c"}, "CR LF in a value"),
    ],
)
def test_each_rule_rejects_a_request(change: dict[bytes, Any], why: str) -> None:
    headers = dict(GOOD_REQUEST)
    for name, value in change.items():
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    block = list(headers.items())
    assert request_error(block) is not None, why
    assert not _h2_accepts(block, REQUEST), why


def test_a_good_request_passes() -> None:
    assert request_error(GOOD_REQUEST) is None
    assert trailers_error([(b"grpc-status", b"0")]) is None
