"""Client-certificate authentication: CN is the user name, O entries the groups (kube's x509 authenticator).

The TLS layer already verified the chain (CERT_OPTIONAL against every loaded client CA bundle). When
several bundles share that trust store (client CA and request-header CA), pass `client_cas` so that
only certificates signed by the client CA become users here, as kube verifies each bundle separately.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiohttp import web
from cryptography import x509

from apis.meta.errors import unauthorized
from apis.meta.user import UserInfo
from server.authn.interface import AuthResult
from server.serving.certs import peer_identity, verify_client_cert


class X509Authenticator:
    __slots__ = ("_client_cas",)

    def __init__(self, client_cas: Callable[[], Sequence[x509.Certificate]] | None = None) -> None:
        """`client_cas` returns the current client CA certificates (a callable so reloads are seen)."""
        self._client_cas = client_cas

    async def authenticate(self, request: web.Request) -> AuthResult | None:
        der = peer_certificate(request)
        if der is None:
            return None
        # CPU-only work on a DER blob of ~1 KiB (parse, one signature check): fine on the loop.
        if self._client_cas is not None and not verify_client_cert(der, self._client_cas()):
            raise unauthorized()
        common_name, organizations = peer_identity(der)
        if not common_name:
            # kube's CommonNameUserConversion: a certificate without CN identifies nobody.
            return None
        return AuthResult(UserInfo(common_name, groups=tuple(organizations)))


def peer_certificate(request: web.Request) -> bytes | None:
    """The DER client certificate of the request's TLS connection, None on plain HTTP or without one."""
    transport = request.transport
    if transport is None:
        return None
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    return ssl_object.getpeercert(binary_form=True)
