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
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, cast

from server.admission.options import AdmissionOptions
from server.api_groups import ApiGroupsOptions
from server.audit.options import AuditOptions
from server.authn.options import AuthenticationOptions
from server.authz.options import AuthorizationOptions
from server.etcd_options import EtcdOptions
from server.flags import CommaList, add_path
from server.generic_options import GenericOptions
from server.log_options import LogOptions
from server.watch_cache_options import WatchCacheOptions
from server.workers_options import WorkersOptions

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


# Option field name on Options → the FlagGroup dataclass that fills it. `--help` lists the groups in
# this order, after the serving flags.
FLAG_GROUPS: dict[str, type[FlagGroup]] = {
    "generic": GenericOptions,
    "workers": WorkersOptions,
    "etcd": EtcdOptions,
    "watch_cache": WatchCacheOptions,
    "logs": LogOptions,
    "authentication": AuthenticationOptions,
    "authorization": AuthorizationOptions,
    "audit": AuditOptions,
    "groups": ApiGroupsOptions,
    "admission": AdmissionOptions,
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
    # flag groups (FLAG_GROUPS)
    generic: GenericOptions = field(default_factory=GenericOptions)
    workers: WorkersOptions = field(default_factory=WorkersOptions)
    etcd: EtcdOptions = field(default_factory=EtcdOptions)
    watch_cache: WatchCacheOptions = field(default_factory=WatchCacheOptions)
    logs: LogOptions = field(default_factory=LogOptions)
    authentication: AuthenticationOptions = field(default_factory=AuthenticationOptions)
    authorization: AuthorizationOptions = field(default_factory=AuthorizationOptions)
    audit: AuditOptions = field(default_factory=AuditOptions)
    groups: ApiGroupsOptions = field(default_factory=ApiGroupsOptions)
    admission: AdmissionOptions = field(default_factory=AdmissionOptions)
    # derived by complete(): extra IP SANs for the generated serving certificate
    serving_cert_ip_addresses: list[str] = field(default_factory=list)

    @property
    def generates_serving_cert(self) -> bool:
        return self.tls_cert_file is None and self.tls_private_key_file is None

    def complete(self) -> Options:
        """Fill defaults that depend on other flags (kept out of the help text, as in kube)."""
        if not self.bind_address.strip():
            self.bind_address = "0.0.0.0"  # kube: blank means all interfaces
        if self.cert_dir is None:
            self.cert_dir = self.generic.data_dir / "certs"
        if self.generic.admin_kubeconfig is None:
            self.generic.admin_kubeconfig = self.generic.data_dir / "admin.kubeconfig"
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
        for name in FLAG_GROUPS:
            problems += getattr(self, name).validate()
        return problems

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

    for group in FLAG_GROUPS.values():
        group.add_flags(parser)
    return parser


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip())
    except ValueError:
        return False
    return True
