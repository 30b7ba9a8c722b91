"""Where the cluster is and how to prove who we are, resolved from a kubeconfig or the pod's service account.

The `kubernetes` package's loader does the resolving, because kubeconfig has many corners worth not
re-implementing: contexts, relative paths, embedded `*-data`, `tokenFile`, exec credential plugins with
expiry, `insecure-skip-tls-verify`, `tls-server-name`. Only its output is used (host, TLS files, token);
requests go through `server.cluster.client`. Everything here reads files and may run an exec plugin, so
callers on the event loop run these functions through `asyncio.to_thread`. The package is imported on
first use, so a standalone server never pays its import time (see docs/cluster.md).
"""

from __future__ import annotations

import hashlib
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IN_CLUSTER_ENV = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


class CredentialsError(Exception):
    """The kubeconfig or in-cluster configuration cannot be used."""


@dataclass(frozen=True, slots=True)
class Credentials:
    host: str  # scheme://host:port, no trailing slash
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = None  # the bare bearer token
    verify: bool = True
    server_name: str | None = None  # kubeconfig's tls-server-name
    # Digest of the TLS files' contents: a certificate rotated under the same path must be noticed.
    tls_digest: str = ""

    @property
    def uses_tls(self) -> bool:
        return self.host.startswith("https://")


def in_cluster(environ: Mapping[str, str] = os.environ) -> bool:
    """client-go's test for rest.InClusterConfig: both service env variables set and non-empty."""
    return all(environ.get(name) for name in IN_CLUSTER_ENV)


class CredentialSource:
    """One kubeconfig file (or, without one, the in-cluster config), resolved on demand.

    `load()` resolves it afresh every time: a rotated service-account token, `tokenFile` or client
    certificate is read again, and an exec plugin runs again (the loader's own refresh hook re-reads
    neither a `tokenFile` nor a non-expiring exec credential). Synchronous; callers use a worker thread.
    """

    __slots__ = ("_kubeconfig",)

    def __init__(self, kubeconfig: Path | None) -> None:
        self._kubeconfig = kubeconfig

    @property
    def description(self) -> str:
        return f"kubeconfig {self._kubeconfig}" if self._kubeconfig else "in-cluster config"

    @property
    def key(self) -> str:
        """Identifies the source, so that two users of the same kubeconfig can share one client."""
        return str(self._kubeconfig.resolve()) if self._kubeconfig else "<in-cluster>"

    def load(self) -> Credentials:
        from kubernetes import client, config  # deferred: ~0.4 s of imports only delegated mode needs

        configuration = client.Configuration()
        try:
            if self._kubeconfig is not None:
                config.load_kube_config(
                    config_file=str(self._kubeconfig),
                    client_configuration=configuration,
                    persist_config=False,
                )
            else:
                config.load_incluster_config(client_configuration=configuration, try_refresh_token=False)
        except Exception as err:  # the loader raises many kinds (ConfigException, OSError, exec failures)
            raise CredentialsError(f"cannot load {self.description}: {err}") from err
        return _extract(configuration)


def _extract(configuration: Any) -> Credentials:
    host = str(configuration.host or "").rstrip("/")
    if not host.startswith(("https://", "http://")):
        raise CredentialsError(f"unsupported cluster address {host!r}")
    api_key = configuration.api_key or {}
    raw = api_key.get("BearerToken") or api_key.get("authorization") or ""
    token = raw.split(" ", 1)[1] if raw.lower().startswith("bearer ") else raw
    files = [configuration.ssl_ca_cert, configuration.cert_file, configuration.key_file]
    return Credentials(
        host=host,
        ca_file=configuration.ssl_ca_cert or None,
        cert_file=configuration.cert_file or None,
        key_file=configuration.key_file or None,
        token=token.strip() or None,
        verify=bool(configuration.verify_ssl),
        server_name=getattr(configuration, "tls_server_name", None) or None,
        tls_digest=_digest(files),
    )


def _digest(paths: list[str | None]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(b"\0")
        if path:
            try:
                h.update(Path(path).read_bytes())
            except OSError:
                h.update(b"<unreadable>")
    return h.hexdigest()


def client_ssl_context(credentials: Credentials) -> ssl.SSLContext | None:
    """The TLS context for talking to the cluster; None for a plain-HTTP address. Reads files."""
    if not credentials.uses_tls:
        return None
    context = ssl.create_default_context(cafile=credentials.ca_file)
    if credentials.cert_file:
        context.load_cert_chain(credentials.cert_file, credentials.key_file)
    if not credentials.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
