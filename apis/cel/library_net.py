"""kube's IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library/{ip,cidr}.go) over Go's net/netip.

Go's `netip.ParseAddr`/`ParsePrefix` are ported rather than using Python's `ipaddress`: they are
stricter in places (no leading zeros in a prefix length, no zones in a prefix), keep a prefix's
host bits (`cidr('10.0.0.1/8').ip()` is 10.0.0.1), and kube's error messages quote their texts
("ParseAddr(\"1.2.3\"): IPv4 address too short"). Addresses are stored as their canonical text
(`netip.Addr.String()`, RFC 5952, which `ipaddress` also prints), so `==` is netip's `==`.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from apis.cel import objects
from apis.cel.engine import BOOL, INT, STRING, Function, Overload

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class _ParseAddrError(ValueError):
    def __init__(self, text: str, msg: str, at: str = "") -> None:
        where = f" (at {json.dumps(at)})" if at else ""
        super().__init__(f"ParseAddr({json.dumps(text)}): {msg}{where}")


def _ipv4_fields(text: str, s: str) -> bytes:
    fields: list[int] = []
    val = digits = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and val == 0:
                raise _ParseAddrError(text, "IPv4 field has octet with leading zero")
            val, digits = val * 10 + int(c), digits + 1
            if val > 255:
                raise _ParseAddrError(text, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _ParseAddrError(text, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise _ParseAddrError(text, "IPv4 address too long")
            fields.append(val)
            val = digits = 0
        else:
            raise _ParseAddrError(text, "unexpected character", s[i:])
    if len(fields) < 3:
        raise _ParseAddrError(text, "IPv4 address too short")
    return bytes([*fields, val])


def _ipv6(text: str) -> tuple[bytes, str]:
    """Go's parseIPv6: the 16 bytes and the zone."""
    s, zone = text, ""
    if "%" in s:
        s, _, zone = s.partition("%")
        if not zone:
            raise _ParseAddrError(text, "zone must be a non-empty string")
    ip = bytearray(16)
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return bytes(ip), zone
    i = 0
    while i < 16:
        off, acc = 0, 0
        while off < len(s) and s[off] in "0123456789abcdefABCDEF":
            acc = (acc << 4) + int(s[off], 16)
            if off > 3:
                raise _ParseAddrError(text, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise _ParseAddrError(text, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise _ParseAddrError(text, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _ParseAddrError(
                    text, "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if i + 4 > 16:
                raise _ParseAddrError(
                    text, "too many hex fields to fit an embedded IPv4 at the end of the address", s
                )
            ip[i : i + 4] = _ipv4_fields(text, s)
            s = ""
            i += 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _ParseAddrError(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _ParseAddrError(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _ParseAddrError(text, "multiple :: in address", s)
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        raise _ParseAddrError(text, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _ParseAddrError(text, "address string too short")
        n = 16 - i
        ip[ellipsis + n : 16] = ip[ellipsis:i]
        ip[ellipsis : ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _ParseAddrError(text, "the :: must expand to at least one field of zeros", s)
    return bytes(ip), zone


def parse_addr(text: str) -> tuple[Address, str]:
    """Go's netip.ParseAddr: the address and its zone."""
    for c in text:
        if c == ".":
            return ipaddress.IPv4Address(_ipv4_fields(text, text)), ""
        if c == ":":
            raw, zone = _ipv6(text)
            return ipaddress.IPv6Address(raw), zone
        if c == "%":
            raise _ParseAddrError(text, "missing IPv6 address")
    raise _ParseAddrError(text, "unable to parse IP")


def _is_4in6(addr: Address) -> bool:
    return isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None


def _parse_ip(text: str) -> Address:
    """kube's parseIPAddr: netip's parse, then no zone and no IPv4-mapped IPv6."""
    try:
        addr, zone = parse_addr(text)
    except _ParseAddrError as e:
        raise ValueError(
            f"IP Address {json.dumps(text)} parse error during conversion from string: {e}"
        ) from None
    if zone:
        raise ValueError(f"IP address {json.dumps(text)} with zone value is not allowed")
    if _is_4in6(addr):
        raise ValueError(f"IPv4-mapped IPv6 address {json.dumps(text)} is not allowed")
    return addr


def _parse_prefix(text: str) -> tuple[Address, int]:
    """Go's netip.ParsePrefix (host bits kept), then kube's IPv4-mapped check."""

    def fail(msg: str) -> ValueError:
        return ValueError(f"netip.ParsePrefix({json.dumps(text)}): {msg}")

    slash = text.rfind("/")
    if slash < 0:
        raise fail("no '/'")
    try:
        addr, zone = parse_addr(text[:slash])
    except _ParseAddrError as e:
        raise fail(str(e)) from None
    if zone:
        raise fail("IPv6 zones cannot be present in a prefix")
    bits_text = text[slash + 1 :]
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not (
        bits_text.isascii() and bits_text.lstrip("+-").isdigit()
    ):
        raise fail(f"bad bits after slash: {json.dumps(bits_text)}")
    bits = int(bits_text)
    if not 0 <= bits <= addr.max_prefixlen:
        raise fail("prefix length out of range")
    if _is_4in6(addr):
        raise ValueError(f"IPv4-mapped IPv6 address {json.dumps(text)} is not allowed")
    return addr, bits


def _cidr_error(e: ValueError) -> ValueError:
    # kube wraps the message twice (parseCIDR, then stringToCIDR); its tests expect both.
    prefix = "network address parse error during conversion from string: "
    return ValueError(prefix + prefix + str(e))


def _new_ip(addr: Address) -> Any:
    return objects.new(objects.IP, addr=str(addr))


def _new_cidr(addr: Address, bits: int) -> Any:
    return objects.new(objects.CIDR, addr=str(addr), bits=bits)


def _addr(msg: Any) -> Address:
    return ipaddress.ip_address(msg.addr)


def _to_ip(text: str) -> Any:
    return _new_ip(_parse_ip(text))


def _to_cidr(text: str) -> Any:
    try:
        return _new_cidr(*_parse_prefix(text))
    except ValueError as e:
        raise _cidr_error(e) from None


def _succeeds(parse: Any) -> Any:
    def check(text: str) -> bool:
        try:
            parse(text)
        except ValueError:
            return False
        return True

    return check


def _is_canonical(text: str) -> bool:
    return str(_parse_ip(text)) == text


def _family(msg: Any) -> int:
    return 4 if isinstance(_addr(msg), ipaddress.IPv4Address) else 6


def _link_local_multicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return (int(a) >> 112) & 0xFF0F == 0xFF02


def _global_unicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address) and int(a) in (0, 0xFFFFFFFF):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or _link_local_unicast(a))


def _link_local_unicast(a: Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("169.254.0.0/16")
    return a in ipaddress.IPv6Network("fe80::/10")


def _network(msg: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(f"{msg.addr}/{msg.bits}", strict=False)


def _contains_ip(cidr: Any, ip: Any) -> bool:
    addr = _addr(ip)
    net = _network(cidr)
    return addr.version == net.version and addr in net


def _contains_cidr(cidr: Any, other: Any) -> bool:
    a, b = _network(cidr), _network(other)
    return a.version == b.version and b.network_address in a and cidr.bits <= other.bits


def _masked(cidr: Any) -> Any:
    net = _network(cidr)
    return _new_cidr(net.network_address, cidr.bits)


_IP, _CIDR = objects.IP, objects.CIDR


def _ip_test(name: str, test: Any) -> Function:
    return Function(name, [Overload(f"ip_{name}", [_IP], BOOL, lambda m: test(_addr(m)), member=True)])


IP_LIBRARY: tuple[Function, ...] = (
    Function("isIP", [Overload("is_ip", [STRING], BOOL, _succeeds(_parse_ip))]),
    Function("ip.isCanonical", [Overload("ip_is_canonical", [STRING], BOOL, _is_canonical)]),
    Function("family", [Overload("ip_family", [_IP], INT, _family, member=True)]),
    _ip_test("isUnspecified", lambda a: a.is_unspecified),
    _ip_test("isLoopback", lambda a: a.is_loopback and (a.version == 4 or int(a) == 1)),
    _ip_test("isLinkLocalMulticast", _link_local_multicast),
    _ip_test("isLinkLocalUnicast", _link_local_unicast),
    _ip_test("isGlobalUnicast", _global_unicast),
)

CIDR_LIBRARY: tuple[Function, ...] = (
    Function("cidr", [Overload("string_to_cidr", [STRING], _CIDR, _to_cidr)]),
    Function("isCIDR", [Overload("is_cidr", [STRING], BOOL, _succeeds(_to_cidr))]),
    Function(
        "containsIP",
        [
            Overload(
                "cidr_contains_ip_string",
                [_CIDR, STRING],
                BOOL,
                lambda c, s: _contains_ip(c, _to_ip(s)),
                member=True,
            ),
            Overload("cidr_contains_ip_ip", [_CIDR, _IP], BOOL, _contains_ip, member=True),
        ],
    ),
    Function(
        "containsCIDR",
        [
            Overload(
                "cidr_contains_cidr_string",
                [_CIDR, STRING],
                BOOL,
                lambda c, s: _contains_cidr(c, _to_cidr(s)),
                member=True,
            ),
            Overload("cidr_contains_cidr", [_CIDR, _CIDR], BOOL, _contains_cidr, member=True),
        ],
    ),
    Function("prefixLength", [Overload("cidr_prefix_length", [_CIDR], INT, lambda c: c.bits, member=True)]),
    Function("masked", [Overload("cidr_masked", [_CIDR], _CIDR, _masked, member=True)]),
)

# `ip` and `string` have overloads from both libraries: one Function each, as the engine wants.
NET_LIBRARY: tuple[Function, ...] = (
    *IP_LIBRARY,
    *CIDR_LIBRARY,
    Function(
        "ip",
        [
            Overload("string_to_ip", [STRING], _IP, _to_ip),
            Overload("cidr_ip", [_CIDR], _IP, lambda c: _new_ip(_addr(c)), member=True),
        ],
    ),
    Function(
        "string",
        [
            Overload("ip_to_string", [_IP], STRING, lambda m: m.addr),
            Overload("cidr_to_string", [_CIDR], STRING, lambda c: f"{c.addr}/{c.bits}"),
        ],
    ),
)
