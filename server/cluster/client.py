"""A small async client for the cluster: JSON create and get with kube's webhook retries, and watch streams.

Delegated authentication and authorization make three kinds of calls (TokenReview, SubjectAccessReview,
ConfigMap get+watch); a generated client would add a synchronous stack or a second async one for that.
Retries follow k8s.io/apiserver's webhook backoff (500ms, x1.5, jitter 0.2, 5 steps) and retry only what
client-go's DefaultShouldRetry retries: 429, 500, 503 (the server asks to retry), 504 and a dropped
connection. Credentials are refreshed off the loop at most every `refresh_interval` seconds and at once
after a 401, so rotated service-account tokens and expiring exec credentials keep working.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import ssl
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from server.cluster.credentials import Credentials, CredentialSource, client_ssl_context

logger = logging.getLogger(__name__)

RETRIABLE_STATUS = frozenset({429, 500, 503, 504})
DEFAULT_TIMEOUT = 10.0  # kube's TokenRequestTimeout / authorization ClientTimeout
DEFAULT_REFRESH_INTERVAL = 60.0


class ClusterError(Exception):
    """A call to the cluster failed; `status` is the HTTP code, 0 when no answer arrived."""

    def __init__(self, message: str, status: int = 0, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retriable = retriable


@dataclass(frozen=True, slots=True)
class Backoff:
    """k8s.io/apimachinery wait.Backoff as DefaultAuthWebhookRetryBackoff configures it."""

    initial: float = 0.5
    factor: float = 1.5
    jitter: float = 0.2
    steps: int = 5

    def delays(self) -> Iterator[float]:
        """The sleeps between `steps` attempts."""
        delay = self.initial
        for _ in range(self.steps - 1):
            yield delay * (1 + random.random() * self.jitter) if self.jitter else delay
            delay *= self.factor


class ClusterClient:
    """One cluster identity (kubeconfig or in-cluster) and one connection pool. Create with `connect`."""

    def __init__(
        self,
        source: CredentialSource,
        credentials: Credentials,
        tls: ssl.SSLContext | None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        backoff: Backoff = Backoff(),
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
    ) -> None:
        self._source = source
        self._credentials = credentials
        self._tls: ssl.SSLContext | bool = tls if tls is not None else False
        self._timeout = timeout
        self._backoff = backoff
        self._refresh_interval = refresh_interval
        self._refreshed_at = time.monotonic()
        self._refresh_lock = asyncio.Lock()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=100),
            timeout=aiohttp.ClientTimeout(total=None),
        )

    @classmethod
    async def connect(cls, source: CredentialSource, **kwargs: Any) -> ClusterClient:
        """Resolve credentials and build the TLS context in a worker thread (file reads, exec plugins)."""
        credentials = await asyncio.to_thread(source.load)
        tls = await asyncio.to_thread(client_ssl_context, credentials)
        return cls(source, credentials, tls, **kwargs)

    @property
    def host(self) -> str:
        return self._credentials.host

    @property
    def description(self) -> str:
        return self._source.description

    async def close(self) -> None:
        await self._session.close()

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST a JSON object and return the answer, retrying transient failures with backoff."""
        return await self._with_retries("POST", path, body=body)

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await self._with_retries("GET", path, params=params)

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch (`watch=1` is added), one JSON object per line, until the server ends it."""
        await self._maybe_refresh()
        query = {**params, "watch": "1"}
        try:
            async with self._session.get(
                self.host + path,
                params=query,
                headers=self._headers(),
                ssl=self._tls,
                server_hostname=self._credentials.server_name,
                timeout=aiohttp.ClientTimeout(total=None, connect=self._timeout, sock_read=None),
            ) as response:
                if response.status != 200:
                    if response.status == 401:
                        await self._maybe_refresh(force=True)
                    raise await _error_from(response)
                # Split lines by hand: a ConfigMap of CA bundles can outgrow aiohttp's readline limit.
                pending = b""
                async for chunk in response.content.iter_any():
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield json.loads(line)
        except aiohttp.ClientError as err:
            raise ClusterError(f"watch {path} on {self.host}: {err}", retriable=True) from err

    async def _with_retries(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        delays = self._backoff.delays()
        refreshed_after_401 = False
        while True:
            try:
                return await self._once(method, path, body, params)
            except ClusterError as err:
                if err.status == 401 and not refreshed_after_401:
                    refreshed_after_401 = True
                    await self._maybe_refresh(force=True)
                    continue
                delay = next(delays, None) if err.retriable else None
                if delay is None:
                    raise
                logger.debug("retrying %s %s in %.2fs: %s", method, path, delay, err)
                await asyncio.sleep(delay)

    async def _once(
        self, method: str, path: str, body: Mapping[str, Any] | None, params: Mapping[str, str] | None
    ) -> dict[str, Any]:
        await self._maybe_refresh()
        try:
            async with self._session.request(
                method,
                self.host + path,
                json=body,
                params=params,
                headers=self._headers(),
                ssl=self._tls,
                server_hostname=self._credentials.server_name,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                if response.status >= 300:
                    raise await _error_from(response)
                return await response.json(content_type=None)
        except aiohttp.ClientConnectorError as err:  # nobody listening: client-go does not retry this
            raise ClusterError(f"{method} {self.host}{path}: {err}") from err
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError) as err:
            # The connection dropped mid-call (client-go's IsConnectionReset): worth another try.
            raise ClusterError(f"{method} {self.host}{path}: {err}", retriable=True) from err
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            raise ClusterError(f"{method} {self.host}{path}: {err or type(err).__name__}") from err

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "pizza-apiserver"}
        if self._credentials.token:
            headers["Authorization"] = f"Bearer {self._credentials.token}"
        return headers

    async def _maybe_refresh(self, *, force: bool = False) -> None:
        asked_at = time.monotonic()
        if not force and asked_at - self._refreshed_at < self._refresh_interval:
            return
        async with self._refresh_lock:
            if self._refreshed_at >= asked_at or (
                not force and time.monotonic() - self._refreshed_at < self._refresh_interval
            ):
                return  # another caller refreshed while this one waited
            self._refreshed_at = time.monotonic()
            try:
                credentials = await asyncio.to_thread(self._source.load)
                if credentials.tls_digest != self._credentials.tls_digest:
                    tls = await asyncio.to_thread(client_ssl_context, credentials)
                    self._tls = tls if tls is not None else False
            except Exception as err:  # keep talking with what we have; the cluster will say if it is stale
                logger.warning("refreshing credentials from %s failed: %s", self._source.description, err)
                return
            self._credentials = credentials


async def _error_from(response: aiohttp.ClientResponse) -> ClusterError:
    """kube answers errors with a Status; its message is what is worth logging."""
    text = await response.text(errors="replace")
    message = text[:500]
    try:
        status = json.loads(text)
        if isinstance(status, dict) and status.get("message"):
            message = str(status["message"])
    except ValueError:
        pass
    return ClusterError(
        f"{response.method} {response.url.path}: {response.status} {message}",
        response.status,
        retriable=response.status in RETRIABLE_STATUS,
    )
