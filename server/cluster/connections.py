"""The cluster clients of one server, shared when authentication and authorization use the same identity."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from server.cluster.client import ClusterClient
from server.cluster.credentials import CredentialsError, CredentialSource, in_cluster

logger = logging.getLogger(__name__)


class ClusterConnections:
    """Opens at most one `ClusterClient` per kubeconfig (or the in-cluster config) and closes them all.

    `open(None)` means "the in-cluster config if running in a pod": like kube's getClient with
    RemoteKubeConfigFileOptional, outside a cluster it answers None, and so does a pod whose service
    account cannot be read (logged, as kube does) — the server then runs standalone for that purpose.
    """

    __slots__ = ("_clients", "_environ")

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self._clients: dict[str, ClusterClient] = {}
        self._environ = environ

    async def open(self, kubeconfig: Path | None, purpose: str) -> ClusterClient | None:
        if kubeconfig is None and not in_cluster(self._environ):
            return None
        source = CredentialSource(kubeconfig)
        if source.key in self._clients:
            return self._clients[source.key]
        try:
            client = await ClusterClient.connect(source)
        except CredentialsError as err:
            if kubeconfig is not None:
                raise
            logger.warning("failed to read in-cluster kubeconfig for delegated %s: %s", purpose, err)
            return None
        logger.info("delegated %s uses %s (%s)", purpose, source.description, client.host)
        self._clients[source.key] = client
        return client

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
