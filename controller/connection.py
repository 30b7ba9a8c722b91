"""The API client: a kubeconfig when given (standalone: the server's admin kubeconfig), else in-cluster.

Each controller builds its own `ApiClient` instead of loading the package's global default
configuration, so tests can run several controllers (two leader candidates) in one process.
"""

from __future__ import annotations

from pathlib import Path

from kubernetes import client, config

from controller.options import in_cluster


def api_client(kubeconfig: Path | None) -> client.ApiClient:
    configuration = client.Configuration()
    if kubeconfig is not None:
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    elif in_cluster():
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(client_configuration=configuration)
    return client.ApiClient(configuration)
