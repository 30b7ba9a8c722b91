"""Authorizers that need no remote call: privileged groups and always-allowed paths.

Ports of kube's authorizerfactory.NewPrivilegedGroups (system:masters may do anything) and
pkg/authorization/path (the `--authorization-always-allow-paths` authorizer).
"""

from __future__ import annotations

from collections.abc import Iterable

from server.authz.interface import ALLOW, NO_OPINION, AuthzAttributes, Decision

SYSTEM_MASTERS = "system:masters"
# kube's default for --authorization-always-allow-paths.
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


class PrivilegedGroups:
    """Allows every request of a user in one of `groups`; no opinion otherwise."""

    __slots__ = ("_groups",)

    def __init__(self, groups: Iterable[str] = (SYSTEM_MASTERS,)) -> None:
        self._groups = frozenset(groups)

    async def authorize(self, attrs: AuthzAttributes) -> Decision:
        return self.decide_now(attrs)

    def decide_now(self, attrs: AuthzAttributes) -> Decision:
        if any(group in self._groups for group in attrs.user.groups):
            return ALLOW
        return NO_OPINION


class AlwaysAllowPaths:
    """Allows non-resource requests to the given paths for everyone, whoever they are.

    Patterns are exact paths, or prefixes ending in `*` (`/healthz/*`); a `*` elsewhere is an error,
    as kube rejects it at startup.
    """

    __slots__ = ("_exact", "_prefixes")

    def __init__(self, patterns: Iterable[str] = DEFAULT_ALWAYS_ALLOW_PATHS) -> None:
        exact: set[str] = set()
        prefixes: list[str] = []
        for pattern in patterns:
            trimmed = pattern.removeprefix("/")
            if not trimmed:
                exact.add(trimmed)  # "/" itself
                continue
            if "*" in trimmed[:-1]:
                raise ValueError(f"only trailing * allowed in {trimmed!r}")
            if trimmed.endswith("*"):
                prefixes.append(trimmed[:-1])
            else:
                exact.add(trimmed)
        self._exact = frozenset(exact)
        self._prefixes = tuple(prefixes)

    async def authorize(self, attrs: AuthzAttributes) -> Decision:
        return self.decide_now(attrs)

    def decide_now(self, attrs: AuthzAttributes) -> Decision:
        if attrs.is_resource_request:
            return NO_OPINION
        path = attrs.path.removeprefix("/")
        if path in self._exact or any(path.startswith(prefix) for prefix in self._prefixes):
            return ALLOW
        return NO_OPINION
