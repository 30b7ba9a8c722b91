"""POSTing AdmissionReviews: one aiohttp session per CA bundle, reused by every call (kube's ClientManager).

kube caches one REST client per (clientConfig, credentials); here a session (and its connection pool)
per distinct trust and credentials, so calls reuse connections; TLS contexts are built in a worker
thread (loading the system CAs reads files). Failures to get an answer become `CallingError` with
client-go's texts (`Post "<url>?timeout=10s": context deadline exceeded`), which the dispatchers
turn into kube's `failed calling webhook "<name>": failed to call webhook: ...`.

With a service resolver (``--enable-aggregator-routing``), a `service` hook is dialled at the endpoint
it resolves to, while the Host header, the TLS server name and the URL in error texts stay
``<name>.<namespace>.svc:<port>``, as kube's dialer override does; a resolution failure reads as
kube's (`Post "https://x.ns.svc:443/...": no endpoints available for service "x"`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any

import aiohttp

from apis.meta import errors
from apis.meta.errors import StatusError
from server.admission.webhook.credentials import WebhookCredentials
from server.admission.webhook.hooks import Hook
from server.admission.webhook.service_resolver import EndpointServiceResolver, ResolutionError


@dataclass
class CallingError(Exception):
    """kube's ErrCallingWebhook: the webhook could not be asked (or answered nonsense)."""

    webhook: str
    reason: str
    status: StatusError

    def __str__(self) -> str:
        return f'failed calling webhook "{self.webhook}": {self.reason}'


def _tls_context(ca_bundle: bytes, cert: tuple[str, str] | None) -> ssl.SSLContext:
    """System CAs plus the hook's caBundle (kube appends it to the default pool). Reads files."""
    context = ssl.create_default_context()
    if ca_bundle:
        context.load_verify_locations(cadata=ca_bundle.decode("utf-8", "replace"))
    if cert is not None:
        context.load_cert_chain(cert[0], cert[1])
    # kube speaks HTTP/1.1 to webhooks (HTTP/2 only to loopback); aiohttp is HTTP/1.1 only.
    context.set_alpn_protocols(["http/1.1"])
    return context


def timeout_param(seconds: float) -> str:
    """The remaining time as kube sends it: whole seconds, rounded up (`10s`)."""
    whole = int(seconds)
    if whole != seconds:
        whole += 1
    return f"{whole}s"


class ClientManager:
    """Sessions by (CA bundle, client credentials). Close with `close()` at shutdown."""

    def __init__(
        self,
        credentials: WebhookCredentials | None = None,
        resolver: EndpointServiceResolver | None = None,
    ) -> None:
        self._credentials = credentials or WebhookCredentials()
        self._resolver = resolver
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._lock = asyncio.Lock()

    async def _session(
        self, hook: Hook, url: urllib.parse.SplitResult
    ) -> tuple[aiohttp.ClientSession, dict[str, str]]:
        auth = self._credentials.for_host(url.hostname or "", url.port or 443)
        key = hashlib.sha256(hook.client.ca_bundle + repr(auth.cert).encode()).hexdigest()
        session = self._sessions.get(key)
        if session is None:
            async with self._lock:
                session = self._sessions.get(key)
                if session is None:
                    context = await asyncio.to_thread(_tls_context, hook.client.ca_bundle, auth.cert)
                    session = aiohttp.ClientSession(
                        connector=aiohttp.TCPConnector(ssl=context, limit=0),
                        timeout=aiohttp.ClientTimeout(total=None),
                    )
                    self._sessions[key] = session
        return session, auth.headers

    async def post(self, hook: Hook, review: dict[str, Any]) -> Any:
        """The JSON answer of the webhook, or CallingError."""
        target = hook.client.target
        url = urllib.parse.urlsplit(target)
        seconds = float(hook.timeout_seconds)
        query = [
            *urllib.parse.parse_qsl(url.query, keep_blank_values=True),
            ("timeout", timeout_param(seconds)),
        ]
        full = urllib.parse.urlunsplit(url._replace(query=urllib.parse.urlencode(query)))
        shown = f'Post "{full}"'
        try:
            session, headers = await self._session(hook, url)
        except (ssl.SSLError, OSError, ValueError) as err:
            raise CallingError(
                hook.name, f"could not get REST client: {err}", errors.internal_error(str(err))
            ) from None
        server_name = hook.client.server_name if hook.client.url is None else None
        target_url = full
        if server_name is not None and self._resolver is not None:
            try:
                endpoint = self._resolver.resolve(
                    hook.client.service_namespace, hook.client.service_name, hook.client.service_port
                )
            except ResolutionError as err:
                raise _call_failed(hook, f"{shown}: {err}") from None
            # Dial the endpoint; Host and the TLS name stay the service's (kube's Dial override).
            headers = {"Host": url.netloc, **headers}
            target_url = urllib.parse.urlunsplit(urllib.parse.urlsplit(full)._replace(netloc=endpoint.netloc))
        try:
            async with asyncio.timeout(seconds):
                async with session.post(
                    target_url,
                    data=json.dumps(review).encode(),
                    headers={"Content-Type": "application/json", "Accept": "application/json", **headers},
                    server_hostname=server_name,
                ) as response:
                    body = await response.read()
        except TimeoutError:
            raise _call_failed(hook, f"{shown}: context deadline exceeded") from None
        except aiohttp.ClientConnectorCertificateError as err:
            raise _call_failed(
                hook, f"{shown}: tls: failed to verify certificate: {err.certificate_error}"
            ) from None
        except aiohttp.ClientConnectorDNSError as err:
            # Go's net.DNSError through the dialer: "dial tcp: lookup <host>: no such host".
            raise _call_failed(
                hook, f"{shown}: dial tcp: lookup {err.host}: {_dns_reason(err.os_error)}"
            ) from None
        except aiohttp.ClientConnectorError as err:
            # Go's net error text: "dial tcp <addr>: connect: connection refused".
            code = err.os_error.errno if err.os_error else None
            why = os.strerror(code).lower() if code else str(err)
            raise _call_failed(hook, f"{shown}: dial tcp {err.host}:{err.port}: connect: {why}") from None
        except (aiohttp.ClientError, OSError) as err:
            raise _call_failed(hook, f"{shown}: {err or type(err).__name__}") from None
        if not 200 <= response.status < 300:
            raise _status_failure(hook, response.status, body)
        try:
            return json.loads(body)
        except ValueError as err:
            raise CallingError(
                hook.name,
                f"failed to call webhook: {err}",
                errors.service_unavailable("error calling webhook"),
            ) from None

    async def close(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()


def _dns_reason(error: OSError | None) -> str:
    """Go's text for a failed lookup: "no such host" when the name does not exist."""
    if isinstance(error, socket.gaierror) and error.errno in _NO_SUCH_HOST:
        return "no such host"
    return (error.strerror or str(error)).lower() if error else "no such host"


_NO_SUCH_HOST = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


def _call_failed(hook: Hook, reason: str) -> CallingError:
    return CallingError(
        hook.name, f"failed to call webhook: {reason}", errors.service_unavailable("error calling webhook")
    )


def _status_failure(hook: Hook, code: int, body: bytes) -> CallingError:
    """client-go's transformResponse: a Status body is the error; otherwise kube's generic text."""
    message = ""
    try:
        status = json.loads(body)
        if isinstance(status, dict) and status.get("kind") == "Status":
            message = str(status.get("message") or "")
    except ValueError:
        pass
    if not message:
        text = body.decode("utf-8", "replace").strip()
        message = f'an error on the server ("{text}") has prevented the request from succeeding'
    status_error = StatusError(code, "InternalError" if code >= 500 else "BadRequest", message)
    return CallingError(hook.name, f"failed to call webhook: {message}", status_error)
