"""The API client: a kubeconfig when given (standalone: the server's admin kubeconfig), else in-cluster.

Each controller builds its own `ApiClient` instead of loading the package's global default
configuration, so tests can run several controllers (two leader candidates) in one process.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from kubernetes import client, config

from controller.options import STANDALONE_KUBECONFIG, in_cluster

logger = logging.getLogger("pizza-controller")

# How long a controller started beside its server waits for the server's admin kubeconfig.
STANDALONE_WAIT = 60.0


def api_client(kubeconfig: Path | None) -> client.ApiClient:
    configuration = client.Configuration()
    if kubeconfig is not None:
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    elif in_cluster():
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(client_configuration=configuration)
    return client.ApiClient(configuration)


def await_standalone_kubeconfig(stop: threading.Event, wait: float = STANDALONE_WAIT) -> Path | None:
    """The admin kubeconfig of a server starting beside this controller, once it is written.

    `pizza-apiserver & pizza-controller` in a fresh directory starts both at once: the server writes
    `.pizza-apiserver/admin.kubeconfig` only when it serves. When nothing else says where the API is
    (not in a pod, no $KUBECONFIG, no ~/.kube/config), that server is the one meant, so wait for its
    file (bounded) rather than fail at once. None when something else applies or nothing came.
    """
    if in_cluster() or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().exists():
        return None
    deadline = time.monotonic() + wait
    if not STANDALONE_KUBECONFIG.exists():
        logger.info("waiting up to %ss for %s (written once the server serves)", wait, STANDALONE_KUBECONFIG)
    while not STANDALONE_KUBECONFIG.exists():
        if stop.wait(0.2) or time.monotonic() >= deadline:
            return None
    return STANDALONE_KUBECONFIG
