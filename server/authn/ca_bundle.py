"""CA bundles that change while the server runs: a file polled for changes (kube's DynamicFileCAContent).

A bundle keeps both its PEM (for the TLS trust store, which must accept every client certificate before
authentication can look at it) and the parsed certificates (for the authenticators, which check which
bundle signed a certificate). A bundle that fails to load keeps the previous one, as kube does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from server.background_task import BackgroundTask, check_every
from server.serving import file_stamp
from server.serving.file_stamp import DEFAULT_CHECK_INTERVAL, FileStamp

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CABundle:
    pem: bytes = b""
    certs: tuple[x509.Certificate, ...] = ()

    @classmethod
    def parse(cls, pem: bytes, name: str) -> CABundle:
        """Every certificate of a PEM bundle; ValueError when there is none or one does not parse."""
        try:
            certs = tuple(x509.load_pem_x509_certificates(pem))
        except ValueError as err:
            raise ValueError(f"unable to load CA bundle {name!r}: {err}") from err
        if not certs:
            raise ValueError(f"missing content for CA bundle {name!r}")
        return cls(pem.strip() + b"\n", certs)


EMPTY_BUNDLE = CABundle()


class FileCA:
    """A CA bundle file, re-read when its stamp changes; `on_change` runs after every successful reload.

    Reads go through `asyncio.to_thread`: a slow disk must not stall requests.
    """

    __slots__ = ("_current", "_name", "_on_change", "_path", "_poller", "_stamp")

    def __init__(
        self,
        name: str,
        path: Path,
        *,
        interval: float = DEFAULT_CHECK_INTERVAL,
        on_change: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._name = name
        self._path = path
        self._on_change = on_change
        self._current = EMPTY_BUNDLE
        self._stamp: FileStamp = None
        self._poller = BackgroundTask(
            f"reload-{name}",
            functools.partial(
                check_every,
                interval,
                self.reload_if_changed,
                logger,
                f"reloading the {name} CA bundle failed",
            ),
        )

    @property
    def current(self) -> CABundle:
        return self._current

    @property
    def path(self) -> Path:
        return self._path

    def set_on_change(self, on_change: Callable[[], Awaitable[None]]) -> None:
        self._on_change = on_change

    async def load(self) -> CABundle:
        """The first load: a missing or broken file is an error (kube refuses to start)."""
        stamp, pem = await asyncio.to_thread(file_stamp.read_stamped, self._path)
        self._current = CABundle.parse(pem, f"{self._name}::{self._path}")
        self._stamp = stamp
        return self._current

    async def reload_if_changed(self) -> bool:
        try:
            stamp = await asyncio.to_thread(file_stamp.stamp, self._path)
            if stamp == self._stamp:
                return False
            stamp, pem = await asyncio.to_thread(file_stamp.read_stamped, self._path)
            bundle = CABundle.parse(pem, f"{self._name}::{self._path}")
        except (OSError, ValueError) as err:
            logger.warning("keeping the previous %s CA bundle: %s", self._name, err)
            return False
        self._stamp = stamp
        if bundle.pem == self._current.pem:
            return False
        self._current = bundle
        logger.info("loaded a new %s CA bundle from %s", self._name, self._path)
        if self._on_change is not None:
            await self._on_change()
        return True

    def start(self) -> None:
        self._poller.start()

    async def stop(self) -> None:
        await self._poller.stop()
