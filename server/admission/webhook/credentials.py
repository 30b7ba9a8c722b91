"""What this server presents to webhooks: the WebhookAdmission kubeConfigFile's users (kube's
defaultAuthenticationInfoResolver in pkg/util/webhook/authentication.go).

A user is chosen by the webhook's `host:port` exactly, then `*.<suffix>`, then the same without `:443`,
then `*`, then the current context's user; none is anonymous. Tokens and client-certificate files are
supported (token files are read when the file is loaded). `load` reads files: call it off the loop.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class WebhookAuth:
    headers: dict[str, str] = field(default_factory=dict)
    cert: tuple[str, str] | None = None  # client certificate and key files


ANONYMOUS = WebhookAuth()


def _candidates(host: str, port: int) -> list[str]:
    target = f"{host}:{port}"
    names = [target]
    steps = target.split(".")
    names += ["*." + ".".join(steps[i:]) for i in range(1, len(steps))]
    if port == 443:
        names.append(host)
        steps = host.split(".")
        names += ["*." + ".".join(steps[i:]) for i in range(1, len(steps))]
    return [*names, "*"]


def _materialize(data: str, directory: Path, name: str) -> str:
    path = directory / name
    path.write_bytes(base64.b64decode(data))
    os.chmod(path, 0o600)
    return str(path)


def _auth(user: dict[str, Any], directory: Path, index: int) -> WebhookAuth:
    headers: dict[str, str] = {}
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    cert = user.get("client-certificate")
    key = user.get("client-key")
    if user.get("client-certificate-data"):
        cert = _materialize(user["client-certificate-data"], directory, f"user{index}.crt")
    if user.get("client-key-data"):
        key = _materialize(user["client-key-data"], directory, f"user{index}.key")
    return WebhookAuth(headers, (str(cert), str(key)) if cert and key else None)


@dataclass
class WebhookCredentials:
    users: dict[str, WebhookAuth] = field(default_factory=dict)
    current: WebhookAuth = ANONYMOUS

    @classmethod
    def load(cls, kubeconfig: Path) -> WebhookCredentials:
        config = yaml.safe_load(kubeconfig.read_text()) or {}
        directory = Path(tempfile.mkdtemp(prefix="webhook-credentials-"))
        users: dict[str, WebhookAuth] = {}
        for index, entry in enumerate(config.get("users") or []):
            users[str(entry.get("name", ""))] = _auth(entry.get("user") or {}, directory, index)
        current = ANONYMOUS
        contexts = {str(c.get("name")): c.get("context") or {} for c in config.get("contexts") or []}
        context = contexts.get(str(config.get("current-context", "")))
        if context and context.get("user") in users:
            current = users[context["user"]]
        return cls(users, current)

    def for_host(self, host: str, port: int) -> WebhookAuth:
        for name in _candidates(host, port):
            if name in self.users:
                return self.users[name]
        return self.current
