"""Body decoding: the orjson fast path must answer exactly as the duplicate-tracking parser does.

The fast path trusts orjson only when the body's key tokens match the keys orjson kept; these cases
are the ones where a miscount would hide a duplicate or change a value.
"""

from __future__ import annotations

import json

import pytest

from apis.meta.errors import StatusError
from server.endpoints.body import MAX_DEPTH, _plain_json, decode

JSON = "application/json"


@pytest.mark.parametrize(
    ("raw", "duplicates"),
    [
        (b'{"a": 1, "a": 2}', ["a"]),
        (b'{"spec": {"cost": 1, "cost": 2}}', ["spec.cost"]),
        # Keys ending in a backslash: a naive `(?<!\\)"` count would miss both tokens of "b".
        (b'{"a\\\\": 1, "b": 1, "b": 2}', ["b"]),
        # A value holding `":` and escaped quotes is no key.
        (b'{"a": "x\\": y", "b": ["\\":", "\\\\"], "c": 1, "c": 3}', ["c"]),
        (b'{"a": {"b": 1}, "a": {"b": 2}}', ["a"]),
        (b'[{"k": 1, "k": 1}, {"k": 2}]', ["[0].k"]),
        (b'{"a": "x\\": y", "b": ["\\":", "\\\\"]}', []),
        (b'{"a\\\\": 1, "b": {"c": "\\"d\\":"}}', []),
        (b'{ "a" :1 , "b"\n:\t2 }', []),
    ],
)
def test_duplicates_found_as_the_tracking_parser_finds_them(raw: bytes, duplicates: list[str]) -> None:
    value, found = decode(raw, JSON, track_duplicates=True)
    assert found == duplicates
    assert value == json.loads(raw)  # the last duplicate wins, as in Go
    assert (_plain_json(raw) is None) == bool(duplicates)


def test_values_orjson_would_keep_but_go_would_not_take_the_slow_path() -> None:
    # Beyond int64 Go decodes a float64; orjson keeps an int up to 2**64 - 1.
    value, _ = decode(b'{"n": 18446744073709551615}', JSON, track_duplicates=True)
    assert value == {"n": 1.8446744073709552e19} and isinstance(value["n"], float)
    # A lone surrogate becomes U+FFFD, as Go's decoder makes it.
    value, _ = decode(b'{"s": "\\ud800"}', JSON, track_duplicates=True)
    assert value == {"s": "\ufffd"}


def test_depth_cap_applies_on_both_paths() -> None:
    # The root is at depth 0: MAX_DEPTH + 1 arrays nest, one more is refused (as before the fast path).
    deep = b"[" * (MAX_DEPTH + 2) + b"]" * (MAX_DEPTH + 2)
    for track in (True, False):
        with pytest.raises(StatusError) as err:
            decode(deep, JSON, track_duplicates=track)
        assert err.value.code == 400 and "nesting deeper than" in err.value.message
    ok = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    assert decode(ok, JSON, track_duplicates=True)[1] == []
