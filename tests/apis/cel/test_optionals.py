"""kube's optional results and opaque library types: optionalOldSelf, format.named/validate, and
field selection on a library value refused at compile time.

optionalOldSelf: kube binds oldSelf to `optional.of(old)` on update and `optional.none()` on
create (apiextensions' schema/cel validation.go); cases mirror its validation_test.go transition
cases. format: kube's format_test.go returns optionals (`types.OptionalNone`,
`types.OptionalOf(list)`), compared here inside CEL. Opaque types: cel-go's checker reports
"type '<name>' does not support field selection" for a select on a type without fields.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from apis.cel import cost
from apis.cel.engine import NONE, CompileError, Environment, EvalError, optional_of
from apis.cel.library import KUBERNETES_LIBRARY

OBJECT = "map(string, dyn)"
ENV = Environment({"self": OBJECT, "oldSelf": optional_of(OBJECT)}, KUBERNETES_LIBRARY)
PLAIN = Environment({"self": OBJECT, "oldSelf": OBJECT}, KUBERNETES_LIBRARY)

NEW = {"n": 5, "items": [1, 2]}
OLD = {"n": 2, "items": [1]}

# expression → (value on create: oldSelf is optional.none(), value on update: optional.of(OLD)).
OLD_SELF: list[tuple[str, Any, Any]] = [
    ("oldSelf.hasValue()", False, True),
    ("oldSelf == optional.none()", True, False),
    ("oldSelf != optional.none()", False, True),
    ("oldSelf.orValue({'n': 0}).n", 0, 2),
    ("oldSelf.?n.orValue(-1)", -1, 2),
    ("oldSelf.?n == optional.none()", True, False),
    ("oldSelf.?missing.orValue(7)", 7, 7),
    ("oldSelf.or(optional.of({'n': 9})).value().n", 9, 2),
    ("type(oldSelf) == type(optional.none())", True, True),
    ("oldSelf.optMap(o, o.n).orValue(0)", 0, 2),
    ("!oldSelf.hasValue() || self.n >= oldSelf.value().n", True, True),
    ("oldSelf.hasValue() ? oldSelf.value().items.size() : 0", 0, 1),
    ("self.items.all(i, oldSelf.orValue({'items': []}).items.exists(o, o == i) || i == 2)", False, True),
    # A comprehension variable named oldSelf shadows the optional one.
    ("[1, 2].all(oldSelf, oldSelf > 0)", True, True),
]


@pytest.mark.parametrize(("expr", "on_create", "on_update"), OLD_SELF)
def test_optional_old_self_is_a_cel_optional(expr: str, on_create: Any, on_update: Any) -> None:
    program = ENV.compile(expr)
    assert program.evaluate({"self": NEW, "oldSelf": NONE}) == on_create
    assert program.evaluate({"self": NEW, "oldSelf": OLD}) == on_update


def test_optional_old_self_value_of_none_is_an_evaluation_error() -> None:
    with pytest.raises(EvalError, match=r"optional\.none\(\) dereference"):
        ENV.compile("oldSelf.value().n > 0").evaluate({"self": NEW, "oldSelf": NONE})


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        # oldSelf is optional(T): using it as T is a type error, as in kube.
        # (a field of an optional is an optional, as in cel-go: `oldSelf.n` is optional(dyn))
        ("oldSelf.n > 0", "found no matching overload for '_>_' applied to '(optional_type(dyn), int)'"),
        ("oldSelf + 1 == 2", "found no matching overload for '_+_'"),
    ],
)
def test_optional_old_self_is_typed_optional(expr: str, message: str) -> None:
    with pytest.raises(CompileError, match=re.escape(message)):
        ENV.compile(expr)


def test_plain_old_self_rules_take_no_detour() -> None:
    """Without an optional variable or result the program is the checked expression as it is."""
    program = PLAIN.compile("self.n >= oldSelf.n")
    assert program._optionals == ()
    assert program.evaluate({"self": NEW, "oldSelf": OLD}) is True


_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)

# kube's format_test.go expectations, and the optional operations its docs use.
FORMAT: list[tuple[str, Any]] = [
    ('format.dns1123Label().validate("my-label-name") == optional.none()', True),
    (f'format.dns1123Label().validate("contains a space") == optional.of([{_LABEL!r}])', True),
    ('format.byte().validate("aGVsbG8") == optional.of(["invalid base64"])', True),
    ('format.named("dns1123Label") == optional.of(format.dns1123Label())', True),
    ('format.named("unknown") == optional.none()', True),
    ('format.named("unknown").hasValue()', False),
    ('format.named("uri").hasValue()', True),
    ('format.named("unknown").orValue(format.uri()) == format.uri()', True),
    ('format.named("date").orValue(format.uri()) == format.date()', True),
    ('format.named("dns1123Label").value().validate("A").orValue([]).size()', 1),
    ('format.named("dns1123Label").value().validate("a").orValue(["fine"])', ["fine"]),
    ('format.datetime().validate("2020-01-32T00:00:00Z").value()', ["invalid datetime"]),
    ('type(format.named("uri")) == type(optional.none())', True),
    ('type(format.uri().validate("x")) == type(optional.none())', True),
    ('format.named("uri").optMap(f, f.validate("http://a").hasValue()).orValue(true)', False),
    ("format.named(self.fmt).or(optional.of(format.uri())).value() == format.uri()", True),
    ('format.named("dns1035Label").value().validate(self.fmt).orValue([""])[0]', ""),
]


@pytest.mark.parametrize(("expr", "value"), FORMAT)
def test_named_formats_return_cel_optionals(expr: str, value: Any) -> None:
    assert PLAIN.compile(expr).evaluate({"self": {"fmt": "nope"}, "oldSelf": {}}) == value


def test_named_format_value_of_none_is_an_evaluation_error() -> None:
    with pytest.raises(EvalError, match=r"optional\.none\(\) dereference"):
        PLAIN.compile('format.named("unknown").value() == format.uri()').evaluate({"self": {}, "oldSelf": {}})


# Field selection on an opaque library type: cel-go's checker message, at the selection.
OPAQUE: list[tuple[str, str]] = [
    (
        "quantity('1').value == '1'",
        "ERROR: <input>:1:14: type 'kubernetes.Quantity' does not support field selection\n"
        " | quantity('1').value == '1'\n"
        " | .............^",
    ),
    (
        "has(url('https://a').host)",
        "ERROR: <input>:1:4: type 'kubernetes.URL' does not support field selection\n"
        " | has(url('https://a').host)\n"
        " | ...^",
    ),
    (
        "ip('::1').?addr.hasValue()",
        "ERROR: <input>:1:10: type 'net.IP' does not support field selection\n"
        " | ip('::1').?addr.hasValue()\n"
        " | .........^",
    ),
    (
        "true &&\n  cidr('10.0.0.0/8').bits == 8",
        "ERROR: <input>:2:21: type 'net.CIDR' does not support field selection\n"
        " |   cidr('10.0.0.0/8').bits == 8\n"
        " | ....................^",
    ),
    (
        "[semver('1.0.0')].all(v, v.pre == '')",
        "ERROR: <input>:1:27: type 'kubernetes.Semver' does not support field selection\n"
        " | [semver('1.0.0')].all(v, v.pre == '')\n"
        " | ..........................^",
    ),
    (
        "format.named('uri').?name.hasValue()",
        "ERROR: <input>:1:20: type 'kubernetes.NamedFormat' does not support field selection\n"
        " | format.named('uri').?name.hasValue()\n"
        " | ...................^",
    ),
    (
        "format.named('uri').name.hasValue()",
        "ERROR: <input>:1:20: type 'kubernetes.NamedFormat' does not support field selection\n"
        " | format.named('uri').name.hasValue()\n"
        " | ...................^",
    ),
]


@pytest.mark.parametrize(("expr", "message"), OPAQUE)
def test_library_types_are_opaque(expr: str, message: str) -> None:
    with pytest.raises(CompileError) as raised:
        PLAIN.compile(expr)
    assert str(raised.value) == message


def test_selection_on_plain_values_still_compiles() -> None:
    assert PLAIN.compile("self.q == '1' && has(self.q)").evaluate({"self": {"q": "1"}, "oldSelf": {}}) is True


def test_optional_old_self_cost_follows_its_value() -> None:
    """`oldSelf.value().items` is as long as the old items: a walk over it costs per item."""
    program = ENV.compile("oldSelf.value().items.all(i, i > 0)")
    small = cost.estimate(program.tree, {"oldSelf": cost.value_shape({"items": [1] * 10})})
    large = cost.estimate(program.tree, {"oldSelf": cost.value_shape({"items": [1] * 1000})})
    assert large - small > 990 * 2
    orvalue = ENV.compile("oldSelf.orValue(self).items.all(i, i > 0)")
    assert cost.estimate(orvalue.tree, {"self": cost.value_shape({"items": [1] * 1000})}) > 2000


def test_authorizer_request_resource_stays_readable() -> None:
    """kube declares `authorizer.requestResource` as a variable; here it is a field of the
    Authorizer message, the one field read allowed (its other fields are opaque)."""
    from apis.cel import library_authz

    env = Environment(
        {"authorizer": library_authz.AUTHORIZER}, KUBERNETES_LIBRARY + library_authz.AUTHZ_LIBRARY
    )
    assert env.compile("authorizer.requestResource.check('get').allowed()").result_type == "bool"
    with pytest.raises(CompileError, match=re.escape("type 'kubernetes.authorization.Authorizer' does not")):
        env.compile("authorizer.sa_name == ''")
