"""Client-certificate authentication: CN is the user name, O entries the groups (kube's x509 authenticator).

The TLS layer already verified the chain (CERT_OPTIONAL against every loaded client CA bundle). When
several bundles share that trust store (client CA and request-header CA), pass `client_cas` so that
only certificates signed by the client CA become users here, as kube verifies each bundle separately.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from aiohttp import web
from cryptography import x509

from apis.meta.errors import unauthorized
from apis.meta.user import UserInfo
from server.authn.client_certs import ClientCertificates
from server.authn.interface import AuthResult
from server.serving.connection_buffers import PEER_CERTIFICATE_DER

_NOT_KEPT = object()
MAX_KEPT_RESULTS = 1024


class X509Authenticator:
    __slots__ = ("_certs", "_client_cas", "_results")

    def __init__(
        self,
        client_cas: Callable[[], Sequence[x509.Certificate]] | None = None,
        *,
        certificates: ClientCertificates | None = None,
    ) -> None:
        """`client_cas` returns the current client CA certificates (a callable so reloads are seen).

        `certificates` caches parsing and signature checks across requests (see
        `server.authn.client_certs`); each authenticator has its own unless one is shared.
        """
        self._client_cas = client_cas
        self._certs = certificates if certificates is not None else ClientCertificates()
        # A certificate's user, made once (the same objects each request: the group adder keeps its
        # answer for them). Bounded like the certificate cache; verification still runs each time.
        self._results: dict[bytes, AuthResult | None] = {}

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        return self.authenticate_now(request)

    def authenticate_now(self, request: web.Request) -> AuthResult | None:
        der = peer_certificate(request)
        if der is None:
            return None
        # Parsed and signature-checked once per certificate and CA set (cached), then a clock check.
        if self._client_cas is not None and not self._certs.verified(der, self._client_cas()):
            raise unauthorized()
        results = self._results
        result = results.get(der, _NOT_KEPT)
        if result is _NOT_KEPT:
            common_name, organizations = self._certs.identity(der)
            # kube's CommonNameUserConversion: a certificate without CN identifies nobody.
            result = AuthResult(UserInfo(common_name, groups=organizations)) if common_name else None
            if len(results) >= MAX_KEPT_RESULTS:
                results.clear()
            results[der] = result
        return cast("AuthResult | None", result)


def peer_certificate(request: web.Request) -> bytes | None:
    """The DER client certificate of the request's TLS connection, None on plain HTTP or without one."""
    transport = request.transport
    if transport is None:
        return None
    # TLSSite's connections keep it (server.serving.connection_buffers); other transports make it.
    der = transport.get_extra_info(PEER_CERTIFICATE_DER, _NOT_KEPT)
    if der is not _NOT_KEPT:
        return cast("bytes | None", der)
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    return ssl_object.getpeercert(binary_form=True)
