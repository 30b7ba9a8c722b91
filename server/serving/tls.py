"""The server's TLS context, and a holder that swaps in renewed certificates without a restart.

Why an SNI callback: aiohttp binds one ``SSLContext`` to the listening socket for its lifetime.
OpenSSL calls the servername callback for every ClientHello — also when the client sends no SNI
(verified by tests with an IP-address Python client and ``openssl s_client -noservername``; the
callback then gets ``server_name=None``) — and assigning ``ssl_object.context`` there switches the
new connection to the current context (``SSL_set_SSL_CTX``: certificate, key, ALPN and the client
CA store used for verification). Established connections keep the context they were accepted
with, so a reload never drops them. The verify mode stays that of the listening context, which is
why every context built here uses the same one.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from server.background_task import BackgroundTask, check_every
from server.serving.cipher_suites import openssl_cipher_string, tls_version
from server.serving.curves import apply_groups, groups_list
from server.serving.file_stamp import DEFAULT_CHECK_INTERVAL, FileStamp, stamp_all

logger = logging.getLogger(__name__)

# HTTP/2 first, as Go's http.Server offers it unless kube's --disable-http2-serving is set.
ALPN_PROTOCOLS = ("h2", "http/1.1")
HTTP1_ONLY = ("http/1.1",)


@dataclass(frozen=True, slots=True)
class TLSPolicy:
    """What the handshake may negotiate: kube's --tls-min-version, --tls-cipher-suites and
    --tls-curve-preferences; and the application protocols offered by ALPN (``h2`` unless
    ``--disable-http2-serving``, which ``TLSSite`` must agree with).

    The default is Go's server defaults: TLS ≥ 1.2, Go's TLS 1.2 suites (TLS 1.3 suites are not
    configurable in either) and Go's key exchange groups (``server.serving.curves``). Below TLS 1.2
    the cipher string ends in ``@SECLEVEL=0``: OpenSSL 3's default level 1 forbids the SHA-1
    signatures TLS 1.0 and 1.1 are built on, so without it they would be refused despite the flag.
    """

    minimum_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    cipher_string: str = openssl_cipher_string([])
    groups: str = ""  # "" when built: Go's defaults, computed at first use (needs OpenSSL probing)
    # A bare policy offers HTTP/1.1 only: its contexts may serve a plain aiohttp site, which cannot
    # answer h2; the server's (``from_flags``) offers h2 too, served by ``TLSSite``.
    alpn: tuple[str, ...] = HTTP1_ONLY

    @classmethod
    def from_flags(
        cls, min_version: str, cipher_suites: list[str], curve_ids: Sequence[int] = (), http2: bool = True
    ) -> TLSPolicy:
        minimum = tls_version(min_version)
        ciphers = openssl_cipher_string(cipher_suites)
        if not ciphers:  # only TLS 1.3 names: no TLS 1.2 suite is left, as in Go
            minimum = ssl.TLSVersion.TLSv1_3
        elif minimum < ssl.TLSVersion.TLSv1_2:
            ciphers += ":@SECLEVEL=0"
        return cls(minimum, ciphers, groups_list(tuple(curve_ids)), ALPN_PROTOCOLS if http2 else HTTP1_ONLY)

    def apply(self, context: ssl.SSLContext) -> None:
        with warnings.catch_warnings():  # ssl deprecates TLSv1/TLSv1_1; kube's flag still allows them
            warnings.simplefilter("ignore", DeprecationWarning)
            context.minimum_version = self.minimum_version
        if self.cipher_string:
            context.set_ciphers(self.cipher_string)
        apply_groups(context, self.groups or groups_list(()))
        context.set_alpn_protocols(list(self.alpn))


DEFAULT_POLICY = TLSPolicy()


def build_server_context(
    cert_path: Path,
    key_path: Path,
    client_ca_paths: Sequence[Path],
    extra_client_cas: bytes = b"",
    policy: TLSPolicy = DEFAULT_POLICY,
) -> ssl.SSLContext:
    """A server context for TLS >= 1.2 that asks for, but does not require, a client certificate.

    Requests without a client certificate must still reach the authentication layer so it can
    answer 401 with a Status (or accept a bearer token / request-header user), hence CERT_OPTIONAL.
    A certificate from a CA not in ``client_ca_paths`` fails the handshake (Python cannot defer that
    decision to the authenticator as Go's RequestClientCert does). ``extra_client_cas`` is PEM of
    further client CAs that do not live in files of ours (e.g. from the cluster's ConfigMap). Reads
    files synchronously: call it through ``asyncio.to_thread`` from the event loop.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    policy.apply(context)
    context.load_cert_chain(certfile=cert_path, keyfile=key_path)
    for ca_path in client_ca_paths:
        context.load_verify_locations(cafile=ca_path)
    if extra_client_cas.strip():
        context.load_verify_locations(cadata=extra_client_cas.decode("ascii"))
    # Without any CA, OpenSSL would reject every presented client certificate; ignore them instead.
    context.verify_mode = ssl.CERT_OPTIONAL if client_ca_paths or extra_client_cas.strip() else ssl.CERT_NONE
    return context


class ReloadingTLS:
    """Serves the newest certificate, key and client CAs found on disk.

    Give ``listening_context`` to the server socket; run ``start()`` for periodic checks or call
    ``reload_if_changed()`` directly. A failed rebuild (e.g. a key written before its certificate)
    keeps the previous context and is retried on the next check. Client CAs that change elsewhere
    (delegated authentication's ConfigMap and CA files) arrive through ``set_extra_client_cas``.
    """

    __slots__ = (
        "_ca_paths",
        "_cert_path",
        "_current",
        "_extra_cas",
        "_key_path",
        "_listening",
        "_lock",
        "_policy",
        "_poller",
        "_stamps",
    )

    def __init__(
        self,
        cert_path: Path,
        key_path: Path,
        client_ca_paths: Sequence[Path],
        *,
        initial: ssl.SSLContext,
        stamps: tuple[FileStamp, ...],
        check_interval: float = DEFAULT_CHECK_INTERVAL,
        policy: TLSPolicy = DEFAULT_POLICY,
    ) -> None:
        """Prefer ``await ReloadingTLS.load(...)``, which builds ``initial`` and ``stamps`` off the loop."""
        self._cert_path = cert_path
        self._key_path = key_path
        self._ca_paths = tuple(client_ca_paths)
        self._listening = initial
        self._current = initial
        self._stamps = stamps
        self._extra_cas = b""
        self._policy = policy
        self._lock = asyncio.Lock()  # one rebuild at a time, so none can undo another's newer input
        self._poller = BackgroundTask(
            "tls-reload",
            functools.partial(
                check_every,
                check_interval,
                self.reload_if_changed,
                logger,
                "checking TLS files for changes failed",
            ),
        )
        initial.sni_callback = self._on_client_hello

    @classmethod
    async def load(
        cls,
        cert_path: Path,
        key_path: Path,
        client_ca_paths: Sequence[Path],
        *,
        check_interval: float = DEFAULT_CHECK_INTERVAL,
        policy: TLSPolicy = DEFAULT_POLICY,
    ) -> ReloadingTLS:
        """Build the first context in a worker thread (file reads) and remember the files' stamps."""
        paths = (cert_path, key_path, *client_ca_paths)
        stamps = await asyncio.to_thread(stamp_all, paths)
        initial = await asyncio.to_thread(
            build_server_context, cert_path, key_path, client_ca_paths, b"", policy
        )
        return cls(
            cert_path,
            key_path,
            client_ca_paths,
            initial=initial,
            stamps=stamps,
            check_interval=check_interval,
            policy=policy,
        )

    @property
    def listening_context(self) -> ssl.SSLContext:
        """The context to bind to the listening socket; it routes each handshake to ``current``."""
        return self._listening

    @property
    def current(self) -> ssl.SSLContext:
        return self._current

    async def reload_if_changed(self) -> bool:
        """Rebuild the context if any file's stamp changed; return whether a new context is live."""
        async with self._lock:
            paths = (self._cert_path, self._key_path, *self._ca_paths)
            stamps = await asyncio.to_thread(stamp_all, paths)
            if stamps == self._stamps:
                return False
            try:
                context = await asyncio.to_thread(
                    build_server_context,
                    self._cert_path,
                    self._key_path,
                    self._ca_paths,
                    self._extra_cas,
                    self._policy,
                )
            except (OSError, ssl.SSLError, ValueError) as err:
                # Stamps are not recorded, so the next check tries again once the files settle.
                logger.warning(
                    "keeping the previous TLS configuration: rebuilding from %s failed: %s", paths, err
                )
                return False
            self._current = context
            self._stamps = stamps
            logger.info("loaded new serving certificate from %s", self._cert_path)
            return True

    async def set_extra_client_cas(self, pem: bytes) -> bool:
        """Trust these client CAs (PEM) besides the files; return whether a new context is live.

        A bundle that does not load keeps the previous context and raises, so the caller can report it.
        """
        async with self._lock:
            if pem == self._extra_cas:
                return False
            context = await asyncio.to_thread(
                build_server_context, self._cert_path, self._key_path, self._ca_paths, pem, self._policy
            )
            self._extra_cas = pem
            self._current = context
            logger.info("loaded new client CA bundles for TLS verification")
            return True

    async def start(self) -> None:
        """Begin checking the files every ``check_interval`` seconds in a background task."""
        self._poller.start()

    async def stop(self) -> None:
        await self._poller.stop()

    def _on_client_hello(
        self, ssl_object: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext
    ) -> None:
        current = self._current
        if current is not self._listening:
            ssl_object.context = current
