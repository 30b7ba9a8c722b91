"""Authorization flags: kube's DelegatingAuthorizationOptions (pkg/server/options/authorization.go).

Defaults are kube's: 10s for both cache TTLs ("very low for responsiveness, but high enough to handle
storms") and the health endpoints as always-allowed paths. system:masters is always allowed, as kube's
recommended options add it in code (it has no flag).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from server.authz.masters import DEFAULT_ALWAYS_ALLOW_PATHS
from server.flags import add_duration, add_list, add_path


@dataclass(slots=True)
class AuthorizationOptions:
    authorization_kubeconfig: Path | None = None
    authorization_webhook_cache_authorized_ttl: float = 10.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0
    authorization_always_allow_paths: list[str] = field(
        default_factory=lambda: list(DEFAULT_ALWAYS_ALLOW_PATHS)
    )

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        d = AuthorizationOptions()
        g = parser.add_argument_group("authorization")
        add_path(
            g,
            "--authorization-kubeconfig",
            "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
            "subjectaccessreviews.authorization.k8s.io. This is optional. If empty and not running in a "
            "cluster, all requests not skipped by authorization are forbidden.",
        )
        add_duration(
            g,
            "--authorization-webhook-cache-authorized-ttl",
            d.authorization_webhook_cache_authorized_ttl,
            "The duration to cache 'authorized' responses from the webhook authorizer.",
        )
        add_duration(
            g,
            "--authorization-webhook-cache-unauthorized-ttl",
            d.authorization_webhook_cache_unauthorized_ttl,
            "The duration to cache 'unauthorized' responses from the webhook authorizer.",
        )
        add_list(
            g,
            "--authorization-always-allow-paths",
            d.authorization_always_allow_paths,
            "A list of HTTP paths to skip during authorization, i.e. these are authorized without contacting "
            "the 'core' kubernetes server.",
        )

    def validate(self) -> list[str]:
        problems: list[str] = []
        if self.authorization_webhook_cache_authorized_ttl < 0:
            problems.append("--authorization-webhook-cache-authorized-ttl can not be negative value")
        if self.authorization_webhook_cache_unauthorized_ttl < 0:
            problems.append("--authorization-webhook-cache-unauthorized-ttl can not be negative value")
        for pattern in self.authorization_always_allow_paths:
            if "*" in pattern.removeprefix("/")[:-1]:
                problems.append(f"--authorization-always-allow-paths: only trailing * allowed in {pattern!r}")
        return problems
