"""Field selectors: operators, escaping, ordering, supported fields and the single-name shortcut."""

from __future__ import annotations

import pytest

from apis.meta.fields import (
    default_label_error,
    escape_value,
    object_meta_fields_set,
    one_term_equal_selector,
    parse_field_selector,
    single_name,
    unescape_value,
)
from apis.meta.labels import SelectorError


@pytest.mark.parametrize(
    ("text", "requirements", "canonical"),
    [
        ("", [], ""),
        (",", [], ""),
        ("metadata.name=foo", [("metadata.name", "=", "foo")], "metadata.name=foo"),
        ("metadata.name==foo", [("metadata.name", "=", "foo")], "metadata.name=foo"),
        ("metadata.name!=foo", [("metadata.name", "!=", "foo")], "metadata.name!=foo"),
        ("metadata.name=", [("metadata.name", "=", "")], "metadata.name="),
        ("b=1,a=2", [("a", "=", "2"), ("b", "=", "1")], "a=2,b=1"),  # terms sorted by raw text
        ("a=!b", [("a", "=", "!b")], "a=!b"),
        ("a!==b", [], None),  # "!=" splits first, leaving an unescaped "=" in the value
        ("x=a\\,b,y=c", [("x", "=", "a,b"), ("y", "=", "c")], "x=a\\,b,y=c"),
        ("x=a\\=b", [("x", "=", "a=b")], "x=a\\=b"),
        ("x=a\\\\b", [("x", "=", "a\\b")], "x=a\\\\b"),
        ("a = b", [("a ", "=", " b")], "a = b"),  # no whitespace trimming
    ],
)
def test_parse(text: str, requirements: list[tuple[str, str, str]], canonical: str | None) -> None:
    if canonical is None:
        with pytest.raises(SelectorError):
            parse_field_selector(text)
        return
    sel = parse_field_selector(text)
    assert sel.requirements == requirements
    assert str(sel) == canonical
    assert sel.empty is (not requirements)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
        ("a=b,foo", "invalid selector: 'a=b,foo'; can't understand 'foo'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a=b\\,c,d=e,f", "invalid selector: 'a=b\\,c,d=e,f'; can't understand 'f'"),
        ("a=b\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse_field_selector(text)
    assert str(exc.value) == message


def test_unescaped_comma_in_value_is_reported_as_its_code_point() -> None:
    with pytest.raises(SelectorError, match=r"unescaped character in value: 44$"):
        unescape_value("a,b")


@pytest.mark.parametrize("value", ["plain", "", "a,b", "a=b", "a\\b", "\\,=\\\\", "ü,=x"])
def test_escape_round_trip(value: str) -> None:
    escaped = escape_value(value)
    assert unescape_value(escaped) == value
    sel = parse_field_selector("f=" + escaped)
    assert sel.requirements == [("f", "=", value)]
    assert str(sel) == "f=" + escaped


def test_escape_value_matches_go() -> None:
    assert escape_value("a\\b,c=d") == "a\\\\b\\,c\\=d"


@pytest.mark.parametrize(
    ("text", "fields", "matches"),
    [
        ("", {"metadata.name": "x"}, True),
        ("metadata.name=x", {"metadata.name": "x"}, True),
        ("metadata.name=x", {"metadata.name": "y"}, False),
        ("metadata.name!=x", {"metadata.name": "y"}, True),
        ("metadata.name!=x", {"metadata.name": "x"}, False),
        ("metadata.namespace=", {"metadata.name": "x"}, True),  # absent field reads as ""
        ("metadata.namespace!=", {"metadata.name": "x"}, False),
        ("metadata.name=x,metadata.namespace=ns", {"metadata.name": "x", "metadata.namespace": "ns"}, True),
        ("metadata.name=x,metadata.namespace=ns", {"metadata.name": "x", "metadata.namespace": "o"}, False),
    ],
)
def test_matches(text: str, fields: dict[str, str], matches: bool) -> None:
    assert parse_field_selector(text).matches(fields) is matches


def test_check_supported_names_first_unsupported_field() -> None:
    allowed = {"metadata.name", "metadata.namespace"}
    parse_field_selector("metadata.name=a,metadata.namespace!=b").check_supported(allowed)
    with pytest.raises(SelectorError) as exc:
        parse_field_selector("spec.foo=bar").check_supported(allowed)
    assert str(exc.value) == "field label not supported: spec.foo"
    with pytest.raises(SelectorError) as exc:
        parse_field_selector("status.z=1,spec.a=1,metadata.name=x").check_supported(allowed)
    assert str(exc.value) == "field label not supported: spec.a"
    with pytest.raises(SelectorError, match=r"field label not supported: metadata\.namespace$"):
        parse_field_selector("metadata.namespace=x").check_supported({"metadata.name"})


def test_a_scheme_words_an_unknown_label_as_its_default_conversion() -> None:
    # runtime.DefaultMetaV1FieldSelectorConversion: %q of the label (sample-apiserver 1.36.2's text).
    allowed = {"metadata.name", "metadata.namespace"}
    with pytest.raises(SelectorError) as exc:
        parse_field_selector("spec.reference=x").check_supported(allowed, default_label_error)
    assert str(exc.value) == (
        '"spec.reference" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    assert default_label_error("a\x01").startswith('"a\\x01" is not')


def test_single_name() -> None:
    assert single_name(parse_field_selector("metadata.name=margherita")) == "margherita"
    assert single_name(parse_field_selector("metadata.name==margherita")) == "margherita"
    assert single_name(parse_field_selector("metadata.name!=margherita")) is None
    assert single_name(parse_field_selector("metadata.name=a,metadata.namespace=b")) is None
    assert single_name(parse_field_selector("metadata.namespace=a")) is None
    assert single_name(parse_field_selector("")) is None
    assert single_name(one_term_equal_selector("metadata.name", "x")) == "x"


def test_requires_exact_match_like_go() -> None:
    sel = parse_field_selector("metadata.name=a,metadata.namespace=b")
    assert sel.requires_exact_match("metadata.name") == "a"
    assert sel.requires_exact_match("spec.x") is None
    assert parse_field_selector("metadata.name!=a").requires_exact_match("metadata.name") is None


def test_object_meta_fields_set() -> None:
    meta = {"name": "p", "namespace": "ns", "labels": {"a": "b"}}
    assert object_meta_fields_set(meta, namespaced=True) == {"metadata.name": "p", "metadata.namespace": "ns"}
    assert object_meta_fields_set(meta, namespaced=False) == {"metadata.name": "p"}
