"""Command-line flags → ``Options``: the first stage of options → config → server.

Flag names, meanings and defaults follow kube-apiserver / sample-apiserver so that operators can
carry their habits (and manifests) over. Deliberate differences, for a server that must also run
standalone on a laptop: ``--bind-address`` defaults to 127.0.0.1 rather than 0.0.0.0,
``--secure-port`` defaults to 8443 and 0 means "pick a free port" (kube: "don't serve HTTPS"), and an
empty ``--etcd-servers`` selects the embedded storage instead of being an error.

Options hold only flag values; ``complete()`` fills derived defaults and ``validate()`` reports
every problem at once, as kube's ``Validate() []error`` does. Neither touches the disk.

This package collects the flag groups (``FLAG_GROUPS``). The groups of kube's generic server
options live in it (``etcd``, ``generic``, ``log``, ``watch_cache``, ``workers``,
``delete_collection``); a feature's own group lives with the feature (``server/authn/options.py``,
``server/serving/options.py``, ...). The value types and adders every group uses are in
``server/flags.py``, outside the package: a feature's group imports them, and this package imports
that group.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, cast

from server.admission.options import AdmissionOptions
from server.api_groups import ApiGroupsOptions
from server.audit.options import AuditOptions
from server.authn.options import AuthenticationOptions
from server.authz.options import AuthorizationOptions
from server.options.delete_collection import DeleteCollectionOptions
from server.options.etcd import EtcdOptions
from server.options.generic import GenericOptions
from server.options.log import LogOptions
from server.options.watch_cache import WatchCacheOptions
from server.options.workers import WorkersOptions
from server.serving.options import ServingOptions


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
# this order.
FLAG_GROUPS: dict[str, type[FlagGroup]] = {
    "serving": ServingOptions,
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
    "deletion": DeleteCollectionOptions,
}


@dataclass(slots=True)
class Options:
    """Flag values. Durations are seconds (floats), as asyncio timeouts take them."""

    # flag groups (FLAG_GROUPS)
    serving: ServingOptions = field(default_factory=ServingOptions)
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
    deletion: DeleteCollectionOptions = field(default_factory=DeleteCollectionOptions)

    def complete(self) -> Options:
        """Fill defaults that depend on other flags (kept out of the help text, as in kube)."""
        self.serving.complete(self.generic.data_dir)
        if self.generic.admin_kubeconfig is None:
            self.generic.admin_kubeconfig = self.generic.data_dir / "admin.kubeconfig"
        return self

    def validate(self) -> list[str]:
        """Every problem with the flag values, in flag order; empty when they are usable."""
        problems: list[str] = []
        for name in FLAG_GROUPS:
            problems += getattr(self, name).validate()
        return problems


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse flags (``sys.argv[1:]`` when None). Malformed values exit with usage, as pflag does."""
    return options_from(vars(build_parser().parse_args(argv)))


def options_from(values: dict[str, Any]) -> Options:
    """Options from parsed flag values (argparse dests); commands that add flags of their own
    (`migrate-storage`) pop theirs first."""
    # Each FlagGroup is a dataclass (the Protocol cannot say so), its fields the argparse dests;
    # fields no flag fills (derived by complete()) keep their defaults.
    groups: dict[str, Any] = {
        name: group(**{f.name: values.pop(f.name) for f in fields(cast(Any, group)) if f.name in values})
        for name, group in FLAG_GROUPS.items()
    }
    return Options(**values, **groups)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pizza-apiserver",
        description="An aggregated API server for the API groups installed with it (see --api-groups).",
        allow_abbrev=False,  # kube flags are never abbreviated; --etcd must not mean --etcd-servers
        epilog="Other command: pizza-apiserver migrate-storage --help (rewrite stored objects in the "
        "storage version).",
    )
    for group in FLAG_GROUPS.values():
        group.add_flags(parser)
    return parser
