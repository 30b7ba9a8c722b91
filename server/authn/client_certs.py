"""Client certificates parsed and checked once, not on every request.

Checking which CA signed a client certificate costs a signature verification (~15% of the CPU of a
GET at 8 connections when it ran per request). The answer only changes when the certificate or the
trusted CAs change, so it is cached here, keyed by the certificate's DER bytes, and each entry
remembers the CA certificate *objects* it was checked against. A CA reload — a file change, or the
cluster's extension-apiserver-authentication ConfigMap — always parses new ``x509.Certificate``
objects (``CABundle.parse``), so an entry checked against the old ones no longer matches and the
certificate is checked again: reloads invalidate without any notification. Entries hold strong
references to their CAs, so an object identity is never reused while an entry compares against it.
Validity periods are not cached: ``ClientCertCheck.valid_at`` compares them with the clock on each
use. The cache is a bounded LRU, so a flood of distinct certificates costs at most ``max_entries``
entries (~1 KiB of DER each).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence

from cryptography import x509

from server.serving.certs import ClientCertCheck, check_client_cert, subject_identity

DEFAULT_MAX_ENTRIES = 256


class _Entry:
    """One certificate: its identity, and its check against the CAs of the last lookup."""

    __slots__ = ("cas", "cert", "check", "identity")

    def __init__(self, cert: x509.Certificate, identity: tuple[str, tuple[str, ...]]) -> None:
        self.cert = cert
        self.identity = identity
        self.cas: tuple[x509.Certificate, ...] | None = None
        self.check: ClientCertCheck | None = None


class ClientCertificates:
    """A bounded LRU of client certificates by DER: subject identity and CA verification."""

    __slots__ = ("_entries", "_max_entries")

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._max_entries = max_entries

    def identity(self, der: bytes) -> tuple[str, tuple[str, ...]]:
        """(CN, (O, ...)): the user name and groups kube derives from the certificate."""
        return self._entry(der).identity

    def verified(self, der: bytes, cas: Sequence[x509.Certificate], *, now: float | None = None) -> bool:
        """Whether one of ``cas`` directly signed the certificate, both valid at ``now`` (POSIX time),
        and the certificate may authenticate a client (``server.serving.certs.verify_client_cert``)."""
        entry = self._entry(der)
        check = entry.check
        if check is None or not _same_objects(entry.cas, cas):
            cas = tuple(cas)
            check = check_client_cert(entry.cert, cas)
            entry.cas, entry.check = cas, check
        return check.valid_at(time.time() if now is None else now)

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, der: bytes) -> _Entry:
        entries = self._entries
        entry = entries.get(der)
        if entry is not None:
            entries.move_to_end(der)
            return entry
        cert = x509.load_der_x509_certificate(der)
        common_name, organizations = subject_identity(cert)
        entry = _Entry(cert, (common_name, tuple(organizations)))
        entries[der] = entry
        if len(entries) > self._max_entries:
            entries.popitem(last=False)
        return entry


def _same_objects(cached: tuple[x509.Certificate, ...] | None, current: Sequence[x509.Certificate]) -> bool:
    """Identity, not equality: a few pointer comparisons per request, where equality would compare
    DER; a reload that re-reads the same bytes costs one more signature check, which is harmless."""
    if cached is None or len(cached) != len(current):
        return False
    return all(a is b for a, b in zip(cached, current, strict=True))
