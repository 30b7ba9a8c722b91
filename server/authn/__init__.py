"""Authentication: who is making a request. Assembled like k8s.io/apiserver's authenticatorfactory.

The kinds of credentials are `Authenticator`s in the list given to `build_authenticator`: front proxy
(`requestheader`), client certificates (`x509`), bearer tokens (`token`, TokenReview).
`server.authn.delegated` assembles them from the flags and the cluster; standalone is the same chain
with client certificates only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cryptography import x509

from server.authn.interface import (
    AnonymousAuthenticator,
    AuthenticatedGroupAdder,
    Authenticator,
    AuthResult,
    Union,
)
from server.authn.x509 import X509Authenticator
from server.health import HEALTH_PATHS

__all__ = [
    "AnonymousAuthenticator",
    "AuthResult",
    "AuthenticatedGroupAdder",
    "Authenticator",
    "Union",
    "X509Authenticator",
    "build_authenticator",
    "standalone_authenticator",
]


def build_authenticator(
    authenticators: Sequence[Authenticator],
    *,
    anonymous: bool,
    anonymous_paths: Sequence[str] = HEALTH_PATHS,
) -> Authenticator:
    """kube's chain: union of the real authenticators, plus `system:authenticated`, then anonymous.

    Anonymous sits behind a fail-on-error union, so an invalid credential stays 401 even when
    anonymous is on. With `anonymous=False` anonymous is still allowed on `anonymous_paths` (the
    health endpoints and their sub-paths), because probes carry no credentials; the authorizer still
    decides whether anonymous may read them.
    """
    identified = AuthenticatedGroupAdder(Union(authenticators))
    fallback = AnonymousAuthenticator(None if anonymous else anonymous_paths)
    return Union([identified, fallback], fail_on_error=True)


def standalone_authenticator(
    *,
    anonymous: bool = False,
    client_cas: Callable[[], Sequence[x509.Certificate]] | None = None,
) -> Authenticator:
    """Standalone mode: client certificates only (the admin kubeconfig uses CN=admin, O=system:masters)."""
    return build_authenticator([X509Authenticator(client_cas)], anonymous=anonymous)
