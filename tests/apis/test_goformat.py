"""Go's renderings (apis/goformat.py) against what the Go servers print.

The expected texts were read off kube-apiserver and sample-apiserver 1.36.2: `go_quote` from the
message of an unknown field selector (`"<label>" is not a known field selector`, a `%q`), `go_json`
from a CRD's enum message (`supported values: ...`, json.Marshal), `smd_json` from the managedFields
kube-apiserver wrote for a set list and a map list.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apis.goformat import go_float, go_json, go_quote, smd_json


def _bytes(raw: bytes) -> str:
    """A Go string's bytes as the server decodes a request path or header: invalid UTF-8 kept."""
    return raw.decode("utf-8", "surrogateescape")


@pytest.mark.parametrize(
    ("text", "go"),
    [
        ("", '""'),
        ("metadata.name", '"metadata.name"'),
        ('a"b\\\\c', '"a\\"b\\\\\\\\c"'),
        ("\x00a\x01\a\b\f\n\r\t\v\x1b\x7f", '"\\x00a\\x01\\a\\b\\f\\n\\r\\t\\v\\x1b\\x7f"'),
        ("héllo世😀", '"héllo世😀"'),
        # Not printable for Go (a space other than U+0020, format and private-use characters, a
        # control character beyond ASCII, an unassigned code point, a plane-14 tag).
        (
            "\u00a0\u200b\u2028\u0085\ufeff\ue000\u0378\U000e0001",
            '"\\u00a0\\u200b\\u2028\\u0085\\ufeff\\ue000\\u0378\\U000e0001"',
        ),
        # Bytes that are not UTF-8 (an encoded surrogate, a stray continuation byte, 0xff).
        (_bytes(b"\xed\xa0\x80\x80\xff"), '"\\xed\\xa0\\x80\\x80\\xff"'),
        ("\ufffd", '"\ufffd"'),
        # A lone surrogate from a JSON escape, which Go's decoder made U+FFFD.
        ("\ud800", '"\ufffd"'),
    ],
)
def test_go_quote_as_go_prints_it(text: str, go: str) -> None:
    assert go_quote(text) == go


@given(st.text(st.characters(exclude_categories=["Cs"])))
def test_go_quote_reads_back_as_the_text_and_prints_nothing_unprintable(text: str) -> None:
    quoted = go_quote(text)
    # Go's escapes (\a \b \f \n \r \t \v \xNN \uNNNN \UNNNNNNNN \" \\) are Python's too.
    assert ast.literal_eval(quoted) == text
    assert quoted.isprintable()


@given(st.text(st.characters(codec="ascii", min_codepoint=0x20, max_codepoint=0x7E)))
def test_go_quote_of_printable_ascii_only_escapes_quote_and_backslash(text: str) -> None:
    assert go_quote(text) == '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (1.0, "1"),
        (0.5, "0.5"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (1e-5, "1e-05"),
        (-2.5, "-2.5"),
    ],
)
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (1e6, "1000000"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        ({"b": 1, "a": [True, None]}, '{"a":[true,null],"b":1}'),
    ],
)
def test_go_json(value: Any, text: str) -> None:
    assert go_json(value) == text


# A CRD's enum, as kube-apiserver lists it in "supported values".
_ENUM_FLOATS = [1e-7, 0.00001, 1e21, 1.2345678901234567e20, 0.1, 1.5e300, 5e-324, 1e-6]
_ENUM_FLOATS_GO = [
    *("1e-7", "0.00001", "1e+21", "123456789012345670000"),
    *("0.1", "1.5e+300", "5e-324", "0.000001"),
]
_STRINGS = ["<a&b>", "\u2028\u2029", "\x00\x1f\b\f\n\r\t\x7f", "é世😀"]


def test_go_json_as_kube_lists_an_enum() -> None:
    assert [go_json(f) for f in _ENUM_FLOATS] == _ENUM_FLOATS_GO
    assert go_json(_STRINGS) == (
        '["\\u003ca\\u0026b\\u003e","\\u2028\\u2029","\\u0000\\u001f\\b\\f\\n\\r\\t\x7f","é世😀"]'
    )


def test_smd_json_as_kube_writes_field_set_elements() -> None:
    # f:strs of a set list, f:items of a map list keyed by k and f (managedFields of kube-apiserver).
    assert [smd_json(s) for s in ["<&>", "\u2028\u2029", "\b\f\n\r\t\x7f\x01", "é世😀"]] == [
        '"\\u003c\\u0026\\u003e"',
        '"\\u2028\\u2029"',
        '"\\u0008\\u000c\\n\\r\\t\x7f\\u0001"',
        '"é世😀"',
    ]
    assert smd_json({"k": "<a>", "f": 1e-5}) == '{"f":0.00001,"k":"\\u003ca\\u003e"}'
    assert smd_json({"k": "b", "f": 1e-7}) == '{"f":1e-07,"k":"b"}'
    assert smd_json({"k": "c", "f": 2.0}) == '{"f":2,"k":"c"}'
    big = [smd_json(f) for f in [1.2345678901234567e20, 1e21, 2.5]]
    assert big == ["123456789012345670000", "1e+21", "2.5"]
    # A backslash before a "b" is not a backspace.
    assert smd_json("\\b\\f") == '"\\\\b\\\\f"'


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]), max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b, rel_tol=0)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b) and type(a) is type(b)


@given(_json_values)
def test_go_json_and_smd_json_read_back_as_the_value(value: Any) -> None:
    for text in (go_json(value), smd_json(value)):
        assert _same(json.loads(text), value)
        assert not any(c in text for c in "<>&\u2028\u2029")
