"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook: kube's dispatchers over the cluster's hooks.

Mutating: hooks in order (configurations by name), one at a time; each sees the object as the previous
hooks left it, in the version it asked for; a change re-invokes, once, the `IfNeeded` hooks that ran
before it. Validating: every matching hook at once; the first error to arrive is the answer.
A failure to reach a hook fails the request with a 500 (failurePolicy Fail) or is logged, counted and
annotated (Ignore). Both wait up to 10 s for the informers before the first request (403 after that).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from apis.meta import errors
from apis.meta.errors import StatusError
from registry.generic.admission import Attributes, Operation, deny
from server.admission.metrics import (
    APISERVER_INTERNAL_ERROR,
    CALLING_WEBHOOK_ERROR,
    NO_ERROR,
    AdmissionMetrics,
)
from server.admission.webhook.call import Rejection, admission_request, apply_patch, call_hook
from server.admission.webhook.calls import CallingError, ClientManager
from server.admission.webhook.hooks import Hook, HookSource
from server.admission.webhook.matching import Invocation, Matcher

logger = logging.getLogger(__name__)

MUTATING_NAME = "MutatingAdmissionWebhook"
VALIDATING_NAME = "ValidatingAdmissionWebhook"
READY_WAIT = 10.0
ALL_OPERATIONS = frozenset(Operation)


@dataclass
class _Webhooks:
    source: HookSource
    matcher: Matcher
    clients: ClientManager
    metrics: AdmissionMetrics
    ready: Callable[[float], Awaitable[bool]]  # waits for the informers; True once synced

    async def _wait_ready(self, attrs: Attributes) -> None:
        if not await self.ready(READY_WAIT):
            raise deny(attrs, "not yet ready to handle request")

    async def _invocations(self, attrs: Attributes) -> list[Invocation]:
        await self._wait_ready(attrs)
        found: list[Invocation] = []
        for hook in self.source.hooks:
            invocation = await self.matcher.should_call(
                hook, attrs, lambda inv: admission_request(attrs, inv)
            )
            if invocation is not None:
                found.append(invocation)
        return found

    def _observe_error(self, hook: Hook, attrs: Attributes, err: Exception, seconds: float) -> bool:
        """kube's metric bookkeeping for a failed call; True when the request is rejected."""
        op = attrs.operation.value
        if isinstance(err, CallingError):
            rejected = hook.failure_policy != "Ignore"
            if rejected:
                self.metrics.observe_rejection(
                    hook.name, hook.type, op, CALLING_WEBHOOK_ERROR, err.status.code
                )
            self.metrics.observe_webhook(hook.name, hook.type, op, rejected, err.status.code, seconds)
            return rejected
        if isinstance(err, Rejection):
            self.metrics.observe_rejection(hook.name, hook.type, op, NO_ERROR, err.status.code)
            self.metrics.observe_webhook(hook.name, hook.type, op, True, err.status.code, seconds)
            return True
        self.metrics.observe_rejection(hook.name, hook.type, op, APISERVER_INTERNAL_ERROR, 0)
        self.metrics.observe_webhook(hook.name, hook.type, op, True, 0, seconds)
        return True

    def _failed_open(self, hook: Hook, attrs: Attributes, err: CallingError, key: str) -> None:
        logger.warning("Failed calling webhook, failing open %s: %s", hook.name, err)
        self.metrics.observe_fail_open(hook.name, hook.type)
        attrs.annotations.setdefault(key, hook.name)


def _error_of(err: Exception) -> StatusError:
    """What the request answers for a call that failed closed."""
    if isinstance(err, CallingError):
        return errors.internal_error(str(err))
    if isinstance(err, Rejection):
        return err.status
    if isinstance(err, StatusError):
        return err
    return errors.internal_error(str(err))


@dataclass
class MutatingWebhook(_Webhooks):
    name: str = MUTATING_NAME

    def handles(self, operation: Operation) -> bool:
        return operation in ALL_OPERATIONS

    async def admit(self, attrs: Attributes) -> None:
        await self._wait_ready(attrs)
        if not self.source.hooks:
            return
        previously: set[str] = set()  # IfNeeded hooks invoked so far
        reinvoke: set[str] = set()  # hooks invoked before a later change
        changed_any = await self._round(attrs, 0, previously, reinvoke)
        if changed_any and reinvoke:
            await self._round(attrs, 1, previously, reinvoke)

    async def _round(self, attrs: Attributes, round_: int, previously: set[str], reinvoke: set[str]) -> bool:
        changed_any = False
        for index, hook in enumerate(self.source.hooks):
            invocation = await self.matcher.should_call(
                hook, attrs, lambda inv: admission_request(attrs, inv)
            )
            if invocation is None:
                continue
            if round_ == 1 and hook.uid not in reinvoke:
                continue
            started = time.monotonic()
            changed = False
            try:
                changed = await self._call(attrs, invocation, round_, index)
            except Exception as err:
                seconds = time.monotonic() - started
                if not isinstance(err, CallingError | Rejection | StatusError):
                    raise
                rejected = self._observe_error(hook, attrs, err, seconds)
                if isinstance(err, CallingError) and not rejected:
                    key = f"failed-open.mutation.webhook.admission.k8s.io/round_{round_}_index_{index}"
                    self._failed_open(hook, attrs, err, key)
                    continue
                if isinstance(err, CallingError):
                    logger.warning("Failed calling webhook, failing closed %s: %s", hook.name, err)
                raise _error_of(err) from None
            else:
                self.metrics.observe_webhook(
                    hook.name, hook.type, attrs.operation.value, False, 200, time.monotonic() - started
                )
            if changed:
                reinvoke |= previously
                changed_any = True
            if hook.reinvocation_policy == "IfNeeded":
                previously.add(hook.uid)
        return changed_any

    async def _call(self, attrs: Attributes, invocation: Invocation, round_: int, index: int) -> bool:
        hook = invocation.hook
        mutation_key = f"mutation.webhook.admission.k8s.io/round_{round_}_index_{index}"
        changed = False
        try:
            sent, response = await call_hook(self.clients, attrs, invocation)
            patched, changed = apply_patch(attrs, invocation, sent, response)
            if patched is not None:
                assert attrs.codec is not None
                attrs.object = attrs.codec.from_version(patched, invocation.version)
                attrs.patched = True
                attrs.annotations.setdefault(
                    f"patch.webhook.admission.k8s.io/round_{round_}_index_{index}",
                    json.dumps(
                        {
                            "configuration": hook.configuration,
                            "webhook": hook.name,
                            "patch": json.loads(response.patch),
                            "patchType": response.patch_type,
                        },
                        separators=(",", ":"),
                    ),
                )
        finally:
            attrs.annotations.setdefault(
                mutation_key,
                json.dumps(
                    {"configuration": hook.configuration, "webhook": hook.name, "mutated": changed},
                    separators=(",", ":"),
                ),
            )
        return changed


@dataclass
class ValidatingWebhook(_Webhooks):
    name: str = VALIDATING_NAME

    def handles(self, operation: Operation) -> bool:
        return operation in ALL_OPERATIONS

    async def validate(self, attrs: Attributes) -> None:
        invocations = await self._invocations(attrs)
        if not invocations:
            return
        failures: list[StatusError] = []

        async def one(index: int, invocation: Invocation) -> None:
            hook = invocation.hook
            started = time.monotonic()
            try:
                await call_hook(self.clients, attrs, invocation)
            except (CallingError, Rejection, StatusError) as err:
                rejected = self._observe_error(hook, attrs, err, time.monotonic() - started)
                if isinstance(err, CallingError) and not rejected:
                    key = f"failed-open.validating.webhook.admission.k8s.io/round_0_index_{index}"
                    self._failed_open(hook, attrs, err, key)
                    return
                if isinstance(err, CallingError):
                    logger.warning("Failed calling webhook, failing closed %s: %s", hook.name, err)
                else:
                    logger.warning("rejected by webhook %r: %s", hook.name, err)
                failures.append(_error_of(err))
                return
            self.metrics.observe_webhook(
                hook.name, hook.type, attrs.operation.value, False, 200, time.monotonic() - started
            )

        await asyncio.gather(*(one(i, inv) for i, inv in enumerate(invocations)))
        if failures:
            for other in failures[1:]:
                logger.info("further webhook rejection: %s", other)
            raise failures[0]
