"""kube's quantity, URL, IP, CIDR and semver libraries: a subset of kube's own table tests.

Cases come from k8s.io/apiserver/pkg/cel/library/{quantity,ip,cidr,semver}_test.go (same
expressions, same expected values and error texts) plus URL cases from kube's CEL documentation
and Go's net/url behaviour. Each expression is compiled and run by our engine with the Kubernetes
library, exactly as a schema rule is.
"""

from __future__ import annotations

from typing import Any

import pytest

from apis.cel import cost
from apis.cel.engine import CompileError, Environment, EvalError
from apis.cel.library import KUBERNETES_LIBRARY

ENV = Environment({"self": "map(string, dyn)"}, KUBERNETES_LIBRARY)

QUANTITY: list[tuple[str, Any]] = [
    ('quantity("12Mi") == quantity("12582912")', True),
    ('isQuantity("20")', True),
    ('isQuantity("20M")', True),
    ('isQuantity("20Mi")', True),
    ('isQuantity("20Mo")', False),
    ('isQuantity("10Mm")', False),
    ('quantity("200M") == quantity("200M")', True),
    ('quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', True),
    (
        'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") '
        '&& quantity("0.002G") == quantity("2000k")',
        True,
    ),
    ('quantity("200M") == quantity("0.3G")', False),
    ('quantity("50M").isLessThan(quantity("50Mi"))', True),
    ('quantity("50M").isLessThan(quantity("100M"))', True),
    ('quantity("100M").isLessThan(quantity("50M"))', False),
    ('quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ('quantity("50M").isGreaterThan(quantity("100M"))', False),
    ('quantity("200M").compareTo(quantity("0.2G"))', 0),
    ('quantity("50M").compareTo(quantity("50Mi"))', -1),
    ('quantity("50Mi").compareTo(quantity("50M"))', 1),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    ('quantity("50k").sub(20) == quantity("49980")', True),
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20),
    ('quantity("50k").asInteger()', 50000),
    ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ('quantity("50").isInteger()', True),
    ('quantity("50.703k").asApproximateFloat()', 50703.0),
    (
        '[quantity("9999999999999999999999999999999999999")].all(x, '
        'x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)',
        True,
    ),
    # apimachinery's parser beyond kube's table: exponents, nano rounding (up), signs, binary.
    ('quantity("1e3") == quantity("1k") && quantity("1E3") == quantity("1k")', True),
    ('quantity("1Ki") == quantity("1024")', True),
    ('quantity("0.0000000001") == quantity("1n")', True),
    ('quantity(".5") == quantity("500m")', True),
    ('sign(quantity("-1m")) == -1 && sign(quantity("0")) == 0 && sign(quantity("+3")) == 1', True),
    ('quantity("1.5").isInteger()', False),
]

QUANTITY_ERRORS = [
    (
        'quantity("10Mo")',
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    ('quantity("10Mm")', "unable to parse quantity's suffix"),
    ('quantity("")', "quantities must match the regular expression"),
    ('quantity("9999999999999999999999999999999999999G").asInteger()', "cannot convert value to integer"),
]

IP: list[tuple[str, Any]] = [
    ('ip("192.168.0.1") == ip("192.168.0.1")', True),
    ('isIP("192.168.0.1")', True),
    ('isIP("192.168.0.1.0")', False),
    ('ip.isCanonical("127.0.0.1")', True),
    ('ip("192.168.0.1").family()', 4),
    ('ip("0.0.0.0").isUnspecified()', True),
    ('ip("127.0.0.1").isUnspecified()', False),
    ('ip("127.0.0.1").isLoopback()', True),
    ('ip("1.2.3.4").isLoopback()', False),
    ('ip("224.0.0.1").isLinkLocalMulticast()', True),
    ('ip("224.0.1.1").isLinkLocalMulticast()', False),
    ('ip("169.254.169.254").isLinkLocalUnicast()', True),
    ('ip("192.168.0.1").isLinkLocalUnicast()', False),
    ('ip("192.168.0.1").isGlobalUnicast()', True),
    ('ip("255.255.255.255").isGlobalUnicast()', False),
    ('isIP("2001:db8::68")', True),
    ('isIP("2001:db8:::68")', False),
    ('ip.isCanonical("2001:db8::68")', True),
    ('ip.isCanonical("2001:DB8::68")', False),
    ('ip("2001:db8::68").family()', 6),
    ('ip("::").isUnspecified()', True),
    ('ip("::1").isUnspecified()', False),
    ('ip("::1").isLoopback()', True),
    ('ip("2001:db8::abcd").isLoopback()', False),
    ('ip("ff02::1").isLinkLocalMulticast()', True),
    ('ip("fd00::1").isLinkLocalMulticast()', False),
    ('ip("fe80::1").isLinkLocalUnicast()', True),
    ('ip("fd80::1").isLinkLocalUnicast()', False),
    ('ip("2001:db8::abcd").isGlobalUnicast()', True),
    ('ip("ff00::1").isGlobalUnicast()', False),
    ('string(ip("192.168.0.1"))', "192.168.0.1"),
    ('type(ip("192.168.0.1")) == net.IP', True),
    ('ip("2001:DB8:0::68") == ip("2001:db8::68")', True),  # netip's ==, not the text's
]

IP_ERRORS = [
    (
        'ip("192.168.0.1.0")',
        'IP Address "192.168.0.1.0" parse error during conversion from string: '
        'ParseAddr("192.168.0.1.0"): IPv4 address too long',
    ),
    (
        'ip("2001:db8:::68")',
        'IP Address "2001:db8:::68" parse error during conversion from string: ParseAddr("2001:db8:::68"): '
        'each colon-separated field must have at least one digit (at ":68")',
    ),
    (
        'ip.isCanonical("127.0.0.1.0")',
        'IP Address "127.0.0.1.0" parse error during conversion from string: '
        'ParseAddr("127.0.0.1.0"): IPv4 address too long',
    ),
    ('ip("::ffff:1.2.3.4")', 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ('ip("fe80::1%eth0")', 'IP address "fe80::1%eth0" with zone value is not allowed'),
]

CIDR: list[tuple[str, Any]] = [
    ('cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))', True),
    ('cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))', False),
    ('cidr("192.168.0.0/24").containsIP("192.168.0.1")', True),
    ('cidr("192.168.0.0/24").containsIP("192.168.1.1")', False),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32"))', True),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))', False),
    ('cidr("192.168.0.0/24").containsCIDR(cidr("192.169.0.1/32"))', False),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")', True),
    ('cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")', False),
    ('cidr("192.168.0.0/24").ip() == ip("192.168.0.0")', True),
    ('cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")', True),
    ('cidr("192.168.0.0/24").prefixLength()', 24),
    ('cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))', True),
    ('cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))', False),
    ('cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))', True),
    ('cidr("2001:db8::/32").containsCIDR("2001:db8::/31")', False),
    ('cidr("2001:db8::/32").ip() == ip("2001:db8::")', True),
    ('cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")', True),
    ('cidr("2001:db8::/32").prefixLength()', 32),
    ('string(cidr("192.168.0.0/24"))', "192.168.0.0/24"),
    ('type(cidr("192.168.0.0/24")) == net.CIDR', True),
    ('cidr("192.168.0.1/24") == cidr("192.168.0.0/24")', False),  # a prefix keeps its host bits
    ('isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0/08") && !isCIDR("10.0.0.0/33")', True),
]

CIDR_ERRORS = [
    (
        'cidr("192.168.0.0/")',
        "network address parse error during conversion from string: network address parse error during "
        'conversion from string: netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""',
    ),
    (
        'cidr("2001:db8::/")',
        "network address parse error during conversion from string: network address parse error during "
        'conversion from string: netip.ParsePrefix("2001:db8::/"): bad bits after slash: ""',
    ),
]

SEMVER: list[tuple[str, Any]] = [
    ('semver("1.2.3") == semver("1.2.3")', True),
    ('isSemver("1.2.3-beta.1+build.1")', True),
    ('isSemver("")', False),
    ('isSemver("v1.0.0")', False),
    ('isSemver(" 1.0.0")', False),
    ('isSemver("1. 0.0")', False),
    ('isSemver("1.0.0 ")', False),
    ('isSemver("01.01.01")', False),
    ('isSemver("1")', False),
    ('isSemver("1.1")', False),
    ('isSemver("", true)', False),
    ('isSemver(" 1.0.0", true)', False),
    ('isSemver("1. 0.0", true)', False),
    ('isSemver("1.0.0 ", true)', False),
    ('isSemver("v1.0.0", true)', True),
    ('isSemver("01.01.01", true)', True),
    ('isSemver("1", true)', True),
    ('isSemver("1.1", true)', True),
    ('semver("v01.01", true) == semver("1.1.0")', True),
    ('semver("1.2.3") == semver("1.0.0")', False),
    ('semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    ('semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    ('semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    ('semver("1.2.3").compareTo(semver("1.2.3"))', 0),
    ('semver("1.0.0").compareTo(semver("1.2.3"))', -1),
    ('semver("1.2.3").compareTo(semver("1.0.0"))', 1),
    ('semver("1.2.3").major()', 1),
    ('semver("1.2.3").minor()', 2),
    ('semver("1.2.3").patch()', 3),
    # semver 2.0 precedence and EQ (build metadata ignored), as blang/semver.
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True),
    ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))', True),
    ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0+a") == semver("1.0.0+b")', True),
]

SEMVER_ERRORS = [
    ('semver("v1.0")', "No Major.Minor.Patch elements found"),
    ('semver("1.01.0")', 'Minor number must not contain leading zeroes "01"'),
    ('semver("1.0.0-01")', 'Numeric PreRelease version must not contain leading zeroes "01"'),
]

URL: list[tuple[str, Any]] = [
    ("url('https://example.com/').getScheme()", "https"),
    ("url('https://example.com:80/').getHost()", "example.com:80"),
    ("url('https://example.com:80/').getHostname()", "example.com"),
    ("url('https://example.com:80/').getPort()", "80"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('https://[::1]:80/').getHost()", "[::1]:80"),
    ("url('https://example.com/path').getPort()", ""),
    ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
    ("url('https://example.com/a%2Fb').getEscapedPath()", "/a%2Fb"),
    ("url('/absolute-path').getScheme()", ""),
    ("url('/absolute-path').getEscapedPath()", "/absolute-path"),
    (
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
        True,
    ),
    ("url('https://example.com/?a=1;b=2&c=%20+d').getQuery()", {"c": ["  d"]}),
    ("url('HTTPS://example.com/').getScheme()", "https"),
    ("url('mailto:someone@example.com').getHost()", ""),
    ("isURL('https://user:pass@example.com/x?y=1#frag')", True),
    ("isURL('../relative-path')", False),
    ("isURL('example.com')", False),
    ("isURL('https://ex ample.com/')", False),
    ("url('https://example.com/a?x=1') == url('https://example.com/a?x=1')", True),
    ("url('https://example.com/a') == url('https://example.com/b')", False),
]

URL_ERRORS = [
    (
        "url('../relative-path')",
        'URL parse error during conversion from string: parse "../relative-path": invalid URI for request',
    ),
    (
        "url('https://example.com:8a/')",
        'URL parse error during conversion from string: parse "https://example.com:8a/": '
        'invalid port ":8a" after host',
    ),
    ("url('https://x/%zz')", 'parse "https://x/%zz": invalid URL escape "%zz"'),
    ("url('')", 'parse "": empty url'),
]

COMPILE_ERRORS = [
    ("isQuantity([1, 2, 3])", "found no matching overload for 'isQuantity' applied to '(list(int))'"),
    ("isSemver([1, 2, 3])", "found no matching overload for 'isSemver' applied to '(list(int))'"),
    ('isIP(cidr("192.168.0.0/24"))', "found no matching overload for 'isIP' applied to '(net.CIDR)'"),
    (
        'semver("1.0.0").isLessThan(quantity("1"))',
        "found no matching overload for 'isLessThan' applied to '(kubernetes.Semver, kubernetes.Quantity)'",
    ),
    ('quantity("1") == 1', "found no matching overload for '_==_'"),
    # The types are messages to the engine, but kube has no literal syntax for them.
    ('kubernetes.Quantity{value: "1"} == quantity("1")', "undeclared reference to 'kubernetes.Quantity'"),
]


def _run(expr: str) -> Any:
    return ENV.compile(expr).evaluate({"self": {}})


@pytest.mark.parametrize(("expr", "expected"), QUANTITY + IP + CIDR + SEMVER + URL)
def test_value(expr: str, expected: Any) -> None:
    result = _run(expr)
    assert result == expected and type(result) is type(expected), result


@pytest.mark.parametrize(
    ("expr", "message"), QUANTITY_ERRORS + IP_ERRORS + CIDR_ERRORS + SEMVER_ERRORS + URL_ERRORS
)
def test_runtime_error(expr: str, message: str) -> None:
    with pytest.raises(EvalError) as info:
        _run(expr)
    assert message in str(info.value)


@pytest.mark.parametrize(("expr", "message"), COMPILE_ERRORS)
def test_compile_error(expr: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        ENV.compile(expr)
    assert message in str(info.value)


def test_result_types_are_kubes_type_names() -> None:
    assert ENV.compile('quantity("1")').result_type == "kubernetes.Quantity"
    assert ENV.compile('url("/a")').result_type == "kubernetes.URL"
    assert ENV.compile('ip("::1")').result_type == "net.IP"
    assert ENV.compile('cidr("::1/128")').result_type == "net.CIDR"
    assert ENV.compile('semver("1.0.0")').result_type == "kubernetes.Semver"


def _estimate(expr: str, size: int) -> float:
    value = {"q": "1" * size, "a": "1" * size}
    return cost.estimate(ENV.compile(expr).tree, {"self": cost.value_shape(value)})


def test_parsing_costs_scale_with_the_string_as_kubes_estimates() -> None:
    # kube: quantity/url/ip/cidr/semver(s) cost 0.1 per character of s; accessors cost 1.
    small, large = (
        _estimate("quantity(self.q).isInteger()", 10),
        _estimate("quantity(self.q).isInteger()", 1000),
    )
    assert large - small == 99
    assert _estimate("ip.isCanonical(self.a)", 1000) - _estimate("ip.isCanonical(self.a)", 10) == 198
    # validate: 0.1 per character times (a 128-character regex, kube's MaxNameFormatRegexSize, x 0.25).
    validate = "format.dns1123Label().validate(self.a).hasValue()"
    assert _estimate(validate, 100) - _estimate(validate, 10) == 288
    # containsIP compares two addresses of up to 16 bytes: 4, plus parsing a string argument.
    contains = 'cidr("10.0.0.0/8").containsIP(self.a)'
    assert _estimate(contains, 100) - _estimate(contains, 10) == 9
    # cidr("10.0.0.0/8") 1 + self.a 2 + containment 4 + parsing a 10-character string 1.
    assert _estimate(contains, 10) == 8


# kube's format_test.go: validate() is optional.none() when valid, else optional.of(the errors).
_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
FORMAT_VALID = [
    ("dns1123Label", "my-label-name"),
    ("dns1123Subdomain", "apiextensions.k8s.io"),
    ("qualifiedName", "apiextensions.k8s.io/v1beta1"),
    ("dns1123LabelPrefix", "my-label-prefix-"),
    ("dns1123SubdomainPrefix", "mysubdomain.prefix.-"),
    ("dns1035LabelPrefix", "my-label-prefix-"),
    ("uri", "http://example.com"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
    ("byte", "aGVsbG8="),
    ("date", "2021-01-01"),
    ("datetime", "2021-01-01T00:00:00Z"),
    ("dns1035Label", "my-label-name"),
    ("qualifiedName", "my.name"),
]
FORMAT_INVALID = [
    ("dns1123Label", "contains a space", _LABEL),
    ("dns1123Subdomain", "contains a space", _SUBDOMAIN),
    ("dns1035Label", "contains a space", _DNS1035),
    (
        "qualifiedName",
        "contains a space",
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ),
    ("dns1123LabelPrefix", "contains a space-", _LABEL),
    ("dns1123SubdomainPrefix", "contains a space-", _SUBDOMAIN),
    ("dns1035LabelPrefix", "contains a space-", _DNS1035),
    ("byte", "aGVsbG8", "invalid base64"),
    ("date", "2020-01-32", "invalid date"),
    ("datetime", "2020-01-32T00:00:00Z", "invalid datetime"),
    ("uri", "../relative", 'parse "../relative": invalid URI for request'),
]


@pytest.mark.parametrize(("name", "value"), FORMAT_VALID)
def test_named_format_accepts(name: str, value: str) -> None:
    assert _run(f"format.{name}().validate({value!r}) == optional.none()") is True
    assert _run(f"format.{name}().validate({value!r}).hasValue()") is False
    assert _run(f"format.named({name!r}).value().validate({value!r}).hasValue()") is False


@pytest.mark.parametrize(("name", "value", "message"), FORMAT_INVALID)
def test_named_format_refuses_with_kubes_message(name: str, value: str, message: str) -> None:
    assert _run(f"format.{name}().validate({value!r}).value()") == [message]
    assert _run(f"format.{name}().validate({value!r}) == optional.of([{message!r}])") is True


def test_named_format_lookup() -> None:
    assert _run('format.named("unknown").hasValue()') is False
    assert _run('format.named("dns1123Label").value() == format.dns1123Label()') is True
    with pytest.raises(EvalError, match=r"optional\.none\(\) dereference"):
        _run('format.named("unknown").value()')
