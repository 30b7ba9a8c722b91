"""Authorization: may this user do this request. Assembled like kube's DelegatingAuthorizationOptions.

The SubjectAccessReview authorizer (`subject_access_review`) is one more `Authorizer` appended to the
list in `build_authorizer`; `server.authz.delegated` decides from the flags whether there is one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from server.authz.interface import (
    ALLOW,
    NO_OPINION,
    Authorizer,
    AuthzAttributes,
    Decision,
    Union,
    Verdict,
    deny,
)
from server.authz.masters import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    SYSTEM_MASTERS,
    AlwaysAllowPaths,
    PrivilegedGroups,
)

__all__ = [
    "ALLOW",
    "NO_OPINION",
    "AlwaysAllowPaths",
    "Authorizer",
    "AuthzAttributes",
    "Decision",
    "PrivilegedGroups",
    "Union",
    "Verdict",
    "build_authorizer",
    "deny",
]


def build_authorizer(
    *,
    always_allow_groups: Iterable[str] = (SYSTEM_MASTERS,),
    always_allow_paths: Iterable[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
    delegates: Sequence[Authorizer] = (),
) -> Authorizer:
    """Privileged groups, then always-allowed paths, then `delegates` (e.g. SubjectAccessReview).

    Standalone mode passes no delegates: whatever the first two do not allow is forbidden.
    """
    authorizers: list[Authorizer] = []
    groups = tuple(always_allow_groups)
    if groups:
        authorizers.append(PrivilegedGroups(groups))
    paths = tuple(always_allow_paths)
    if paths:
        authorizers.append(AlwaysAllowPaths(paths))
    authorizers.extend(delegates)
    return Union(authorizers)
