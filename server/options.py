"""Command-line flags → ``Options``: the first stage of options → config → server.

Flag names, meanings and defaults follow kube-apiserver / sample-apiserver so that operators can
carry their habits (and manifests) over. Deliberate differences, for a server that must also run
standalone on a laptop: ``--bind-address`` defaults to 127.0.0.1 rather than 0.0.0.0,
``--secure-port`` defaults to 8443 and 0 means "pick a free port" (kube: "don't serve HTTPS"), and an
empty ``--etcd-servers`` selects the embedded storage instead of being an error.

Options hold only flag values; ``complete()`` fills derived defaults and ``validate()`` reports
every problem at once, as kube's ``Validate() []error`` does. Neither touches the disk.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import random
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, cast

from server.api_groups import ApiGroupsOptions
from server.audit.options import AuditOptions
from server.authn.options import AuthenticationOptions
from server.authz.options import AuthorizationOptions
from server.flags import CommaList, add_bool, add_duration, add_int, add_path

DEFAULT_DATA_DIR = Path(".pizza-apiserver")
DEFAULT_ETCD_PREFIX = "/registry"

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")


class FlagGroup(Protocol):
    """Flags owned by one feature (authentication, authorization, audit, ...), kept in its own dataclass.

    kube splits its options the same way (AuthenticationOptions, AuditOptions, ...): each feature's
    module declares its flags, defaults and validation, and this module only collects them. The
    dataclass field names are the argparse dests of its flags.
    """

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None: ...

    def validate(self) -> list[str]: ...


# Option field name on Options → the FlagGroup dataclass that fills it.
FLAG_GROUPS: dict[str, type[FlagGroup]] = {
    "authentication": AuthenticationOptions,
    "authorization": AuthorizationOptions,
    "audit": AuditOptions,
    "groups": ApiGroupsOptions,
}


@dataclass(slots=True)
class Options:
    """Flag values. Durations are seconds (floats), as asyncio timeouts take them."""

    # secure serving
    bind_address: str = "127.0.0.1"
    secure_port: int = 8443
    cert_dir: Path | None = None  # complete(): <data-dir>/certs
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    serving_cert_dns_names: list[str] = field(default_factory=list)
    # generic
    data_dir: Path = DEFAULT_DATA_DIR
    admin_kubeconfig: Path | None = None  # complete(): <data-dir>/admin.kubeconfig
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    min_request_timeout: int = 1800
    shutdown_delay_duration: float = 0.0
    workers: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))
    # etcd
    etcd_servers: list[str] = field(default_factory=list)
    etcd_prefix: str = DEFAULT_ETCD_PREFIX
    etcd_cafile: Path | None = None
    etcd_certfile: Path | None = None
    etcd_keyfile: Path | None = None
    etcd_compaction_interval: float = 300.0
    etcd_healthcheck_timeout: float = 2.0
    etcd_readycheck_timeout: float = 2.0
    # caching
    watch_cache: bool = True
    # logs
    verbosity: int = 0
    # flag groups (FLAG_GROUPS)
    authentication: AuthenticationOptions = field(default_factory=AuthenticationOptions)
    authorization: AuthorizationOptions = field(default_factory=AuthorizationOptions)
    audit: AuditOptions = field(default_factory=AuditOptions)
    groups: ApiGroupsOptions = field(default_factory=ApiGroupsOptions)
    # derived by complete(): extra IP SANs for the generated serving certificate
    serving_cert_ip_addresses: list[str] = field(default_factory=list)

    @property
    def uses_embedded_storage(self) -> bool:
        return not self.etcd_servers

    @property
    def generates_serving_cert(self) -> bool:
        return self.tls_cert_file is None and self.tls_private_key_file is None

    def complete(self) -> Options:
        """Fill defaults that depend on other flags (kept out of the help text, as in kube)."""
        if not self.bind_address.strip():
            self.bind_address = "0.0.0.0"  # kube: blank means all interfaces
        if self.cert_dir is None:
            self.cert_dir = self.data_dir / "certs"
        if self.admin_kubeconfig is None:
            self.admin_kubeconfig = self.data_dir / "admin.kubeconfig"
        ips: list[str] = []
        try:
            bind = ipaddress.ip_address(self.bind_address)
        except ValueError:
            bind = None
        # Like kube's MaybeDefaultWithSelfSignedCerts: a specific bind address becomes an IP SAN.
        if bind is not None and not bind.is_unspecified:
            ips.append(str(bind))
        for name in self.serving_cert_dns_names:
            if _is_ip(name) and name not in ips:
                ips.append(name)
        self.serving_cert_ip_addresses = ips
        self.serving_cert_dns_names = [n for n in self.serving_cert_dns_names if not _is_ip(n)]
        return self

    def validate(self) -> list[str]:
        """Every problem with the flag values, in flag order; empty when they are usable."""
        problems: list[str] = []
        problems += self._validate_serving()
        problems += self._validate_generic()
        problems += self._validate_etcd()
        if self.verbosity < 0:
            problems.append("-v can not be negative value")
        for name in FLAG_GROUPS:
            problems += getattr(self, name).validate()
        return problems

    def random_watch_timeout(self, rng: random.Random | None = None) -> float:
        """A watch's server-side timeout: uniform in [min, 2*min) seconds, spreading reconnects like kube."""
        draw = (rng or random.Random()).random()
        return self.min_request_timeout * (1.0 + draw)

    def _validate_serving(self) -> list[str]:
        problems: list[str] = []
        if self.bind_address.strip() and not _is_ip(self.bind_address):
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
            if not (_is_ip(name) or (_DNS1123_SUBDOMAIN.match(name) and len(name) <= 253)):
                problems.append(
                    f"--serving-cert-dns-names {name!r} is neither a DNS-1123 subdomain nor an IP address"
                )
        return problems

    def _validate_generic(self) -> list[str]:
        problems: list[str] = []
        if not str(self.data_dir).strip():
            problems.append("--data-dir must not be empty")
        if self.max_requests_inflight < 0:
            problems.append("--max-requests-inflight can not be negative value")
        if self.max_mutating_requests_inflight < 0:
            problems.append("--max-mutating-requests-inflight can not be negative value")
        if self.request_timeout < 0:
            problems.append("--request-timeout can not be negative value")
        if self.min_request_timeout < 0:
            problems.append("--min-request-timeout can not be negative value")
        if self.shutdown_delay_duration < 0:
            problems.append("--shutdown-delay-duration can not be negative value")
        if self.workers < 1:
            problems.append(f"--workers {self.workers} must be at least 1")
        return problems

    def _validate_etcd(self) -> list[str]:
        problems: list[str] = []
        for server in self.etcd_servers:
            url = urllib.parse.urlsplit(server)
            if url.scheme not in ("http", "https") or not url.hostname or url.path not in ("", "/"):
                problems.append(f"--etcd-servers {server!r} must be a URL like https://127.0.0.1:2379")
        if not self.etcd_prefix.startswith("/"):
            problems.append(f"--etcd-prefix {self.etcd_prefix!r} must start with '/'")
        if (self.etcd_certfile is None) != (self.etcd_keyfile is None):
            problems.append("--etcd-certfile and --etcd-keyfile must be specified together")
        tls_flags = [
            flag
            for flag, value in (
                ("--etcd-cafile", self.etcd_cafile),
                ("--etcd-certfile", self.etcd_certfile),
                ("--etcd-keyfile", self.etcd_keyfile),
            )
            if value is not None
        ]
        if tls_flags and not self.etcd_servers:
            problems.append(
                f"{', '.join(tls_flags)} require --etcd-servers (the embedded storage has no TLS)"
            )
        if self.etcd_compaction_interval < 0:
            problems.append("--etcd-compaction-interval can not be negative value")
        if self.etcd_healthcheck_timeout <= 0:
            problems.append("--etcd-healthcheck-timeout must be greater than 0")
        if self.etcd_readycheck_timeout <= 0:
            problems.append("--etcd-readycheck-timeout must be greater than 0")
        return problems


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse flags (``sys.argv[1:]`` when None). Malformed values exit with usage, as pflag does."""
    return options_from(vars(build_parser().parse_args(argv)))


def options_from(values: dict[str, Any]) -> Options:
    """Options from parsed flag values (argparse dests); commands that add flags of their own
    (`migrate-storage`) pop theirs first."""
    # Each FlagGroup is a dataclass (the Protocol cannot say so), its fields the argparse dests.
    groups: dict[str, Any] = {
        name: group(**{f.name: values.pop(f.name) for f in fields(cast(Any, group))})
        for name, group in FLAG_GROUPS.items()
    }
    return Options(**values, **groups)


def build_parser() -> argparse.ArgumentParser:
    defaults = Options()
    parser = argparse.ArgumentParser(
        prog="pizza-apiserver",
        description="An aggregated API server for restaurant.programming-kubernetes.info.",
        allow_abbrev=False,  # kube flags are never abbreviated; --etcd must not mean --etcd-servers
        epilog="Other command: pizza-apiserver migrate-storage --help (rewrite stored objects in the "
        "storage version).",
    )
    serving = parser.add_argument_group("secure serving")
    serving.add_argument(
        "--bind-address",
        metavar="ip",
        default=defaults.bind_address,
        help="The IP address on which to listen for the --secure-port port. If blank or an unspecified "
        "address (0.0.0.0 or ::), all interfaces will be used. (default %(default)s)",
    )
    serving.add_argument(
        "--secure-port",
        metavar="int",
        type=int,
        default=defaults.secure_port,
        help="The port on which to serve HTTPS with authentication and authorization. "
        "If 0, a free port is picked. (default %(default)s)",
    )
    add_path(
        serving,
        "--cert-dir",
        "The directory where the TLS certs are located. If --tls-cert-file and "
        "--tls-private-key-file are provided, this flag will be ignored. (default <data-dir>/certs)",
    )
    add_path(
        serving,
        "--tls-cert-file",
        "File containing the default x509 Certificate for HTTPS (CA cert, if any, concatenated after "
        "server cert). Without it a self-signed CA and certificate are generated into --cert-dir.",
    )
    add_path(
        serving,
        "--tls-private-key-file",
        "File containing the default x509 private key matching --tls-cert-file.",
    )
    serving.add_argument(
        "--serving-cert-dns-names",
        action=CommaList,
        default=[],
        metavar="strings",
        help="Extra DNS names (or IPs) for the generated serving certificate, comma separated, e.g. "
        "api.pizza-apiserver.svc (the name the aggregator verifies).",
    )

    generic = parser.add_argument_group("generic")
    generic.add_argument(
        "--data-dir",
        metavar="string",
        type=Path,
        default=defaults.data_dir,
        help="Directory for generated certificates, the admin kubeconfig and the embedded storage. "
        "(default %(default)s)",
    )
    add_path(
        generic,
        "--admin-kubeconfig",
        "Where to write a kubeconfig for the admin user (CN=admin, O=system:masters). "
        "(default <data-dir>/admin.kubeconfig)",
    )
    add_int(
        generic,
        "--max-requests-inflight",
        defaults.max_requests_inflight,
        "The maximum number of non-mutating requests in flight at a given time. When the server exceeds "
        "this, it rejects requests. Zero for no limit.",
    )
    add_int(
        generic,
        "--max-mutating-requests-inflight",
        defaults.max_mutating_requests_inflight,
        "The maximum number of mutating requests in flight at a given time. When the server exceeds this, "
        "it rejects requests. Zero for no limit.",
    )
    add_duration(
        generic,
        "--request-timeout",
        defaults.request_timeout,
        "An optional field indicating the duration a handler must keep a request open before timing "
        "it out. This is the default request timeout for requests but may be overridden by flags "
        "such as --min-request-timeout for specific types of requests.",
    )
    add_int(
        generic,
        "--min-request-timeout",
        defaults.min_request_timeout,
        "An optional field indicating the minimum number of seconds a handler must keep a request open "
        "before timing it out. Currently only honored by the watch request handler, which picks a "
        "randomized value above this number as the connection timeout, to spread out load.",
    )
    add_duration(
        generic,
        "--shutdown-delay-duration",
        defaults.shutdown_delay_duration,
        "Time to delay the termination. During that time the server keeps serving requests normally, "
        "while /readyz returns failure.",
    )
    add_int(
        generic,
        "--workers",
        defaults.workers,
        "The number of server processes serving --secure-port, each a full API server with its own "
        "watch cache, as N kube-apiserver replicas over one storage; the kernel spreads connections "
        "between them (SO_REUSEPORT). With the embedded storage they share its file. 1 serves from a "
        "single process. Defaults to the number of usable CPU cores.",
    )

    etcd = parser.add_argument_group("etcd")
    etcd.add_argument(
        "--etcd-servers",
        action=CommaList,
        default=[],
        metavar="strings",
        help="List of etcd servers to connect with (scheme://ip:port), comma separated. "
        "If empty, the embedded storage in --data-dir is used.",
    )
    etcd.add_argument(
        "--etcd-prefix",
        metavar="string",
        default=defaults.etcd_prefix,
        help="The prefix to prepend to all resource paths in etcd. (default %(default)s)",
    )
    add_path(etcd, "--etcd-cafile", "SSL Certificate Authority file used to secure etcd communication.")
    add_path(etcd, "--etcd-certfile", "SSL certification file used to secure etcd communication.")
    add_path(etcd, "--etcd-keyfile", "SSL key file used to secure etcd communication.")
    add_duration(
        etcd,
        "--etcd-compaction-interval",
        defaults.etcd_compaction_interval,
        "The interval of compaction requests. If 0, the compaction request from apiserver is disabled.",
    )
    add_duration(
        etcd,
        "--etcd-healthcheck-timeout",
        defaults.etcd_healthcheck_timeout,
        "The timeout to use when checking etcd health.",
    )
    add_duration(
        etcd,
        "--etcd-readycheck-timeout",
        defaults.etcd_readycheck_timeout,
        "The timeout to use when checking etcd readiness.",
    )

    caching = parser.add_argument_group("caching")
    add_bool(
        caching,
        "--watch-cache",
        defaults.watch_cache,
        "Enable the watch cache: lists, gets and watches are served from memory kept current by one "
        "storage watch per resource. false reads through to storage on every request.",
    )

    logs = parser.add_argument_group("logs")
    logs.add_argument(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=defaults.verbosity,
        metavar="Level",
        help="number for the log level verbosity (default %(default)s)",
    )
    for group in FLAG_GROUPS.values():
        group.add_flags(parser)
    return parser


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip())
    except ValueError:
        return False
    return True
