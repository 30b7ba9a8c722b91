"""Who is making a request (authentication.k8s.io UserInfo), shared by authn, authz, audit and admission."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON shape used by TokenReview, SubjectAccessReview and audit events."""
        d: dict = {"username": self.name}
        if self.uid:
            d["uid"] = self.uid
        if self.groups:
            d["groups"] = list(self.groups)
        if self.extra:
            d["extra"] = {k: list(v) for k, v in self.extra.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UserInfo:
        """The inverse of `to_dict`: a TokenReview's status.user, an AdmissionRequest's userInfo."""
        return cls(
            name=str(d.get("username") or ""),
            uid=str(d.get("uid") or ""),
            groups=tuple(str(g) for g in d.get("groups") or ()),
            extra={str(k): tuple(str(x) for x in (v or ())) for k, v in (d.get("extra") or {}).items()},
        )


def service_account_user(namespace: str, name: str) -> UserInfo:
    """serviceaccount.ServiceAccountInfo{Namespace, Name}.UserInfo(): no uid, no extra."""
    return UserInfo(
        name=f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        groups=(ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}"),
    )


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
