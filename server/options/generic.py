"""The "generic" flags: where the server keeps its files, and kube's ServerRunOptions (in-flight
limits, request timeouts, shutdown delay).

A FlagGroup in the FLAG_GROUPS pattern of server/options/__init__.py: field names are the argparse dests,
`add_flags` declares the flags, `validate` reports problems without touching anything.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from server.flags import add_duration, add_int, add_path

DEFAULT_DATA_DIR = Path(".pizza-apiserver")


@dataclass(slots=True)
class GenericOptions:
    """Durations are seconds (floats), as asyncio timeouts take them."""

    data_dir: Path = DEFAULT_DATA_DIR
    admin_kubeconfig: Path | None = None  # Options.complete(): <data-dir>/admin.kubeconfig
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    min_request_timeout: int = 1800
    shutdown_delay_duration: float = 0.0

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        defaults = GenericOptions()
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
            "The maximum number of mutating requests in flight at a given time. When the server exceeds "
            "this, it rejects requests. Zero for no limit.",
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

    def validate(self) -> list[str]:
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
        return problems
