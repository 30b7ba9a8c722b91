"""Name rules and their messages, checked against the strings kube-apiserver returns."""

from __future__ import annotations

import pytest

from apis.meta.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
    regex_error,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def test_regex_error_formats_examples_like_go() -> None:
    assert regex_error("m", "re") == "m (regex used for validation is 're')"
    assert regex_error("m", "re", "a", "b") == "m (e.g. 'a',  or 'b', regex used for validation is 're')"


@pytest.mark.parametrize(
    "value",
    [
        "a",
        "abc",
        "a-1",
        "0",
        "1--a--b--2",
        "a.b.c",
        "example.com",
        "1.2.3.4",
        "a" * 253,
        ("a" * 63 + ".") * 3 + "a",
    ],
)
def test_dns1123_subdomain_accepts(value: str) -> None:
    assert is_dns1123_subdomain(value) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", [SUBDOMAIN_MSG]),
        ("Upper", [SUBDOMAIN_MSG]),
        ("a_b", [SUBDOMAIN_MSG]),
        ("-a", [SUBDOMAIN_MSG]),
        ("a-", [SUBDOMAIN_MSG]),
        ("a..b", [SUBDOMAIN_MSG]),
        (".a", [SUBDOMAIN_MSG]),
        ("a.", [SUBDOMAIN_MSG]),
        ("a\n", [SUBDOMAIN_MSG]),  # Go's $ does not match before a trailing newline
        ("a" * 254, ["must be no more than 253 characters"]),
        ("A" * 254, ["must be no more than 253 characters", SUBDOMAIN_MSG]),
    ],
)
def test_dns1123_subdomain_rejects_with_kube_messages(value: str, expected: list[str]) -> None:
    assert is_dns1123_subdomain(value) == expected


def test_lengths_count_utf8_bytes_like_go() -> None:
    # 127 two-byte characters = 254 bytes: too long for Go's len() even though only 127 characters.
    assert is_dns1123_subdomain("é" * 127)[0] == "must be no more than 253 characters"
    assert is_valid_label_value("é" * 32)[0] == "must be no more than 63 bytes"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("my-name", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("a.b", ["must not contain dots"]),
        ("A", [LABEL_MSG]),
        ("", [LABEL_MSG]),
        ("a_b", [LABEL_MSG]),
    ],
)
def test_dns1123_label(value: str, expected: list[str]) -> None:
    assert is_dns1123_label(value) == expected


def test_dns1035_label_requires_leading_letter() -> None:
    assert is_dns1035_label("abc-123") == []
    assert is_dns1035_label("1abc") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
        "start with an alphabetic character, and end with an alphanumeric character "
        "(e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


@pytest.mark.parametrize(
    "value",
    [
        "simple",
        "Uppercase_Is_OK_123",
        "1234",
        "example.com/Uppercase_Is_OK_123",
        "now-with.dashes-and.dots/simple",
        "a" * 63,
        "a" * 253 + "/" + "b" * 63,
    ],
)
def test_qualified_name_accepts(value: str) -> None:
    assert is_qualified_name(value) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cantendwithadash-", [KEY_NAME_MSG]),
        ("nospecialchars%^=@", [KEY_NAME_MSG]),
        ("", ["name part must be non-empty", KEY_NAME_MSG]),
        ("example.com/", ["name part must be non-empty", KEY_NAME_MSG]),
        ("/simple", ["prefix part must be non-empty"]),
        ("a" * 64, ["name part must be no more than 63 bytes"]),
        ("Example.com/abc", ["prefix part " + SUBDOMAIN_MSG]),
        (
            "a" * 254 + "/abc",
            ["prefix part must be no more than 253 bytes"],
        ),
        (
            "only/one/slash",
            [
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
                "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
    ],
)
def test_qualified_name_rejects_with_kube_messages(value: str, expected: list[str]) -> None:
    assert is_qualified_name(value) == expected


@pytest.mark.parametrize("value", ["", "simple", "now-with-dashes", "1234", "a_b.c", "a" * 63])
def test_label_value_accepts(value: str) -> None:
    assert is_valid_label_value(value) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-starts-with-dash", [VALUE_MSG]),
        ("ends.with.dot.", [VALUE_MSG]),
        ("Tama-nui-te-rā", [VALUE_MSG]),
        ("a b", [VALUE_MSG]),
        ("a" * 64, ["must be no more than 63 bytes"]),
    ],
)
def test_label_value_rejects_with_kube_messages(value: str, expected: list[str]) -> None:
    assert is_valid_label_value(value) == expected


@pytest.mark.parametrize(
    ("name", "prefix", "ok"),
    [
        ("pizza-", True, True),  # generateName may end with a dash
        ("pizza-", False, False),
        ("p-", True, True),
        ("-", True, True),
        ("Pizza-", True, False),
        ("a" * 253, False, True),
        ("a" * 254, False, False),
        ("my.pizza", False, True),
    ],
)
def test_name_is_dns_subdomain(name: str, prefix: bool, ok: bool) -> None:
    assert (name_is_dns_subdomain(name, prefix) == []) is ok


def test_name_is_dns_label_rejects_dots_but_masks_trailing_dash() -> None:
    assert name_is_dns_label("ns-", True) == []
    assert name_is_dns_label("my.ns", False) == ["must not contain dots"]
