"""Label selectors: parsing, canonical strings, matching and kube's error texts."""

from __future__ import annotations

from typing import Any

import pytest

from apis.meta.labels import (
    NOTHING,
    Operator,
    SelectorError,
    new_requirement,
    parse_label_selector,
    selector_from_label_selector_dict,
    selector_from_set,
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


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("   ", ""),
        ("a=b", "a=b"),
        ("a==b", "a==b"),
        ("a!=b", "a!=b"),
        ("a", "a"),
        ("!a", "!a"),
        ("! a", "!a"),
        ("a in (b)", "a in (b)"),
        ("a notin (c,b)", "a notin (b,c)"),
        ("a in (b,b)", "a in (b)"),
        ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"),
        ("a in (,)", "a in ()"),
        ("a=", "a="),
        ("a=,b", "a=,b"),
        (" a = b , c != d ", "a=b,c!=d"),
        ("a\t=\nb", "a=b"),
        ("z=1,a=2,m", "a=2,m,z=1"),
        ("a>1", "a>1"),
        ("a<10", "a<10"),
        ("in in (in,notin)", "in in (in,notin)"),
        ("notin", "notin"),
        ("example.com/app=pizza", "example.com/app=pizza"),
        ("a=b\0ignored", None),  # a NUL ends an identifier in Go's lexer, not the input
    ],
)
def test_parse_and_canonical_string(text: str, canonical: str | None) -> None:
    if canonical is None:
        with pytest.raises(SelectorError):
            parse_label_selector(text)
        return
    assert str(parse_label_selector(text)) == canonical


def test_empty_selector_matches_everything() -> None:
    sel = parse_label_selector("")
    assert sel.empty
    assert sel.matches({}) and sel.matches({"a": "b"})
    assert not parse_label_selector("a").empty


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a==b", {"a": "b"}, True),
        ("a!=b", {"a": "c"}, True),
        ("a!=b", {}, True),  # != matches when the label is absent
        ("a!=b", {"a": "b"}, False),
        ("a in (b,c)", {"a": "c"}, True),
        ("a in (b,c)", {"a": "d"}, False),
        ("a in (b,c)", {}, False),
        ("a notin (b,c)", {"a": "d"}, True),
        ("a notin (b,c)", {}, True),
        ("a notin (b,c)", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": "x"}, False),
        ("!a", {"b": "x"}, True),
        ("!a", {"a": "x"}, False),
        ("a=", {"a": ""}, True),
        ("a=", {}, False),
        ("a in ()", {"a": ""}, True),
        ("a>1", {"a": "2"}, True),
        ("a>1", {"a": "1"}, False),
        ("a>1", {"a": "x"}, False),
        ("a>1", {}, False),
        ("a<1", {"a": "0"}, True),
        ("a=b,c", {"a": "b", "c": "z"}, True),
        ("a=b,c", {"a": "b"}, False),
    ],
)
def test_matches(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(text).matches(labels) is matches


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,=b", "found '=', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a==b==c", "found '==', expected: ',' or 'end of string'"),
        (
            "app:monolith",
            'unable to parse requirement: <nil>: Invalid value: "app:monolith": ' + KEY_NAME_MSG,
        ),
        (
            "app.kubernetes_io/name=x",
            'unable to parse requirement: <nil>: Invalid value: "app.kubernetes_io/name": '
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        ("a=-bad", 'unable to parse requirement: values[0][a]: Invalid value: "-bad": ' + VALUE_MSG),
        (
            "a in (-x,-y)",
            'unable to parse requirement: [values[0][a]: Invalid value: "-x": '
            + VALUE_MSG
            + ', values[1][a]: Invalid value: "-y": '
            + VALUE_MSG
            + "]",
        ),
        (
            "a=" + "v" * 64,
            f'unable to parse requirement: values[0][a]: Invalid value: "{"v" * 64}": '
            "must be no more than 63 bytes",
        ),
        (
            "a>b",
            'unable to parse requirement: values[0]: Invalid value: "b": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("a>-1", 'unable to parse requirement: values[0][a]: Invalid value: "-1": ' + VALUE_MSG),
    ],
)
def test_parse_errors_carry_kube_text(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse_label_selector(text)
    assert str(exc.value) == message
    assert isinstance(exc.value, ValueError)


def test_requires_exact_match() -> None:
    assert parse_label_selector("a=b,c=d").requires_exact_match("c") == "d"
    assert parse_label_selector("a in (b)").requires_exact_match("a") == "b"
    assert parse_label_selector("a in (b,c)").requires_exact_match("a") is None
    assert parse_label_selector("a!=b").requires_exact_match("a") is None
    assert parse_label_selector("x=y").requires_exact_match("a") is None


def test_new_requirement_validates_counts() -> None:
    with pytest.raises(SelectorError, match=r"^values: Invalid value: \[\]: for 'in', 'notin' operators"):
        new_requirement("a", Operator.IN, [])
    with pytest.raises(SelectorError, match="exact-match compatibility requires one single value"):
        new_requirement("a", Operator.EQUALS, ["x", "y"])
    with pytest.raises(SelectorError, match="values set must be empty for exists and does not exist"):
        new_requirement("a", Operator.EXISTS, ["x"])
    with pytest.raises(SelectorError, match=r'^key: Invalid value: "-a": name part must consist'):
        new_requirement("-a", Operator.EXISTS)


def test_selector_from_set() -> None:
    sel = selector_from_set({"b": "2", "a": "1"})
    assert str(sel) == "a=1,b=2"
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})
    assert selector_from_set(None).empty


@pytest.mark.parametrize(
    ("spec", "canonical", "labels", "matches"),
    [
        ({}, "", {"x": "y"}, True),
        ({"matchLabels": {"app": "pizza"}}, "app=pizza", {"app": "pizza"}, True),
        (
            {
                "matchLabels": {"tier": "front"},
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                    {"key": "legacy", "operator": "DoesNotExist"},
                    {"key": "app", "operator": "Exists"},
                    {"key": "zone", "operator": "NotIn", "values": ["b"]},
                ],
            },
            "app,env in (dev,prod),!legacy,tier=front,zone notin (b)",
            {"tier": "front", "env": "dev", "app": "x"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
            "env in (prod)",
            {},
            False,
        ),
    ],
)
def test_selector_from_label_selector_dict(
    spec: dict[str, Any], canonical: str, labels: dict[str, str], matches: bool
) -> None:
    sel = selector_from_label_selector_dict(spec)
    assert str(sel) == canonical
    assert sel.matches(labels) is matches


def test_nil_label_selector_selects_nothing() -> None:
    sel = selector_from_label_selector_dict(None)
    assert sel is NOTHING
    assert not sel.empty
    assert not sel.matches({})
    assert str(sel) == ""


def test_label_selector_dict_errors() -> None:
    with pytest.raises(SelectorError) as exc:
        selector_from_label_selector_dict(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}
        )
    assert str(exc.value) == '"Gt" is not a valid pod selector operator'
    with pytest.raises(SelectorError) as exc:
        selector_from_label_selector_dict({"matchExpressions": [{"key": "a", "operator": "In"}]})
    assert (
        str(exc.value) == "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
    )
    with pytest.raises(SelectorError) as exc:
        selector_from_label_selector_dict({"matchLabels": {"a": "b c"}})
    assert str(exc.value) == 'values[0][a]: Invalid value: "b c": ' + VALUE_MSG
