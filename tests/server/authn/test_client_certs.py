"""The client-certificate cache: same answers as checking every time, and CA reloads are seen."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from server.authn.client_certs import ClientCertificates
from server.serving import certs
from server.serving.certs import ensure_client_ca, ensure_self_signed, issue_client_cert, load_ca_bundle


def _der(path: Path) -> bytes:
    return x509.load_pem_x509_certificates(path.read_bytes())[0].public_bytes(serialization.Encoding.DER)


def test_identity_and_verification_match_the_uncached_functions(tmp_path: Path) -> None:
    ca_a = ensure_client_ca(tmp_path / "a")
    ca_b = ensure_client_ca(tmp_path / "b")
    cert, _ = issue_client_cert(
        *ca_a, common_name="u", organizations=["g1", "g2"], out_dir=tmp_path, basename="u"
    )
    der = _der(cert)
    a, b = load_ca_bundle(ca_a[0]), load_ca_bundle(ca_b[0])
    cache = ClientCertificates()

    assert cache.identity(der) == ("u", ("g1", "g2"))
    assert cache.verified(der, a)
    assert not cache.verified(der, b)
    assert cache.verified(der, [*b, *a])
    later = (datetime.now(UTC) + timedelta(days=400)).timestamp()
    assert not cache.verified(der, a, now=later)  # the clock is checked on every use
    assert cache.verified(der, a)

    serving = ensure_self_signed(tmp_path / "serving", dns_names=[], ip_addresses=[])
    # A serverAuth-only certificate is not a client credential even when its CA is trusted.
    assert not cache.verified(_der(serving.cert_path), load_ca_bundle(serving.ca_cert_path))


def test_signature_checked_once_per_ca_set_and_again_after_a_reload(tmp_path: Path) -> None:
    ca = ensure_client_ca(tmp_path / "a")
    cert, _ = issue_client_cert(*ca, common_name="u", organizations=[], out_dir=tmp_path, basename="u")
    der = _der(cert)
    loaded = load_ca_bundle(ca[0])
    cache = ClientCertificates()
    with mock.patch.object(certs, "_issued_by", wraps=certs._issued_by) as issued_by:
        for _ in range(5):
            # A fresh tuple of the same objects, as a `client_cas()` callable builds on each request.
            assert cache.verified(der, tuple(loaded))
        assert issued_by.call_count == 1

        # A reload parses new objects: checked again, even though the bytes are the same.
        reloaded = load_ca_bundle(ca[0])
        assert cache.verified(der, reloaded)
        assert issued_by.call_count == 2

        # The CA was replaced by another one: the old answer must not survive.
        other = ensure_client_ca(tmp_path / "b")
        assert not cache.verified(der, load_ca_bundle(other[0]))
        assert not cache.verified(der, [])


def test_bounded(tmp_path: Path) -> None:
    ca = ensure_client_ca(tmp_path / "ca")
    cache = ClientCertificates(max_entries=3)
    ders = []
    for i in range(5):
        cert, _ = issue_client_cert(
            *ca, common_name=f"u{i}", organizations=[], out_dir=tmp_path, basename=f"u{i}"
        )
        ders.append(_der(cert))
        assert cache.identity(ders[-1]) == (f"u{i}", ())
    assert len(cache) == 3
    # Least recently used goes first: touching u2 keeps it when u0's slot is needed again.
    cache.identity(ders[2])
    cache.identity(ders[0])
    assert len(cache) == 3
    assert cache.identity(ders[2]) == ("u2", ())
