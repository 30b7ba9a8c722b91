"""Mutating, then validating admission, as k8s.io/apiserver runs it.

Every mutating plugin runs before any validating plugin, so validators see the final object. The
caller re-applies the request version's defaults after `admit` (KEP-575: a mutating plugin may drop a
defaulted field), which is why the chain only mutates and never converts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from registry.generic.admission import Attributes, MutatingPlugin, ValidatingPlugin


@dataclass(frozen=True)
class AdmissionChain:
    mutating: Sequence[MutatingPlugin] = ()
    validating: Sequence[ValidatingPlugin] = ()

    async def admit(self, attrs: Attributes) -> None:
        for plugin in self.mutating:
            if plugin.handles(attrs.operation):
                await plugin.admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        for plugin in self.validating:
            if plugin.handles(attrs.operation):
                await plugin.validate(attrs)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.mutating] + [p.name for p in self.validating]
