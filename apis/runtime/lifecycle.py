"""When a version of a kind was introduced, deprecated and removed (kube's prerelease-lifecycle-gen).

k8s.io/apiserver warns on every request to a deprecated version (endpoints/deprecation): the text is
`<group>/<version> <Kind> is deprecated in v<M>.<m>+[, unavailable in v<M>.<m>+][; use <gv> <Kind>]`,
sent as a `299` Warning header. As the generator does, an unstated deprecation is three minors after
the introduction and an unstated removal three minors after the deprecation.
"""

from __future__ import annotations

from dataclasses import dataclass

Release = tuple[int, int]


def _plus_three(release: Release) -> Release:
    return (release[0], release[1] + 3)


def _text(release: Release) -> str:
    return f"v{release[0]}.{release[1]}+"


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """`+k8s:prerelease-lifecycle-gen:introduced=1.0` etc.; only `introduced` is required."""

    introduced: Release
    deprecated: Release | None = None
    removed: Release | None = None
    # (apiVersion, kind) clients should move to, e.g. ("wardle.example.com/v1beta1", "Flunder").
    replacement: tuple[str, str] | None = None

    @property
    def deprecated_in(self) -> Release:
        return self.deprecated or _plus_three(self.introduced)

    @property
    def removed_in(self) -> Release:
        return self.removed or _plus_three(self.deprecated_in)

    def is_deprecated(self, current: Release) -> bool:
        """deprecation.IsDeprecated: deprecated once the server's release reaches the deprecation;
        always when the server does not know its release ((0, 0))."""
        return current == (0, 0) or self.deprecated_in <= current

    def warning(self, api_version: str, kind: str) -> str:
        """deprecation.WarningMessage, word for word."""
        text = f"{api_version} {kind} is deprecated in {_text(self.deprecated_in)}"
        text += f", unavailable in {_text(self.removed_in)}"
        if self.replacement is not None:
            text += f"; use {self.replacement[0]} {self.replacement[1]}"
        return text
