"""Mutating, then validating admission, as k8s.io/apiserver runs it.

Every mutating plugin runs before any validating plugin, so validators see the final object. The
caller re-applies the request version's defaults after `admit` when a webhook's patch replaced the
object (KEP-575: the patched JSON is decoded, and decoding defaults), which is why the chain only
mutates and never converts. Each step and each plugin
is timed into kube's `apiserver_admission_step_*` / `_controller_*` histograms when metrics are given.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from registry.generic.admission import Attributes, MutatingPlugin, ValidatingPlugin
from server.admission.metrics import AdmissionMetrics


@dataclass(frozen=True)
class AdmissionChain:
    mutating: Sequence[MutatingPlugin] = ()
    validating: Sequence[ValidatingPlugin] = ()
    metrics: AdmissionMetrics | None = None

    async def admit(self, attrs: Attributes) -> None:
        await self._run("admit", [(p, p.admit) for p in self.mutating if p.handles(attrs.operation)], attrs)

    async def validate(self, attrs: Attributes) -> None:
        await self._run(
            "validate", [(p, p.validate) for p in self.validating if p.handles(attrs.operation)], attrs
        )

    async def _run(self, step: str, calls: list, attrs: Attributes) -> None:
        metrics = self.metrics
        if metrics is None:
            for _, call in calls:
                await call(attrs)
            return
        operation = attrs.operation.value
        step_started = time.monotonic()
        rejected = True
        try:
            for plugin, call in calls:
                started = time.monotonic()
                ok = False
                try:
                    await call(attrs)
                    ok = True
                finally:
                    metrics.observe_controller(
                        plugin.name, step, operation, not ok, time.monotonic() - started
                    )
            rejected = False
        finally:
            metrics.observe_step(step, operation, rejected, time.monotonic() - step_started)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.mutating] + [p.name for p in self.validating]
