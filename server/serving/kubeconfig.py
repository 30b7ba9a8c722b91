"""Writes the admin kubeconfig a standalone server hands to kubectl.

The certificates are embedded (``*-data``) rather than referenced by path so the file keeps working
when copied elsewhere, and it is written with mode 0600 because it holds a private key. Synchronous
file I/O: callers on the event loop run ``write_kubeconfig`` through ``asyncio.to_thread``.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from server.serving.certs import write_atomically


def write_kubeconfig(
    path: Path,
    *,
    server_url: str,
    ca_cert_path: Path,
    client_cert_path: Path,
    client_key_path: Path,
    cluster_name: str = "pizza-apiserver",
    user: str = "admin",
) -> None:
    """Write a kubeconfig with one cluster, one user and a current context joining them."""
    context_name = f"{user}@{cluster_name}"  # kubeadm's naming, so the context reads as who@where
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {
                    "server": server_url,
                    "certificate-authority-data": _b64(ca_cert_path),
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(client_cert_path),
                    "client-key-data": _b64(client_key_path),
                },
            }
        ],
        "contexts": [{"name": context_name, "context": {"cluster": cluster_name, "user": user}}],
        "current-context": context_name,
        "preferences": {},
    }
    text = yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text.encode(), mode=0o600)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")
