"""The webhook backend: POSTs audit.k8s.io/v1 EventLists to a service named by a kubeconfig file.

Ports k8s.io/apiserver plugin/pkg/audit/webhook and pkg/util/webhook: the kubeconfig's current
context gives the URL, CA and client credentials; each POST has a 30 s timeout; a failed POST (any
error, any non-2xx answer) is retried with exponential backoff (initial delay from
--audit-webhook-initial-backoff, factor 1.5, jitter 0.2, 5 attempts in all). In the default "batch"
mode this runs behind the buffered backend, so requests never wait for it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from server.audit.backend import Event, handle_plugin_error
from server.audit.policy import GROUP_VERSION

PLUGIN_NAME = "webhook"
DEFAULT_INITIAL_BACKOFF = 10.0
REQUEST_TIMEOUT = 30.0
BACKOFF_FACTOR = 1.5
BACKOFF_JITTER = 0.2
BACKOFF_STEPS = 5


class KubeconfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """Where and how to POST, resolved from the kubeconfig."""

    url: str
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def load_webhook_kubeconfig(path: Path) -> WebhookTarget:
    """Resolve the current context of a kubeconfig. Synchronous file I/O: call via asyncio.to_thread.

    Relative file paths are taken relative to the kubeconfig's directory, as clientcmd does.
    """
    try:
        doc = yaml.safe_load(path.read_bytes())
    except (OSError, yaml.YAMLError) as err:
        raise KubeconfigError(f"error loading config file {str(path)!r}: {err}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError("invalid configuration: no configuration has been provided")
    current = doc.get("current-context") or ""
    context = _named(doc, "contexts", "context", current) if current else {}
    if current and context is None:
        raise KubeconfigError(
            f"invalid configuration: context was not found for specified context: {current}"
        )
    context = context or {}
    cluster = _named(doc, "clusters", "cluster", context.get("cluster", "")) or {}
    user = _named(doc, "users", "user", context.get("user", "")) or {}
    server = cluster.get("server") or ""
    if not server:
        raise KubeconfigError("invalid configuration: no server found for cluster")
    base = path.parent
    headers: dict[str, str] = {}
    token = user.get("token") or ""
    if not token and user.get("tokenFile"):
        token = _resolve(base, user["tokenFile"]).read_text().strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif user.get("username"):
        basic = f"{user['username']}:{user.get('password', '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(basic).decode()
    context_ssl = None
    if server.startswith("https://"):
        context_ssl = _ssl_context(base, cluster, user)
    return WebhookTarget(server, context_ssl, cluster.get("tls-server-name") or None, headers)


def _named(doc: dict[str, Any], section: str, key: str, name: str) -> dict[str, Any] | None:
    for item in doc.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            value = item.get(key)
            return value if isinstance(value, dict) else {}
    return None


def _resolve(base: Path, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else base / path


def _ssl_context(base: Path, cluster: dict[str, Any], user: dict[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        context.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    elif cluster.get("certificate-authority"):
        context.load_verify_locations(cafile=str(_resolve(base, cluster["certificate-authority"])))
    cert = _pem(base, user, "client-certificate")
    key = _pem(base, user, "client-key")
    if cert is not None and key is not None:
        # ssl can only load a key pair from files; embedded data goes through a private temp dir.
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = Path(tmp, "client.crt"), Path(tmp, "client.key")
            for target, data in ((cert_path, cert), (key_path, key)):
                fd = os.open(target, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            context.load_cert_chain(str(cert_path), str(key_path))
    return context


def _pem(base: Path, user: dict[str, Any], key: str) -> bytes | None:
    if user.get(f"{key}-data"):
        return base64.b64decode(user[f"{key}-data"])
    if user.get(key):
        return _resolve(base, user[key]).read_bytes()
    return None


def event_list(events: Sequence[Event]) -> dict[str, Any]:
    """An EventList; items carry no kind/apiVersion of their own, as kube encodes them."""
    items = [{k: v for k, v in e.items() if k not in ("kind", "apiVersion")} for e in events]
    return {"kind": "EventList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}


def backoff_delays(initial: float, rng: random.Random | None = None) -> list[float]:
    """The waits between the 5 attempts of kube's DefaultRetryBackoffWithInitialDelay."""
    draw = rng or random.Random()
    delays, current = [], initial
    for _ in range(BACKOFF_STEPS - 1):
        delays.append(current + draw.random() * BACKOFF_JITTER * current)
        current *= BACKOFF_FACTOR
    return delays


class WebhookBackend:
    def __init__(
        self,
        target: WebhookTarget,
        *,
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        request_timeout: float = REQUEST_TIMEOUT,
        name: str = PLUGIN_NAME,
    ) -> None:
        self.target, self.name = target, name
        self.initial_backoff, self.request_timeout = initial_backoff, request_timeout
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self._ensure_session()

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            ssl_arg: ssl.SSLContext | bool = self.target.ssl_context or True
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=ssl_arg),
                timeout=aiohttp.ClientTimeout(total=self.request_timeout),
            )
        return self._session

    async def process(self, events: Sequence[Event]) -> bool:
        body = orjson.dumps(event_list(events))
        error: object = None
        for delay in [*backoff_delays(self.initial_backoff), None]:
            error = await self._post(body)
            if error is None:
                return True
            if delay is None:
                break
            await asyncio.sleep(delay)
        handle_plugin_error(self.name, error, events)
        return False

    async def _post(self, body: bytes) -> object:
        """None on success, else what went wrong (kube retries on any error)."""
        session = self._ensure_session()
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.target.headers}
        try:
            async with session.post(
                self.target.url, data=body, headers=headers, server_hostname=self.target.server_hostname
            ) as response:
                text = await response.read()
                if 200 <= response.status < 300:
                    return None
                return f"the server responded with the status code {response.status}: {text[:512]!r}"
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            return f"{type(err).__name__}: {err}"

    async def shutdown(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
