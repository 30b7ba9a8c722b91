"""Options → a running audit pipeline: policy + backends, the filters that feed it, start and flush.

Composition follows kube's AuditOptions.ApplyTo: each backend is wrapped for its mode (batch →
buffered, blocking → errors ignored, blocking-strict → as is), then for truncation if enabled, and
log and webhook are joined in a union. Without a policy file, or without any backend, nothing is
audited (kube logs the same "no events will be recorded" at -v=2).

Wiring, in the app: `build_chain(..., audit=pipeline)` places the filters, the app is created with
`middlewares=chain`, `app.on_response_prepare.append(audit_response_prepare)`, then
`await pipeline.start()` before serving and `await pipeline.shutdown()` after the runner is cleaned
up (so events of requests that were still running are flushed too).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp.typedefs import Middleware

from server.audit.backend import (
    MODE_BATCH,
    MODE_BLOCKING,
    Backend,
    BufferedBackend,
    IgnoreErrorsBackend,
    TruncateBackend,
    UnionBackend,
)
from server.audit.log_backend import (
    DEFAULT_MAX_SIZE_MB,
    MEGABYTE,
    LogBackend,
    RotatingFile,
    StdoutWriter,
    Writer,
)
from server.audit.options import AuditOptions
from server.audit.policy import Policy, PolicyError, load_policy
from server.audit.webhook_backend import KubeconfigError, WebhookBackend, load_webhook_kubeconfig
from server.filters.audit import audit, failed_authentication_audit
from server.longrunning import DEFAULT_LONG_RUNNING, LongRunningCheck

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class AuditPipeline:
    policy: Policy
    backend: Backend
    long_running: LongRunningCheck = DEFAULT_LONG_RUNNING
    _state: str = field(default="new", init=False, repr=False)

    def middleware(self) -> Middleware:
        """kube's WithAudit, for the chain right after authentication."""
        return audit(self.policy, self.backend, long_running=self.long_running)

    def failed_authentication_middleware(self) -> Middleware:
        """kube's WithFailedAuthenticationAudit, for the chain right before authentication."""
        return failed_authentication_audit(self.policy, self.backend)

    async def start(self) -> None:
        if self._state == "new":
            self._state = "running"
            await self.backend.start()

    async def shutdown(self) -> None:
        """Deliver every pending event, then close files and connections. Waits as long as that takes
        (a webhook that keeps failing is retried with backoff first, as in kube)."""
        if self._state == "stopped":
            return
        self._state = "stopped"
        await self.backend.shutdown()


async def build_audit(options: AuditOptions) -> AuditPipeline | None:
    """Load the policy and set up the backends; None when audit is off. Raises ValueError on bad files."""
    if options.audit_policy_file is None or not str(options.audit_policy_file):
        if options.log_enabled or options.webhook_enabled:
            logger.info("No audit policy file provided, no events will be recorded")
        return None
    if not (options.log_enabled or options.webhook_enabled):
        return None
    try:
        policy = await asyncio.to_thread(load_policy, str(options.audit_policy_file))
    except PolicyError as err:
        raise ValueError(f"loading audit policy file: {err}") from None
    backends: list[Backend] = []
    if options.log_enabled:
        backends.append(_wrap(LogBackend(_log_writer(options), options.audit_log_format), options, "log"))
    if options.webhook_enabled:
        assert options.audit_webhook_config_file is not None
        try:
            target = await asyncio.to_thread(load_webhook_kubeconfig, options.audit_webhook_config_file)
        except (KubeconfigError, OSError, ValueError) as err:
            raise ValueError(f"initializing audit webhook: {err}") from None
        webhook = WebhookBackend(target, initial_backoff=options.audit_webhook_initial_backoff)
        backends.append(_wrap(webhook, options, "webhook"))
    backend = backends[0] if len(backends) == 1 else UnionBackend(backends)
    return AuditPipeline(policy, backend)


def _log_writer(options: AuditOptions) -> Writer:
    if options.audit_log_path == "-":
        return StdoutWriter()
    return RotatingFile(
        Path(options.audit_log_path),
        max_bytes=(options.audit_log_maxsize or DEFAULT_MAX_SIZE_MB) * MEGABYTE,
        max_backups=options.audit_log_maxbackup,
        max_age_days=options.audit_log_maxage,
        compress=options.audit_log_compress,
    )


def _wrap(backend: Backend, options: AuditOptions, plugin: str) -> Backend:
    mode = options.mode(plugin)
    if mode == MODE_BATCH:
        backend = BufferedBackend(backend, options.batch_config(plugin), name=f"buffered<{plugin}>")
    elif mode == MODE_BLOCKING:
        backend = IgnoreErrorsBackend(backend)
    truncate = options.truncate_config(plugin)
    if truncate is not None:
        backend = TruncateBackend(backend, truncate, name=f"truncate<{plugin}>")
    return backend
