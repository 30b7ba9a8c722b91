"""The storage flags: kube-apiserver's etcd flags, plus "no --etcd-servers" meaning the embedded store.

A FlagGroup in the FLAG_GROUPS pattern of server/options/__init__.py: field names are the argparse dests,
`add_flags` declares the flags, `validate` reports problems without touching anything.
"""

from __future__ import annotations

import argparse
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from server.flags import CommaList, add_duration, add_path

DEFAULT_ETCD_PREFIX = "/registry"


@dataclass(slots=True)
class EtcdOptions:
    """Durations are seconds (floats), as asyncio timeouts take them."""

    etcd_servers: list[str] = field(default_factory=list)
    etcd_prefix: str = DEFAULT_ETCD_PREFIX
    etcd_cafile: Path | None = None
    etcd_certfile: Path | None = None
    etcd_keyfile: Path | None = None
    etcd_compaction_interval: float = 300.0
    etcd_healthcheck_timeout: float = 2.0
    etcd_readycheck_timeout: float = 2.0

    @property
    def uses_embedded_storage(self) -> bool:
        return not self.etcd_servers

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        defaults = EtcdOptions()
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

    def validate(self) -> list[str]:
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
