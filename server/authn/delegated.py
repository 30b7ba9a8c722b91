"""Assembles authentication from the flags, the cluster and the server's own client CA (kube's
DelegatingAuthenticationOptions.ApplyTo + DelegatingAuthenticatorConfig.New).

The chain, in kube's order: front proxy (request header), client certificate, bearer token
(TokenReview), then anonymous. The client CA is `--client-ca-file`, else the cluster ConfigMap's
`client-ca-file`; front-proxy settings come from the `--requestheader-*` flags when
`--requestheader-client-ca-file` is given, else from the ConfigMap (skip with
`--authentication-skip-lookup`). The server's own client CA (the admin kubeconfig's) is always accepted
too, so the admin kubeconfig works in every mode. Every CA that signs client certificates must also be
in the TLS trust store; `on_trust_change` hands the current extra bundle to the TLS layer whenever a
file or the ConfigMap changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509

from server.authn import build_authenticator
from server.authn.ca_bundle import DEFAULT_CHECK_INTERVAL, FileCA
from server.authn.configmap import NAME, NAMESPACE, REQUESTHEADER_CA_KEY, ConfigMapWatcher
from server.authn.interface import Authenticator
from server.authn.options import AuthenticationOptions
from server.authn.requestheader import (
    STANDARD_NAMES,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    RequestHeaderNames,
)
from server.authn.token import BearerTokenAuthenticator, CachedTokenReviewer, TokenReviewer
from server.authn.x509 import X509Authenticator
from server.cluster.client import ClusterClient, ClusterError

logger = logging.getLogger(__name__)


class AuthenticationSetupError(Exception):
    """Authentication cannot be configured as asked; the server must not start."""


@dataclass(slots=True)
class Authentication:
    authenticator: Authenticator
    api_audiences: tuple[str, ...]
    # Header names whose values are credentials, stripped from every authenticated request.
    credential_headers: Callable[[], list[RequestHeaderNames]]
    # PEM of every client-certificate CA besides the server's own (which TLS loads from its file).
    trust_bundle: Callable[[], bytes]
    # Background reloads (CA files, the ConfigMap watch) to stop on close.
    stoppers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def close(self) -> None:
        for stop in self.stoppers:
            await stop()


async def start_authentication(
    options: AuthenticationOptions,
    *,
    client: ClusterClient | None,
    own_client_ca: Path,
    delegated: bool,
    on_trust_change: Callable[[bytes], Awaitable[object]],
    check_interval: float = DEFAULT_CHECK_INTERVAL,
) -> Authentication:
    """Load every source once (failing loudly, as kube does at start), then keep them current."""
    try:
        own = FileCA("client-ca", own_client_ca, interval=check_interval)
        await own.load()
        client_ca_file = await _file_ca("client-ca-bundle", options.client_ca_file, check_interval)
        request_header_file = await _file_ca(
            "request-header", options.requestheader_client_ca_file, check_interval
        )
    except (OSError, ValueError) as err:
        raise AuthenticationSetupError(f"unable to load client CA file: {err}") from err
    watcher = await _configmap_watcher(options, client, client_ca_file, request_header_file)

    flag_request_header = _flag_request_header(options)

    def request_header() -> RequestHeaderConfig | None:
        if request_header_file is not None and flag_request_header is not None:
            return RequestHeaderConfig(request_header_file.current, *flag_request_header)
        return watcher.current.request_header if watcher is not None else None

    def delegated_client_cas() -> tuple[x509.Certificate, ...]:
        if client_ca_file is not None:
            return client_ca_file.current.certs
        return watcher.current.client_ca.certs if watcher is not None else ()

    def client_cas() -> Sequence[x509.Certificate]:
        return (*own.current.certs, *delegated_client_cas())

    def trust_bundle() -> bytes:
        parts = [client_ca_file.current.pem if client_ca_file else b""]
        if client_ca_file is None and watcher is not None:
            parts.append(watcher.current.client_ca.pem)
        header = request_header()
        parts.append(header.ca.pem if header else b"")
        return b"".join(parts)

    def credential_headers() -> list[RequestHeaderNames]:
        header = request_header()
        return [STANDARD_NAMES, header.names] if header else [STANDARD_NAMES]

    async def changed() -> None:
        await on_trust_change(trust_bundle())

    authenticators: list[Authenticator] = []
    if request_header_file is not None or watcher is not None:
        authenticators.append(RequestHeaderAuthenticator(request_header))
    authenticators.append(X509Authenticator(client_cas))
    audiences = tuple(options.api_audiences)
    if client is not None:
        reviewer = TokenReviewer(client)
        ttl = options.authentication_token_webhook_cache_ttl
        authenticators.append(
            BearerTokenAuthenticator(
                CachedTokenReviewer(reviewer, success_ttl=ttl, failure_ttl=ttl), audiences
            )
        )
    anonymous = options.anonymous_auth if options.anonymous_auth is not None else delegated
    authentication = Authentication(
        build_authenticator(authenticators, anonymous=anonymous), audiences, credential_headers, trust_bundle
    )

    await changed()
    for source in (own, client_ca_file, request_header_file):
        if source is not None:
            source.set_on_change(changed)
            source.start()
            authentication.stoppers.append(source.stop)
    if watcher is not None:
        watcher.set_on_change(changed)
        watcher.start()
        authentication.stoppers.append(watcher.stop)
    return authentication


async def _file_ca(name: str, path: Path | None, interval: float) -> FileCA | None:
    if path is None:
        return None
    source = FileCA(name, path, interval=interval)
    await source.load()
    return source


def _flag_request_header(options: AuthenticationOptions) -> tuple[tuple[str, ...], RequestHeaderNames] | None:
    if options.requestheader_client_ca_file is None:
        return None
    names = RequestHeaderNames(
        username=tuple(h.strip() for h in options.requestheader_username_headers),
        uid=tuple(h.strip() for h in options.requestheader_uid_headers),
        group=tuple(h.strip() for h in options.requestheader_group_headers),
        extra_prefixes=tuple(h.strip() for h in options.requestheader_extra_headers_prefix),
    )
    return tuple(options.requestheader_allowed_names), names


async def _configmap_watcher(
    options: AuthenticationOptions,
    client: ClusterClient | None,
    client_ca_file: FileCA | None,
    request_header_file: FileCA | None,
) -> ConfigMapWatcher | None:
    """kube looks up only what the flags leave missing, and only with a cluster to ask."""
    missing_client_ca = client_ca_file is None
    missing_request_header = request_header_file is None
    if options.authentication_skip_lookup or not (missing_client_ca or missing_request_header):
        return None
    if client is None:
        # Standalone: kube would warn that the cluster's client certificates and front proxy won't work.
        logger.debug("no cluster to look up configmap %s/%s in", NAMESPACE, NAME)
        return None
    watcher = ConfigMapWatcher(client)
    tolerate = options.authentication_tolerate_lookup_failure
    try:
        current = await watcher.load()
    except ClusterError as err:
        if not tolerate:
            raise AuthenticationSetupError(
                f"unable to load configmap based request-header-client-ca-file: {err}"
            ) from err
        logger.warning("Error looking up in-cluster authentication configuration: %s", err)
        logger.warning(
            "Continuing without authentication configuration. This may treat all requests as anonymous."
        )
        return watcher
    if missing_request_header and current.request_header is None and not tolerate:
        raise AuthenticationSetupError(
            "unable to load configmap based request-header-client-ca-file: missing content for CA bundle "
            f'"client-ca::{NAMESPACE}::{NAME}::{REQUESTHEADER_CA_KEY}"'
        )
    if missing_client_ca and not current.client_ca.certs:
        logger.warning(
            "configmap %s/%s has no client-ca-file: client certificates of the cluster won't work",
            NAMESPACE,
            NAME,
        )
    return watcher
