"""Secure serving flags: kube's SecureServingOptions, plus the connection limits of Go's http.Server.

Names, defaults and help follow k8s.io/apiserver pkg/server/options/serving.go. Deliberate differences
for a server that must also run standalone on a laptop: ``--bind-address`` defaults to 127.0.0.1, and
``--secure-port`` defaults to 8443 with 0 meaning "pick a free port".

kube hard-codes its http.Server's timeouts (pkg/server/secure_serving.go: ReadHeaderTimeout 32s,
IdleTimeout 90s; the TLS handshake gets the read-header timeout, as Go's ``tlsHandshakeTimeout``
does) and its header limit (MaxHeaderBytes 1 MiB). The same defaults are flags here, so a test or an
operator behind a slow network can change them; kube has no flag for them, so the names are Go's
field names. ``--max-connections`` has no kube counterpart either: Go's per-connection cost is a few
KB, ours ~30 KB, so an unauthenticated client must not be able to open sockets without bound.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

from server.flags import CommaList, add_bool, add_duration, add_int, add_list, add_path
from server.serving.cipher_suites import TLS_VERSIONS, cipher_problems
from server.serving.curves import curve_problems

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")

# Go's http.Server in kube (pkg/server/secure_serving.go).
READ_HEADER_TIMEOUT = 32.0
IDLE_TIMEOUT = 90.0
MAX_HEADER_BYTES = 1 << 20
# ~30 KB each (docs/performance.md): 10,000 idle connections are ~300 MB.
MAX_CONNECTIONS = 10_000


@dataclass(slots=True)
class ServingOptions:
    bind_address: str = "127.0.0.1"
    secure_port: int = 8443
    cert_dir: Path | None = None  # complete(): <data-dir>/certs
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    serving_cert_dns_names: list[str] = field(default_factory=list)
    tls_cipher_suites: list[str] = field(default_factory=list)
    tls_min_version: str = ""
    tls_curve_preferences: list[str] = field(default_factory=list)  # numeric CurveIDs, as typed
    max_connections: int = MAX_CONNECTIONS
    read_header_timeout: float = READ_HEADER_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    max_header_bytes: int = MAX_HEADER_BYTES
    disable_http2_serving: bool = False
    http2_max_streams_per_connection: int = 0  # 0: kube's generic apiserver default, 100
    # derived by complete(): extra IP SANs for the generated serving certificate
    serving_cert_ip_addresses: list[str] = field(default_factory=list)

    @property
    def curve_ids(self) -> list[int]:
        """``--tls-curve-preferences`` as numbers (validate() reports those that are not)."""
        return [int(v) for v in self.tls_curve_preferences if _is_int(v)]

    @property
    def generates_serving_cert(self) -> bool:
        return self.tls_cert_file is None and self.tls_private_key_file is None

    def complete(self, data_dir: Path) -> None:
        """Fill defaults that depend on other flags (kept out of the help text, as in kube)."""
        if not self.bind_address.strip():
            self.bind_address = "0.0.0.0"  # kube: blank means all interfaces
        if self.cert_dir is None:
            self.cert_dir = data_dir / "certs"
        ips: list[str] = []
        try:
            bind = ipaddress.ip_address(self.bind_address)
        except ValueError:
            bind = None
        # Like kube's MaybeDefaultWithSelfSignedCerts: a specific bind address becomes an IP SAN.
        if bind is not None and not bind.is_unspecified:
            ips.append(str(bind))
        for name in self.serving_cert_dns_names:
            if is_ip(name) and name not in ips:
                ips.append(name)
        self.serving_cert_ip_addresses = ips
        self.serving_cert_dns_names = [n for n in self.serving_cert_dns_names if not is_ip(n)]

    def validate(self) -> list[str]:
        problems: list[str] = []
        if self.bind_address.strip() and not is_ip(self.bind_address):
            problems.append(f"--bind-address {self.bind_address!r} is not a valid IP address")
        if not 0 <= self.secure_port <= 65535:
            problems.append(
                f"--secure-port {self.secure_port} must be between 0 and 65535, inclusive. "
                "0 for picking a free port"
            )
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            problems.append("--tls-cert-file and --tls-private-key-file must be specified together")
        if self.serving_cert_dns_names and not self.generates_serving_cert:
            problems.append(
                "--serving-cert-dns-names only applies to the generated certificate; "
                "it can not be combined with --tls-cert-file"
            )
        for name in self.serving_cert_dns_names:
            if not (is_ip(name) or (_DNS1123_SUBDOMAIN.match(name) and len(name) <= 253)):
                problems.append(
                    f"--serving-cert-dns-names {name!r} is neither a DNS-1123 subdomain nor an IP address"
                )
        problems += cipher_problems(self.tls_cipher_suites)
        if self.tls_min_version and self.tls_min_version not in TLS_VERSIONS:
            problems.append(f'unknown tls version "{self.tls_min_version}"')
        bad_ids = [v for v in self.tls_curve_preferences if not _is_int(v)]
        if bad_ids:  # pflag's Int32Slice parse error
            problems.append(
                f'invalid argument "{",".join(self.tls_curve_preferences)}" for "--tls-curve-preferences" '
                f'flag: strconv.ParseInt: parsing "{bad_ids[0]}": invalid syntax'
            )
        else:
            problems += curve_problems(self.curve_ids)
        if self.max_connections < 0:
            problems.append("--max-connections can not be negative value")
        for flag, value in (
            ("--read-header-timeout", self.read_header_timeout),
            ("--idle-timeout", self.idle_timeout),
        ):
            if value < 0:
                problems.append(f"{flag} can not be negative value")
        if self.http2_max_streams_per_connection < 0:
            problems.append("--http2-max-streams-per-connection can not be negative value")
        if self.max_header_bytes < 4096:
            problems.append("--max-header-bytes must be at least 4096")
        return problems

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        d = ServingOptions()
        g = parser.add_argument_group("secure serving")
        g.add_argument(
            "--bind-address",
            metavar="ip",
            default=d.bind_address,
            help="The IP address on which to listen for the --secure-port port. If blank or an unspecified "
            "address (0.0.0.0 or ::), all interfaces will be used. (default %(default)s)",
        )
        g.add_argument(
            "--secure-port",
            metavar="int",
            type=int,
            default=d.secure_port,
            help="The port on which to serve HTTPS with authentication and authorization. "
            "If 0, a free port is picked. (default %(default)s)",
        )
        add_path(
            g,
            "--cert-dir",
            "The directory where the TLS certs are located. If --tls-cert-file and "
            "--tls-private-key-file are provided, this flag will be ignored. (default <data-dir>/certs)",
        )
        add_path(
            g,
            "--tls-cert-file",
            "File containing the default x509 Certificate for HTTPS (CA cert, if any, concatenated after "
            "server cert). Without it a self-signed CA and certificate are generated into --cert-dir.",
        )
        add_path(
            g,
            "--tls-private-key-file",
            "File containing the default x509 private key matching --tls-cert-file.",
        )
        g.add_argument(
            "--serving-cert-dns-names",
            action=CommaList,
            default=[],
            metavar="strings",
            help="Extra DNS names (or IPs) for the generated serving certificate, comma separated, e.g. "
            "api.pizza-apiserver.svc (the name the aggregator verifies).",
        )
        add_list(
            g,
            "--tls-cipher-suites",
            d.tls_cipher_suites,
            "Comma-separated list of cipher suites for the server. If omitted, the default Go cipher "
            "suites will be used. Names as kube's (e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); TLS 1.3 "
            "suites are accepted and, as in Go, not configurable.",
        )
        g.add_argument(
            "--tls-min-version",
            metavar="string",
            default=d.tls_min_version,
            help="Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, "
            "VersionTLS13 (default VersionTLS12). Below 1.2 OpenSSL's security level 0 is used, which "
            "TLS 1.0/1.1 need for their SHA-1 signatures.",
        )
        add_list(
            g,
            "--tls-curve-preferences",
            d.tls_curve_preferences,
            "Comma-separated list of numeric Go crypto/tls CurveID values, as the allowed key exchange "
            "mechanisms for the server (29 X25519, 23 P-256, 24 P-384, 25 P-521, 4588 X25519MLKEM768, "
            "4587 SecP256r1MLKEM768, 4589 SecP384r1MLKEM1024; the hybrids only where OpenSSL has them). "
            "The order of the list is ignored: Go's preference order is kept. If omitted, the default Go "
            "curves will be used.",
        )
        add_int(
            g,
            "--max-connections",
            d.max_connections,
            "The maximum number of open client connections. Connections over the limit are closed as "
            "soon as they are accepted, before the TLS handshake. Zero for no limit.",
        )
        add_duration(
            g,
            "--read-header-timeout",
            d.read_header_timeout,
            "How long a client may take to send a request's line and headers (Go's ReadHeaderTimeout; "
            "also the TLS handshake timeout). The connection is closed after it. 0 disables.",
        )
        add_duration(
            g,
            "--idle-timeout",
            d.idle_timeout,
            "How long a keep-alive connection may stay idle between requests (Go's IdleTimeout). 0 disables.",
        )
        add_int(
            g,
            "--max-header-bytes",
            d.max_header_bytes,
            "The maximum size of a request's line and headers together (Go's MaxHeaderBytes); larger "
            "requests are answered 431.",
        )
        add_bool(
            g,
            "--disable-http2-serving",
            d.disable_http2_serving,
            "If true, HTTP2 serving will be disabled [default=false]",
        )
        add_int(
            g,
            "--http2-max-streams-per-connection",
            d.http2_max_streams_per_connection,
            "The limit that the server gives to clients for the maximum number of streams in an HTTP/2 "
            "connection. Zero means kube's default for a generic apiserver, 100.",
        )


def _is_int(text: str) -> bool:
    try:
        int(text, 10)
    except ValueError:
        return False
    return True


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip())
    except ValueError:
        return False
    return True
