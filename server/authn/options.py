"""Authentication flags: kube's DelegatingAuthenticationOptions (+ --anonymous-auth and --api-audiences).

Names, defaults and help follow k8s.io/apiserver pkg/server/options/authentication.go. Two additions
from kube-apiserver's own flags: --anonymous-auth (aggregated servers built on k8s.io/apiserver always
allow anonymous; here it can be turned off) and --api-audiences (sent in TokenReviews so the cluster
checks that tokens were issued for this server).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field
from pathlib import Path

from server.flags import add_bool, add_duration, add_list, add_path

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class AuthenticationOptions:
    authentication_kubeconfig: Path | None = None
    authentication_token_webhook_cache_ttl: float = 10.0
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = False
    client_ca_file: Path | None = None
    requestheader_client_ca_file: Path | None = None
    requestheader_allowed_names: list[str] = field(default_factory=list)
    requestheader_username_headers: list[str] = field(default_factory=lambda: ["x-remote-user"])
    requestheader_uid_headers: list[str] = field(default_factory=list)
    requestheader_group_headers: list[str] = field(default_factory=lambda: ["x-remote-group"])
    requestheader_extra_headers_prefix: list[str] = field(default_factory=lambda: ["x-remote-extra-"])
    # None: on when delegating to a cluster (kube's default), health endpoints only when standalone.
    anonymous_auth: bool | None = None
    api_audiences: list[str] = field(default_factory=list)

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        d = AuthenticationOptions()
        g = parser.add_argument_group("authentication")
        add_path(
            g,
            "--authentication-kubeconfig",
            "kubeconfig file pointing at the 'core' kubernetes server with enough rights to create "
            "tokenreviews.authentication.k8s.io. This is optional. If empty and not running in a cluster, "
            "all token requests are considered to be anonymous and no client CA is looked up in the cluster.",
        )
        add_duration(
            g,
            "--authentication-token-webhook-cache-ttl",
            d.authentication_token_webhook_cache_ttl,
            "The duration to cache responses from the webhook token authenticator.",
        )
        add_bool(
            g,
            "--authentication-skip-lookup",
            d.authentication_skip_lookup,
            "If false, the authentication-kubeconfig will be used to lookup missing authentication "
            "configuration from the cluster.",
        )
        add_bool(
            g,
            "--authentication-tolerate-lookup-failure",
            d.authentication_tolerate_lookup_failure,
            "If true, failures to look up missing authentication configuration from the cluster are not "
            "considered fatal. Note that this can result in authentication that treats all requests as "
            "anonymous.",
        )
        add_path(
            g,
            "--client-ca-file",
            "If set, any request presenting a client certificate signed by one of the authorities in the "
            "client-ca-file is authenticated with an identity corresponding to the CommonName of the client "
            "certificate.",
        )
        add_path(
            g,
            "--requestheader-client-ca-file",
            "Root certificate bundle to use to verify client certificates on incoming requests before "
            "trusting usernames in headers specified by --requestheader-username-headers. WARNING: generally "
            "do not depend on authorization being already done for incoming requests.",
        )
        add_list(
            g,
            "--requestheader-allowed-names",
            d.requestheader_allowed_names,
            "List of client certificate common names to allow to provide usernames in headers specified by "
            "--requestheader-username-headers. If empty, any client certificate validated by the authorities "
            "in --requestheader-client-ca-file is allowed.",
        )
        add_list(
            g,
            "--requestheader-username-headers",
            d.requestheader_username_headers,
            "List of request headers to inspect for usernames. X-Remote-User is common.",
        )
        add_list(
            g,
            "--requestheader-uid-headers",
            d.requestheader_uid_headers,
            "List of request headers to inspect for UIDs. X-Remote-Uid is suggested.",
        )
        add_list(
            g,
            "--requestheader-group-headers",
            d.requestheader_group_headers,
            "List of request headers to inspect for groups. X-Remote-Group is suggested.",
        )
        add_list(
            g,
            "--requestheader-extra-headers-prefix",
            d.requestheader_extra_headers_prefix,
            "List of request header prefixes to inspect. X-Remote-Extra- is suggested.",
        )
        add_bool(
            g,
            "--anonymous-auth",
            d.anonymous_auth,
            "Enables anonymous requests to the secure port of the API server. Requests that are not rejected "
            "by another authentication method are treated as anonymous requests (system:anonymous, group "
            "system:unauthenticated); authorization decides what they may do. (default true when delegating "
            "to a cluster; standalone, anonymous requests are accepted only on /healthz, /livez and /readyz)",
        )
        add_list(
            g,
            "--api-audiences",
            d.api_audiences,
            "Identifiers of the API. Bearer tokens are sent for review with these audiences, and only tokens "
            "bound to at least one of them are accepted. Empty: the cluster's own audience.",
        )

    def validate(self) -> list[str]:
        """kube's RequestHeaderAuthenticationOptions.Validate, and non-negative durations."""
        problems: list[str] = []
        for flag, values in (
            ("requestheader-username-headers", self.requestheader_username_headers),
            ("requestheader-uid-headers", self.requestheader_uid_headers),
            ("requestheader-group-headers", self.requestheader_group_headers),
            ("requestheader-extra-headers-prefix", self.requestheader_extra_headers_prefix),
            ("requestheader-allowed-names", self.requestheader_allowed_names),
        ):
            if any(not v.strip() for v in values):
                problems.append(f'empty value in "{flag}"')
        if self.authentication_token_webhook_cache_ttl < 0:
            problems.append("--authentication-token-webhook-cache-ttl can not be negative value")
        for flag, values, standard in (
            ("--requestheader-username-headers", self.requestheader_username_headers, "X-Remote-User"),
            ("--requestheader-group-headers", self.requestheader_group_headers, "X-Remote-Group"),
            (
                "--requestheader-extra-headers-prefix",
                self.requestheader_extra_headers_prefix,
                "X-Remote-Extra-",
            ),
        ):
            if values and standard.lower() not in (v.lower() for v in values):
                logger.warning(
                    "%s is set without specifying the standard %s header - API aggregation will not work",
                    flag,
                    standard,
                )
        return problems
