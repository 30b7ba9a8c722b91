"""The continue token must be byte-compatible with kube's (pkg/storage/continue.go) and refuse tokens that
would range outside the listed prefix."""

from __future__ import annotations

import base64
import json

import pytest

from storage.continuation import InvalidContinue, decode_continue, encode_continue

PREFIX = "/pizzas/"


def token_of(payload: bytes | str) -> str:
    raw = payload.encode() if isinstance(payload, str) else payload
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_encode_matches_go_json_and_raw_url_base64() -> None:
    # printf '{"v":"meta.k8s.io/v1","rv":42,"start":"default/margherita\u0000"}' | basenc --base64url
    token = encode_continue("/pizzas/default/margherita\x00", PREFIX, 42)
    assert token == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDIsInN0YXJ0IjoiZGVmYXVsdC9tYXJnaGVyaXRhXHUwMDAwIn0"
    assert "=" not in token


def test_encode_escapes_like_go_encoding_json() -> None:
    token = encode_continue("/pizzas/a<b>&c\u2028\x01\n\x7fé\x00", PREFIX, 7)
    decoded = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    assert (
        decoded
        == '{"v":"meta.k8s.io/v1","rv":7,"start":"a\\u003cb\\u003e\\u0026c\\u2028\\u0001\\n\x7fé\\u0000"}'
    )


def test_round_trip_returns_prefixed_start_key_and_revision() -> None:
    token = encode_continue("/pizzas/default/margherita\x00", PREFIX, 42)
    assert decode_continue(token, PREFIX) == ("/pizzas/default/margherita\x00", 42)


def test_encode_refuses_key_outside_prefix() -> None:
    with pytest.raises(ValueError, match="do not match"):
        encode_continue("/toppings/cheese\x00", PREFIX, 1)


def test_decode_accepts_start_with_or_without_leading_slash() -> None:
    for start in ["default/a\x00", "/default/a\x00"]:
        token = token_of(json.dumps({"v": "meta.k8s.io/v1", "rv": 3, "start": start}))
        assert decode_continue(token, PREFIX) == ("/pizzas/default/a\x00", 3)


def test_decode_matches_field_names_case_insensitively_and_last_duplicate_wins() -> None:
    token = token_of('{"V":"meta.k8s.io/v1","Rv":1,"rv":9,"\u017ftart":"x","unknown":[1,{"a":null}]}')
    assert decode_continue(token, PREFIX) == ("/pizzas/x", 9)


@pytest.mark.parametrize(
    "start",
    ["../toppings/x", "a/../../toppings", "a//b", "./a", "a/.", "a/", "/.."],
)
def test_decode_rejects_path_traversal_and_unclean_keys(start: str) -> None:
    token = token_of(json.dumps({"v": "meta.k8s.io/v1", "rv": 5, "start": start}))
    with pytest.raises(InvalidContinue, match="continue key is not valid"):
        decode_continue(token, PREFIX)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('{"v":"meta.k8s.io/v1","rv":0,"start":"a"}', "incorrect encoded start resourceVersion"),
        ('{"v":"meta.k8s.io/v1","start":"a"}', "incorrect encoded start resourceVersion"),
        ('{"v":"meta.k8s.io/v1","rv":3,"start":""}', "encoded start key empty"),
        (
            '{"v":"meta.k8s.io/v2","rv":3,"start":"a"}',
            "does not recognize this encoded version meta.k8s.io/v2",
        ),
        ("null", "does not recognize this encoded version"),
        ('{"v":"meta.k8s.io/v1","rv":1.5,"start":"a"}', "cannot unmarshal number 1.5"),
        ('{"v":"meta.k8s.io/v1","rv":"3","start":"a"}', "cannot unmarshal string"),
        ('{"v":"meta.k8s.io/v1","rv":9223372036854775808,"start":"a"}', "cannot unmarshal number"),
        ('{"v":1,"rv":3,"start":"a"}', "cannot unmarshal number"),
        ('{"v":"meta.k8s.io/v1","rv":NaN,"start":"a"}', "continue key is not valid"),
        ('["meta.k8s.io/v1"]', "cannot unmarshal array"),
        ("{", "continue key is not valid"),
    ],
)
def test_decode_rejects_malformed_tokens(payload: str, message: str) -> None:
    with pytest.raises(InvalidContinue, match=message):
        decode_continue(token_of(payload), PREFIX)


@pytest.mark.parametrize(
    ("token", "offset"),
    [("e30=", 3), ("e3+0", 2), ("e3/0", 2), ("e30A\n\nA", 6), ("!", 0)],
)
def test_decode_rejects_non_raw_url_base64_with_go_offsets(token: str, offset: int) -> None:
    with pytest.raises(InvalidContinue, match=f"illegal base64 data at input byte {offset}$"):
        decode_continue(token, PREFIX)


def test_decode_ignores_newlines_like_go() -> None:
    token = encode_continue("/pizzas/a\x00", PREFIX, 8)
    assert decode_continue(token[:4] + "\r\n" + token[4:], PREFIX) == ("/pizzas/a\x00", 8)


def test_decode_replaces_invalid_utf8_byte_by_byte() -> None:
    payload = b'{"v":"meta.k8s.io/v1","rv":2,"start":"a\xe2\x82b"}'
    assert decode_continue(token_of(payload), PREFIX) == ("/pizzas/a\ufffd\ufffdb", 2)
