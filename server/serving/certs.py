"""Self-signed serving and client certificates, generated once and reused across restarts.

Without ``--tls-cert-file`` the server makes its own CA and a serving certificate signed by it (as
kube's ``MaybeDefaultWithSelfSignedCerts`` does), so a client or the aggregator can pin one CA that
survives serving-cert renewals. In standalone mode it also makes a client CA and an admin client
certificate (CN=admin, O=system:masters) for the x509 authenticator and the admin kubeconfig.

Everything here reads or writes files synchronously: callers on the event loop must run these
functions through ``asyncio.to_thread`` so that key generation and disk I/O never block the loop.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    CertificateIssuerPublicKeyTypes,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Kube's generated certs live one year; a CA that outlives several serving certs lets clients pin it.
CA_VALIDITY = timedelta(days=3650)
CERT_VALIDITY = timedelta(days=365)
# Renew this long before expiry so a restart never keeps a certificate that dies while serving.
RENEW_BEFORE = timedelta(days=30)
# Backdating like kube (validFrom = now - 1h) tolerates clients whose clocks run slightly behind.
CLOCK_SKEW = timedelta(hours=1)

SERVING_HOST = "pizza-apiserver"
ALWAYS_DNS_NAMES = ("localhost",)
ALWAYS_IP_ADDRESSES = ("127.0.0.1", "::1")

SERVING_CA_BASENAME = "ca"
SERVING_BASENAME = "apiserver"  # kube's PairName: <cert-dir>/apiserver.crt and apiserver.key
CLIENT_CA_BASENAME = "client-ca"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Keys a CA on disk may hold (an operator may drop in an RSA CA); all can sign certificates.
_ISSUER_KEYS = (
    ec.EllipticCurvePrivateKey,
    rsa.RSAPrivateKey,
    ed25519.Ed25519PrivateKey,
    ed448.Ed448PrivateKey,
)


@dataclass(frozen=True, slots=True)
class ServingFiles:
    """Where the generated serving material lives; the CA is what clients should trust."""

    ca_cert_path: Path
    cert_path: Path
    key_path: Path


@dataclass(frozen=True, slots=True)
class _Pair:
    cert: x509.Certificate
    key: CertificateIssuerPrivateKeyTypes


def ensure_self_signed(
    cert_dir: Path,
    *,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    now: datetime | None = None,
) -> ServingFiles:
    """Return a CA and a serving certificate covering the given names, reusing valid files.

    ``dns_names`` entries that are IP literals are treated as IP SANs. ``now`` exists so tests can
    move the clock instead of waiting a year.
    """
    moment = _utc(now)
    cert_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    dns, ips = _split_names([*ALWAYS_DNS_NAMES, *dns_names], [*ALWAYS_IP_ADDRESSES, *ip_addresses])
    ca_cert_path, ca_key_path = _paths(cert_dir, SERVING_CA_BASENAME)
    ca = _ensure_ca(ca_cert_path, ca_key_path, f"{SERVING_HOST}-ca", moment)
    cert_path, key_path = _paths(cert_dir, SERVING_BASENAME)
    current = _load_pair(cert_path, key_path)
    if not (
        current is not None
        and _usable(current.cert, moment)
        and _issued_by(current.cert, ca.cert)
        and _covers(current.cert, dns, ips)
    ):
        key = _new_key()
        cert = _sign_leaf(
            ca,
            key,
            common_name=f"{SERVING_HOST}@{int(moment.timestamp())}",
            organizations=(),
            usage=ExtendedKeyUsageOID.SERVER_AUTH,
            dns_names=dns,
            ip_addresses=ips,
            now=moment,
        )
        _write_key(key_path, key)
        # The CA follows the leaf, as kube writes it, so clients that only know the CA can build the chain.
        _write_certs(cert_path, [cert, ca.cert])
    return ServingFiles(ca_cert_path=ca_cert_path, cert_path=cert_path, key_path=key_path)


def ensure_client_ca(cert_dir: Path, *, now: datetime | None = None) -> tuple[Path, Path]:
    """Return (cert, key) paths of the standalone client CA, generating it unless a valid one exists."""
    cert_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    cert_path, key_path = _paths(cert_dir, CLIENT_CA_BASENAME)
    _ensure_ca(cert_path, key_path, f"{SERVING_HOST}-client-ca", _utc(now))
    return cert_path, key_path


def issue_client_cert(
    ca_cert_path: Path,
    ca_key_path: Path,
    *,
    common_name: str,
    organizations: Sequence[str],
    out_dir: Path,
    basename: str,
    now: datetime | None = None,
) -> tuple[Path, Path]:
    """Return (cert, key) paths of a client certificate for CN/O, reusing a still-valid one.

    The x509 authenticator maps CN to the user name and O to groups, so the admin certificate is
    CN=admin, O=system:masters.
    """
    moment = _utc(now)
    ca = _load_pair(ca_cert_path, ca_key_path)
    if ca is None:
        raise ValueError(f"cannot load client CA from {ca_cert_path} and {ca_key_path}")
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    cert_path, key_path = _paths(out_dir, basename)
    current = _load_pair(cert_path, key_path)
    if (
        current is not None
        and _usable(current.cert, moment)
        and _issued_by(current.cert, ca.cert)
        and peer_identity(current.cert.public_bytes(serialization.Encoding.DER))
        == (common_name, list(organizations))
    ):
        return cert_path, key_path
    key = _new_key()
    cert = _sign_leaf(
        ca,
        key,
        common_name=common_name,
        organizations=organizations,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        dns_names=(),
        ip_addresses=(),
        now=moment,
    )
    _write_key(key_path, key)
    _write_certs(cert_path, [cert])
    return cert_path, key_path


def peer_identity(der: bytes) -> tuple[str, list[str]]:
    """Return (CN, [O...]) of a DER certificate: the user name and groups kube derives from it."""
    return subject_identity(x509.load_der_x509_certificate(der))


def subject_identity(cert: x509.Certificate) -> tuple[str, list[str]]:
    """(CN, [O...]) of a parsed certificate; see ``peer_identity``."""
    subject = cert.subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    organizations = [str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return common_name, organizations


def load_ca_bundle(path: Path) -> list[x509.Certificate]:
    """Read every certificate of a PEM bundle (synchronous: run via asyncio.to_thread)."""
    return x509.load_pem_x509_certificates(path.read_bytes())


@dataclass(frozen=True, slots=True)
class ClientCertCheck:
    """What checking a client certificate against a set of CAs found, apart from the clock.

    Signature checks dominate the cost of authenticating a request with a client certificate, and
    they do not change while the certificate and the CAs stay the same, so this is what callers may
    cache (see ``server.authn.client_certs``); ``valid_at`` adds the time checks, which must be
    redone on every use. Times are POSIX timestamps.
    """

    usable_for_client_auth: bool
    not_before: float
    not_after: float
    # The validity window of every CA that directly signed the certificate.
    issuer_windows: tuple[tuple[float, float], ...]

    def valid_at(self, timestamp: float) -> bool:
        if not self.usable_for_client_auth or not self.not_before <= timestamp <= self.not_after:
            return False
        return any(start <= timestamp <= end for start, end in self.issuer_windows)


def check_client_cert(cert: x509.Certificate, cas: Iterable[x509.Certificate]) -> ClientCertCheck:
    """Check usage and which of ``cas`` directly signed ``cert`` (CPU only: one signature check per CA)."""
    usable = True
    with contextlib.suppress(x509.ExtensionNotFound):
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        # Like Go's x509.Verify with ExtKeyUsageClientAuth: no EKU extension means any usage.
        usable = (
            ExtendedKeyUsageOID.CLIENT_AUTH in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages
        )
    issuers = tuple(
        (ca.not_valid_before_utc.timestamp(), ca.not_valid_after_utc.timestamp())
        for ca in cas
        if usable and _issued_by(cert, ca)
    )
    return ClientCertCheck(
        usable_for_client_auth=usable,
        not_before=cert.not_valid_before_utc.timestamp(),
        not_after=cert.not_valid_after_utc.timestamp(),
        issuer_windows=issuers,
    )


def verify_client_cert(der: bytes, cas: Sequence[x509.Certificate], *, now: datetime | None = None) -> bool:
    """Whether a client certificate was issued directly by one of ``cas`` and is usable for client auth.

    TLS already checked the chain against every loaded CA bundle at once; the authenticators need
    to know *which* bundle (client CA vs. request-header CA) signed it, as kube verifies each
    separately. Intermediates are not supported: Python 3.11's ssl only exposes the leaf.
    """
    cert = x509.load_der_x509_certificate(der)
    return check_client_cert(cert, cas).valid_at(_utc(now).timestamp())


def _ensure_ca(cert_path: Path, key_path: Path, name_prefix: str, now: datetime) -> _Pair:
    current = _load_pair(cert_path, key_path)
    if current is not None and _usable(current.cert, now) and _is_ca(current.cert):
        return current
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name_prefix}@{int(now.timestamp())}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_key(key_path, key)
    _write_certs(cert_path, [cert])
    return _Pair(cert=cert, key=key)


def _sign_leaf(
    ca: _Pair,
    key: ec.EllipticCurvePrivateKey,
    *,
    common_name: str,
    organizations: Iterable[str],
    usage: x509.ObjectIdentifier,
    dns_names: Sequence[str],
    ip_addresses: Sequence[IPAddress],
    now: datetime,
) -> x509.Certificate:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        # A leaf never outlives its CA: verifiers would reject the chain anyway.
        .not_valid_after(min(now + CERT_VALIDITY, ca.cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            # A CA's key signs certificates, so it is one of the issuer key types AKI accepts.
            x509.AuthorityKeyIdentifier.from_issuer_public_key(
                cast(CertificateIssuerPublicKeyTypes, ca.cert.public_key())
            ),
            critical=False,
        )
    )
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ip) for ip in ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca.key, hashes.SHA256())


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _split_names(dns_names: Iterable[str], ip_addresses: Iterable[str]) -> tuple[list[str], list[IPAddress]]:
    """Normalise and de-duplicate SANs, moving IP literals given as DNS names to the IP list."""
    dns: list[str] = []
    ips: list[IPAddress] = []
    for raw in [*dns_names, *ip_addresses]:
        name = raw.strip()
        if not name:
            continue
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            if name.lower() not in dns:
                dns.append(name.lower())
            continue
        if ip not in ips:
            ips.append(ip)
    return dns, ips


def _covers(cert: x509.Certificate, dns: Sequence[str], ips: Sequence[IPAddress]) -> bool:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return not dns and not ips
    have_dns = {n.lower() for n in sans.get_values_for_type(x509.DNSName)}
    have_ips = set(sans.get_values_for_type(x509.IPAddress))
    return set(dns) <= have_dns and set(ips) <= have_ips


def _usable(cert: x509.Certificate, now: datetime) -> bool:
    return cert.not_valid_before_utc <= now and cert.not_valid_after_utc - now > RENEW_BEFORE


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _load_pair(cert_path: Path, key_path: Path) -> _Pair | None:
    """Load a cert (first of the file) and its key; None when missing, unreadable or mismatched."""
    try:
        certs = x509.load_pem_x509_certificates(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return None
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if not isinstance(key, _ISSUER_KEYS):
        return None
    if key.public_key().public_bytes(der, spki) != certs[0].public_key().public_bytes(der, spki):
        return None
    return _Pair(cert=certs[0], key=key)


def _paths(directory: Path, basename: str) -> tuple[Path, Path]:
    return directory / f"{basename}.crt", directory / f"{basename}.key"


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    write_atomically(path, pem, mode=0o600)


def _write_certs(path: Path, certs: Sequence[x509.Certificate]) -> None:
    write_atomically(path, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs), mode=0o644)


def write_atomically(path: Path, data: bytes, *, mode: int) -> None:
    """Write via a temporary file and rename, so a reloader never reads a half-written file.

    The file is created with ``mode`` from the start: a private key is never briefly world-readable.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)  # os.open's mode is filtered by the umask; the caller asked for exactly this
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _utc(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else now.astimezone(UTC)
