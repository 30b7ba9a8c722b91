"""Who is making a request (authentication.k8s.io UserInfo), shared by authn, authz, audit and admission."""

from __future__ import annotations

from dataclasses import dataclass, field


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


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
