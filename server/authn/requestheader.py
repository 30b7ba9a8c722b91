"""Front-proxy (request header) authentication: trust X-Remote-* headers only from a verified proxy.

A port of k8s.io/apiserver pkg/authentication/request/headerrequest wrapped in the x509 CA verifier:
the caller must present a client certificate signed by the request-header CA, whose common name is in
the allowed list (empty list: any). Only then are the headers read — user from the first non-empty
username header, uid likewise, groups from every value of every group header, extra from headers
starting with a prefix (key lower-cased and %-decoded). Without a certificate this authenticator has no
opinion; with one that fails the checks it reports an error, which the union records and moves on, so
a client certificate from the client CA still works.

Which headers to strip once a request is authenticated (whoever authenticated it) is decided here too:
kube deletes the standard X-Remote-* headers and any configured ones, so nothing downstream can read a
forged identity.
"""

from __future__ import annotations

import functools
import logging
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from aiohttp import web

from apis.meta.errors import unauthorized
from apis.meta.user import UserInfo
from server.authn.ca_bundle import CABundle
from server.authn.client_certs import ClientCertificates
from server.authn.interface import AuthResult
from server.authn.x509 import peer_certificate

logger = logging.getLogger(__name__)

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@dataclass(frozen=True, slots=True)
class RequestHeaderNames:
    username: tuple[str, ...] = ()
    uid: tuple[str, ...] = ()
    group: tuple[str, ...] = ()
    extra_prefixes: tuple[str, ...] = ()


# kube's standardRequestHeaderConfig: always stripped after authentication, configured or not.
STANDARD_NAMES = RequestHeaderNames(
    ("X-Remote-User",), ("X-Remote-Uid",), ("X-Remote-Group",), ("X-Remote-Extra-",)
)


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    ca: CABundle
    allowed_names: tuple[str, ...]
    names: RequestHeaderNames


class RequestHeaderAuthenticator:
    __slots__ = ("_certs", "_config")

    def __init__(
        self,
        config: Callable[[], RequestHeaderConfig | None],
        *,
        certificates: ClientCertificates | None = None,
    ) -> None:
        """`config` returns the current configuration (a callable so ConfigMap and file changes are seen).

        `certificates` caches parsing and signature checks across requests; a reloaded CA bundle
        brings new certificate objects, which the cache does not match (`server.authn.client_certs`).
        """
        self._config = config
        self._certs = certificates if certificates is not None else ClientCertificates()

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        return self.authenticate_now(request)

    def authenticate_now(self, request: web.Request) -> AuthResult | None:
        config = self._config()
        if config is None or not config.ca.certs:
            return None
        der = peer_certificate(request)
        if der is None:
            return None
        # Parsed and signature-checked once per certificate and CA bundle (cached), then a clock check.
        if not self._certs.verified(der, config.ca.certs):
            logger.debug("request-header proxy certificate not signed by the request-header CA")
            raise unauthorized()
        common_name, _ = self._certs.identity(der)
        if config.allowed_names and common_name not in config.allowed_names:
            logger.info("request-header proxy certificate CN %r is not in the allowed list", common_name)
            raise unauthorized()
        return user_from_headers(request.headers, config.names)


def user_from_headers(headers: Mapping[str, str], names: RequestHeaderNames) -> AuthResult | None:
    """The user the headers name, None without a username (headerrequest.AuthenticateRequest)."""
    name = _first_value(headers, names.username)
    if not name:
        return None
    uid = _first_value(headers, names.uid)
    groups = tuple(v for header in names.group for v in _all_values(headers, header) if v)
    extra: dict[str, tuple[str, ...]] = {}
    # Prefixes first, so values keep the order of the configured prefixes (as kube's newExtra does).
    for prefix in names.extra_prefixes:
        for header, value in headers.items():
            if len(header) >= len(prefix) and header[: len(prefix)].lower() == prefix.lower():
                key = unescape_extra_key(header[len(prefix) :].lower())
                extra[key] = (*extra.get(key, ()), value)
    return AuthResult(UserInfo(name, uid, groups, extra))


def unescape_extra_key(encoded: str) -> str:
    """Go's url.PathUnescape; a malformed escape keeps the key as sent (kube records it anyway)."""
    if _BAD_ESCAPE.search(encoded):
        return encoded
    return urllib.parse.unquote(encoded, errors="replace")


def headers_to_strip(headers: Mapping[str, str], names: Iterable[RequestHeaderNames]) -> set[str]:
    """The lower-cased names of headers that carried credentials: Authorization and front-proxy identity."""
    exact, prefixes = _credential_headers(tuple(names))
    present = {h.lower() for h in headers}
    return {h for h in present if h in exact or h.startswith(prefixes)}


@functools.lru_cache(maxsize=16)
def _credential_headers(names: tuple[RequestHeaderNames, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact names, prefixes), lower-cased; derived once per configuration, not per request."""
    exact: set[str] = {"authorization"}
    prefixes: list[str] = []
    for group in names:
        exact.update(h.lower() for h in (*group.username, *group.uid, *group.group))
        prefixes.extend(p.lower() for p in group.extra_prefixes)
    return frozenset(exact), tuple(prefixes)


def _first_value(headers: Mapping[str, str], names: Iterable[str]) -> str:
    for header in names:
        value = headers.get(header, "")
        if value:
            return value
    return ""


def _all_values(headers: Mapping[str, str], header: str) -> list[str]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(header, []))
    value = headers.get(header)
    return [value] if value is not None else []
