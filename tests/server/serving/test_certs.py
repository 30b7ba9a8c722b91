"""Generated serving and client certificates: names, validity, reuse and renewal on restart."""

from __future__ import annotations

import ipaddress
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from server.serving.certs import (
    ServingFiles,
    ensure_client_ca,
    ensure_self_signed,
    issue_client_cert,
    load_ca_bundle,
    peer_identity,
    verify_client_cert,
)

SVC = "api.pizza-apiserver.svc"


def _certs(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())


def _sans(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(ext.get_values_for_type(x509.DNSName)), {
        str(i) for i in ext.get_values_for_type(x509.IPAddress)
    }


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generates_ca_and_serving_cert_covering_requested_names(tmp_path: Path) -> None:
    files = ensure_self_signed(tmp_path / "certs", dns_names=[SVC, "10.96.0.10"], ip_addresses=["192.0.2.7"])

    assert files == ServingFiles(
        ca_cert_path=tmp_path / "certs" / "ca.crt",
        cert_path=tmp_path / "certs" / "apiserver.crt",
        key_path=tmp_path / "certs" / "apiserver.key",
    )
    (ca,) = _certs(files.ca_cert_path)
    leaf, chained_ca = _certs(files.cert_path)
    assert chained_ca == ca  # kube writes the CA after the serving cert
    assert re.fullmatch(r"pizza-apiserver-ca@\d+", ca.subject.rfc4514_string().removeprefix("CN="))
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    leaf.verify_directly_issued_by(ca)
    dns, ips = _sans(leaf)
    assert dns == {"localhost", SVC}
    assert ips == {"127.0.0.1", "::1", "10.96.0.10", "192.0.2.7"}
    usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]
    lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert timedelta(days=365) <= lifetime <= timedelta(days=366)
    assert ca.not_valid_after_utc - datetime.now(UTC) > timedelta(days=3600)
    key = serialization.load_pem_private_key(files.key_path.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert _mode(files.key_path) == 0o600
    assert _mode(tmp_path / "certs" / "ca.key") == 0o600
    assert not list((tmp_path / "certs").glob(".*tmp"))  # no temporary files left behind


def test_reuses_valid_files_on_restart(tmp_path: Path) -> None:
    first = ensure_self_signed(tmp_path, dns_names=[SVC], ip_addresses=[])
    before = {p: p.read_bytes() for p in (first.ca_cert_path, first.cert_path, first.key_path)}

    # Same names in another spelling, a subset of them, and a later (but not near-expiry) clock.
    ensure_self_signed(tmp_path, dns_names=[SVC.upper(), "127.0.0.1"], ip_addresses=[])
    ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[], now=datetime.now(UTC) + timedelta(days=200))

    assert {p: p.read_bytes() for p in before} == before


def test_new_names_reissue_the_serving_cert_but_keep_the_ca(tmp_path: Path) -> None:
    first = ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[])
    ca_before = first.ca_cert_path.read_bytes()
    cert_before = first.cert_path.read_bytes()

    again = ensure_self_signed(tmp_path, dns_names=[SVC], ip_addresses=["::2"])

    assert again.ca_cert_path.read_bytes() == ca_before
    assert again.cert_path.read_bytes() != cert_before
    dns, ips = _sans(_certs(again.cert_path)[0])
    assert SVC in dns and "::2" in ips


def test_serving_cert_expiring_within_30_days_is_renewed_by_the_same_ca(tmp_path: Path) -> None:
    first = ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[])
    ca_before = first.ca_cert_path.read_bytes()
    old_leaf = _certs(first.cert_path)[0]

    later = datetime.now(UTC) + timedelta(days=340)
    ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[], now=later)

    new_leaf = _certs(first.cert_path)[0]
    assert first.ca_cert_path.read_bytes() == ca_before
    assert new_leaf.serial_number != old_leaf.serial_number
    assert new_leaf.not_valid_after_utc - later > timedelta(days=300)


def test_expiring_ca_is_replaced_and_the_serving_cert_follows(tmp_path: Path) -> None:
    first = ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[])
    old_ca = _certs(first.ca_cert_path)[0]

    later = datetime.now(UTC) + timedelta(days=3640)
    ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[], now=later)

    (new_ca,) = _certs(first.ca_cert_path)
    assert new_ca.serial_number != old_ca.serial_number
    _certs(first.cert_path)[0].verify_directly_issued_by(new_ca)


def test_mismatched_or_corrupt_files_are_regenerated(tmp_path: Path) -> None:
    files = ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[])
    stranger = ec.generate_private_key(ec.SECP256R1())
    files.key_path.write_bytes(
        stranger.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[])
    key = serialization.load_pem_private_key(files.key_path.read_bytes(), password=None)
    assert key.public_key() == _certs(files.cert_path)[0].public_key()

    files.ca_cert_path.write_text("not a certificate")
    ensure_self_signed(tmp_path, dns_names=[], ip_addresses=[])
    (ca,) = _certs(files.ca_cert_path)
    _certs(files.cert_path)[0].verify_directly_issued_by(ca)


def test_admin_client_cert_carries_user_and_groups_and_is_reused(tmp_path: Path) -> None:
    ca_cert, ca_key = ensure_client_ca(tmp_path / "certs")
    assert (ca_cert.name, ca_key.name) == ("client-ca.crt", "client-ca.key")
    assert ensure_client_ca(tmp_path / "certs") == (ca_cert, ca_key)

    cert, key = issue_client_cert(
        ca_cert,
        ca_key,
        common_name="admin",
        organizations=["system:masters"],
        out_dir=tmp_path,
        basename="admin",
    )

    assert (cert, key) == (tmp_path / "admin.crt", tmp_path / "admin.key")
    assert _mode(key) == 0o600
    der = _certs(cert)[0].public_bytes(serialization.Encoding.DER)
    assert peer_identity(der) == ("admin", ["system:masters"])
    assert verify_client_cert(der, load_ca_bundle(ca_cert))
    usages = _certs(cert)[0].extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]

    cert_bytes = cert.read_bytes()
    issue_client_cert(
        ca_cert,
        ca_key,
        common_name="admin",
        organizations=["system:masters"],
        out_dir=tmp_path,
        basename="admin",
    )
    assert cert.read_bytes() == cert_bytes

    # Asking for other groups must not hand back the old identity.
    issue_client_cert(
        ca_cert, ca_key, common_name="admin", organizations=["a", "b"], out_dir=tmp_path, basename="admin"
    )
    assert peer_identity(_certs(cert)[0].public_bytes(serialization.Encoding.DER)) == ("admin", ["a", "b"])


def test_peer_identity_without_common_name() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, "only-org")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    assert peer_identity(cert.public_bytes(serialization.Encoding.DER)) == ("", ["only-org"])


def test_verify_client_cert_tells_which_ca_signed_and_checks_usage_and_time(tmp_path: Path) -> None:
    ca_a = ensure_client_ca(tmp_path / "a")
    ca_b = ensure_client_ca(tmp_path / "b")
    cert, _ = issue_client_cert(*ca_a, common_name="u", organizations=[], out_dir=tmp_path, basename="u")
    der = _certs(cert)[0].public_bytes(serialization.Encoding.DER)

    assert verify_client_cert(der, load_ca_bundle(ca_a[0]))
    assert not verify_client_cert(der, load_ca_bundle(ca_b[0]))
    assert verify_client_cert(der, [*load_ca_bundle(ca_b[0]), *load_ca_bundle(ca_a[0])])
    assert not verify_client_cert(der, load_ca_bundle(ca_a[0]), now=datetime.now(UTC) + timedelta(days=400))

    serving = ensure_self_signed(tmp_path / "serving", dns_names=[], ip_addresses=[])
    serving_der = _certs(serving.cert_path)[0].public_bytes(serialization.Encoding.DER)
    # A serverAuth-only certificate is not a client credential even when its CA is trusted.
    assert not verify_client_cert(serving_der, load_ca_bundle(serving.ca_cert_path))


def test_ip_sans_are_real_ip_entries(tmp_path: Path) -> None:
    files = ensure_self_signed(tmp_path, dns_names=["fd00::1"], ip_addresses=[])
    ext = _certs(files.cert_path)[0].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("fd00::1") in ext.get_values_for_type(x509.IPAddress)
    assert "fd00::1" not in ext.get_values_for_type(x509.DNSName)
