"""kube's URL library (k8s.io/apiserver/pkg/cel/library/urls.go) over a port of Go's net/url.

kube accepts what `url.ParseRequestURI` accepts (an absolute URI or an absolute path, no fragment
split) and then keeps `url.Parse`'s result; the accessors are Go's `Host`, `Hostname()`, `Port()`,
`EscapedPath()` and `Query()`. Python's urllib splits differently (it accepts a relative reference,
strips no control characters, knows no EscapedPath), so the few Go functions involved are ported
here, with Go's error texts (`parse "x": invalid URI for request`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from apis.cel import objects
from apis.cel.engine import BOOL, STRING, Function, Overload, list_of, map_of

_PATH, _HOST, _QUERY_COMPONENT, _FRAGMENT, _USER = "path", "host", "query", "fragment", "user"
_HEX = "0123456789abcdefABCDEF"


class URLError(ValueError):
    pass


@dataclass(slots=True)
class _URL:
    scheme: str = ""
    opaque: str = ""
    user: str = ""
    host: str = ""
    raw_path: str = ""  # the path as written (validly escaped or not)
    raw_query: str = ""
    fragment: str = ""


def _is_alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _should_escape(c: str, mode: str) -> bool:
    """Go's shouldEscape (RFC 3986 §2.3 unreserved stay; the rest by where in the URL it is)."""
    if _is_alnum(c):
        return False
    if mode == _HOST and c in "!$&'()*+,;=:[]<>\"":
        return False
    if c in "-_.~":
        return False
    if c in "$&+,/:;=?@":
        if mode == _PATH:
            return c == "?"
        if mode == _USER:
            return c in "@/?:"
        if mode == _QUERY_COMPONENT:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and c in "!()*")


def _unescape(s: str, mode: str) -> str:
    """Go's unescape: `%XX` decoded (a bad escape is an error), `+` a space in a query component."""
    i, n = 0, len(s)
    while i < n:
        if s[i] == "%":
            if i + 2 >= n or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                bad = s[i:]
                raise URLError(f"invalid URL escape {json.dumps(bad[:3])}")
            if mode == _HOST and int(s[i + 1], 16) < 8 and s[i : i + 3] != "%25":
                raise URLError(f"invalid URL escape {json.dumps(s[i : i + 3])}")
            i += 3
        else:
            if mode == _HOST and s[i].isascii() and _should_escape(s[i], mode):
                raise URLError(f"invalid character {json.dumps(s[i])} in host name")
            i += 1
    out = bytearray()
    i = 0
    while i < n:
        c = s[i]
        if c == "%":
            out.append(int(s[i + 1 : i + 3], 16))
            i += 3
            continue
        out += b" " if c == "+" and mode == _QUERY_COMPONENT else c.encode()
        i += 1
    return out.decode("utf-8", "replace")


def _escape(s: str, mode: str) -> str:
    out = []
    for b in s.encode():
        c = chr(b)
        out.append(f"%{b:02X}" if b >= 0x80 or _should_escape(c, mode) else c)
    return "".join(out)


def _valid_encoded(s: str) -> bool:
    for c in s:
        if c in "!$&'()*+,;=:@[]" or c == "%":
            continue
        if not c.isascii() or _should_escape(c, _PATH):
            return False
    return True


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all(c in "0123456789" for c in port[1:]))


def _get_scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise URLError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _parse_host(host: str) -> str:
    if host.startswith("["):
        i = host.rfind("]")
        if i < 0:
            raise URLError("missing ']' in host")
        port = host[i + 1 :]
        if not _valid_optional_port(port):
            raise URLError(f"invalid port {json.dumps(port)} after host")
    else:
        i = host.rfind(":")
        if i != -1 and not _valid_optional_port(host[i:]):
            raise URLError(f"invalid port {json.dumps(host[i:])} after host")
    return _unescape(host, _HOST)


def _parse(raw: str, via_request: bool) -> _URL:
    """Go's url.parse (without the fragment, which Parse cuts off first)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise URLError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise URLError("empty url")
    u = _URL()
    if raw == "*":
        u.raw_path = "*"
        return u
    scheme, rest = _get_scheme(raw)
    u.scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        rest = rest[:-1]
    else:
        rest, _, u.raw_query = rest.partition("?")
    if not rest.startswith("/"):
        if u.scheme:
            u.opaque = rest
            return u
        if via_request:
            raise URLError("invalid URI for request")
        if ":" in rest.partition("/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    if (u.scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, rest = rest[2:], ""
        slash = authority.find("/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        at = authority.rfind("@")
        u.host = _parse_host(authority[at + 1 :])
        if at >= 0:
            userinfo = authority[:at]
            if not all(_is_alnum(c) or c in "-._:~!$&'()*+,;=%@" or not c.isascii() for c in userinfo):
                raise URLError("net/url: invalid userinfo")
            u.user = userinfo
            for part in userinfo.split(":", 1):
                _unescape(part, _USER)
    _unescape(rest, _PATH)
    u.raw_path = rest
    return u


def _error(raw: str, err: URLError) -> ValueError:
    return ValueError(f"URL parse error during conversion from string: parse {json.dumps(raw)}: {err}")


def request_uri_error(raw: str) -> str | None:
    """Go's `url.ParseRequestURI(raw)` error text, or None (the `uri` named format's check)."""
    try:
        _parse(raw, True)
    except URLError as e:
        return f"parse {json.dumps(raw)}: {e}"
    return None


def _parse_request_uri(raw: str) -> None:
    try:
        _parse(raw, True)
    except URLError as e:
        raise _error(raw, e) from None


def _parse_url(raw: str) -> _URL:
    """Go's url.Parse: the fragment is cut off and unescaped, the rest parsed as a reference."""
    rest, _, fragment = raw.partition("#")
    try:
        u = _parse(rest, False)
    except URLError as e:
        raise _error(rest, e) from None
    try:
        _unescape(fragment, _FRAGMENT)
    except URLError as e:
        raise _error(raw, e) from None
    u.fragment = fragment
    return u


def _escaped_path(raw_path: str) -> str:
    """Go's EscapedPath: the path as written if that is a valid encoding of it, else re-escaped."""
    if raw_path == "*" or _valid_encoded(raw_path):
        return raw_path
    return _escape(_unescape(raw_path, _PATH), _PATH)


def _to_url(raw: str) -> Any:
    _parse_request_uri(raw)
    u = _parse_url(raw)
    return objects.new(
        objects.URL,
        scheme=u.scheme,
        opaque=u.opaque,
        user=u.user,
        host=u.host,
        path=_escaped_path(u.raw_path),
        raw_query=u.raw_query,
        fragment=u.fragment,
    )


def _is_url(raw: str) -> bool:
    try:
        _parse_request_uri(raw)
    except ValueError:
        return False
    return True


def _split_host_port(host_port: str) -> tuple[str, str]:
    host, port = host_port, ""
    colon = host.rfind(":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def _query(u: Any) -> dict[str, list[str]]:
    """Go's url.Query(): pairs split on `&`, a pair with `;` or a bad escape skipped."""
    out: dict[str, list[str]] = {}
    for pair in u.raw_query.split("&") if u.raw_query else ():
        if ";" in pair or not pair:
            continue
        key, _, value = pair.partition("=")
        try:
            k, v = _unescape(key, _QUERY_COMPONENT), _unescape(value, _QUERY_COMPONENT)
        except URLError:
            continue
        out.setdefault(k, []).append(v)
    return out


_U = objects.URL

URL_LIBRARY: tuple[Function, ...] = (
    Function("url", [Overload("string_to_url", [STRING], _U, _to_url)]),
    Function("isURL", [Overload("is_url_string", [STRING], BOOL, _is_url)]),
    Function("getScheme", [Overload("url_get_scheme", [_U], STRING, lambda u: u.scheme, member=True)]),
    Function("getHost", [Overload("url_get_host", [_U], STRING, lambda u: u.host, member=True)]),
    Function(
        "getHostname",
        [Overload("url_get_hostname", [_U], STRING, lambda u: _split_host_port(u.host)[0], member=True)],
    ),
    Function(
        "getPort",
        [Overload("url_get_port", [_U], STRING, lambda u: _split_host_port(u.host)[1], member=True)],
    ),
    Function(
        "getEscapedPath", [Overload("url_get_escaped_path", [_U], STRING, lambda u: u.path, member=True)]
    ),
    Function(
        "getQuery",
        [Overload("url_get_query", [_U], map_of(STRING, list_of(STRING)), _query, member=True)],
    ),
)
