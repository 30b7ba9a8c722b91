"""Audit filters: kube's WithAuditInit, WithAudit and WithFailedAuthenticationAudit.

`audit_init` is always in the chain (outermost, as in kube): it assigns the Audit-ID — the caller's,
if it sent one (a front proxy forwarding its own makes both logs share the ID). Every response,
errors and streams (watch) included, gets the header from `audit_response_prepare`, run from the
app's on_response_prepare signal; that hook also emits ResponseStarted for long-running requests at
the moment their headers go out, as kube does when the status code is written.

`audit` sits after authentication (events name the user) and before impersonation. It evaluates the
policy, emits RequestReceived, then ResponseComplete — or Panic when the handler blew up. A backend
failure is logged and never fails the request, except in mode "blocking-strict" at RequestReceived
(500, like kube).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, Protocol

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apis.meta.errors import StatusError, internal_error
from apis.meta.user import UserInfo
from apis.meta.uuids import new_uuid
from server.audit.capture import CapturedBody, capture_request_body, response_body
from server.audit.event import AuditRecord, object_ref, response_status, source_ips, user_agent
from server.audit.policy import (
    LEVEL_NONE,
    LEVEL_REQUEST,
    LEVEL_REQUEST_RESPONSE,
    STAGE_PANIC,
    STAGE_REQUEST_RECEIVED,
    STAGE_RESPONSE_COMPLETE,
    STAGE_RESPONSE_STARTED,
    Policy,
    RequestAuditConfig,
    level_rank,
)
from server.authn.x509 import peer_certificate
from server.filters.authentication import user_of
from server.filters.request_info import request_info_of
from server.longrunning import DEFAULT_LONG_RUNNING, LongRunningCheck
from server.request_info import RequestInfo
from server.request_state import AUDIT, AUDIT_ANNOTATIONS, AUDIT_ID, IMPERSONATED_BY, RECEIVED, USER

logger = logging.getLogger(__name__)

HEADER_AUDIT_ID = "Audit-ID"

# Verbs whose body kube's handlers log (create/update objects, patches, DeleteOptions).
_BODY_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# Verbs whose body is the object itself, whose metadata fills objectRef gaps (e.g. a create's name).
_OBJECT_VERBS = frozenset({"create", "update"})


class Sink(Protocol):
    async def process(self, events: list[dict[str, Any]]) -> bool: ...


@web.middleware
def audit_init(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
    """A plain function (no frame alive while a watch runs): the ID reaches every response, errors
    included, through `audit_response_prepare`, which runs as any response's headers go out."""
    request[AUDIT_ID] = request.headers.get(HEADER_AUDIT_ID) or new_uuid()
    request[RECEIVED] = datetime.now(UTC)
    return handler(request)


async def audit_response_prepare(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """on_response_prepare hook: the Audit-ID header on every response, ResponseStarted for watches."""
    audit_id = request.get(AUDIT_ID)
    # aiohttp already counts the response as prepared here, but its headers are not written yet.
    # An aggregated server must not add a second ID next to one already set (kube's WithAuditInit).
    if audit_id is not None and HEADER_AUDIT_ID not in response.headers:
        response.headers[HEADER_AUDIT_ID] = audit_id
    state = request.get(AUDIT)
    if isinstance(state, RequestAudit):
        await state.response_started(response.status)


class RequestAudit:
    """The audit state of one request; emits events to the sink stage by stage."""

    __slots__ = ("_started", "long_running", "record", "request", "sink")

    def __init__(self, record: AuditRecord, sink: Sink, long_running: bool, request: web.BaseRequest) -> None:
        self.record, self.sink, self.long_running, self.request = record, sink, long_running, request
        self._started = False

    async def emit(self, stage: str) -> bool:
        """kube's processAuditEvent: omitted stages count as processed. Only a sink's False (mode
        blocking-strict) reports a failure; a sink that raises is a bug, logged, and never fails the
        request."""
        if stage in self.record.omit_stages:
            return True
        self._refresh()
        event = self.record.event(stage, datetime.now(UTC))
        try:
            return await self.sink.process([event])
        except Exception:
            logger.exception("audit sink failed for %s (stage %s)", self.record.audit_id, stage)
            return True

    async def response_started(self, code: int) -> None:
        """The status code went out: remembered always, sent as ResponseStarted for long-running ones."""
        if self._started:
            return
        self._started = True
        self.record.set_code(code)
        if self.long_running:
            await self.emit(STAGE_RESPONSE_STARTED)

    async def complete(self) -> None:
        if self.record.response_status is None:
            # Nothing was written (the client went away first): kube fakes a success.
            self.record.response_status = response_status(
                200, {"status": "Success", "message": "Connection closed early"}
            )
        if not self._started:
            await self.response_started(self.record.response_status["code"])
        await self.emit(STAGE_RESPONSE_COMPLETE)

    async def panic(self, exc: BaseException) -> None:
        message = f"APIServer panic'd: {exc}" if str(exc) else f"APIServer panic'd: {type(exc).__name__}"
        status = {"status": "Failure", "reason": "InternalError", "message": message}
        self.record.response_status = response_status(500, status)
        await self.emit(STAGE_PANIC)

    def _refresh(self) -> None:
        """Pick up what filters after this one have learnt (authz decision, impersonated user)."""
        annotations = self.request.get(AUDIT_ANNOTATIONS)
        if isinstance(annotations, dict):
            for key, value in annotations.items():
                self.record.add_annotation(str(key), str(value))
        if self.record.impersonated_user is None and self.request.get(IMPERSONATED_BY) is not None:
            effective = self.request.get(USER)
            if isinstance(effective, UserInfo):
                self.record.log_impersonated_user(effective)


def new_record(
    request: web.BaseRequest, info: RequestInfo, user: UserInfo | None, config: RequestAuditConfig
) -> AuditRecord:
    """kube's NewEventFromRequest / LogRequestMetadata."""
    audit_id = request.get(AUDIT_ID) or request.headers.get(HEADER_AUDIT_ID) or new_uuid()
    return AuditRecord(
        level=config.level,
        audit_id=audit_id,
        request_uri=request.raw_path,
        verb=info.verb,
        user=user.to_dict() if user is not None else {},
        source_ips=source_ips(request.headers, request.remote),
        user_agent=user_agent(request.headers),
        object_ref=object_ref(info),
        received=request.get(RECEIVED) or datetime.now(UTC),
        omit_stages=config.omit_stages,
        omit_managed_fields=config.omit_managed_fields,
    )


def audit(policy: Policy, sink: Sink, *, long_running: LongRunningCheck | None = None) -> Middleware:
    """kube's WithAudit. A RequestReceived event the sink could not store fails the request with 500;
    only a "blocking-strict" backend reports such failures (see server.audit.pipeline)."""
    is_long_running = long_running or DEFAULT_LONG_RUNNING

    @web.middleware
    def audit_request(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        # A plain function: a request the policy does not audit (level None) passes straight
        # through, and keeps no frame of this filter alive while it runs.
        info = request_info_of(request)
        user = user_of(request)
        config = policy.evaluate(user, info)
        if config.level == LEVEL_NONE:
            return handler(request)
        return audited(request, handler, info, user, config)

    async def audited(
        request: web.Request,
        handler: Handler,
        info: RequestInfo,
        user: UserInfo | None,
        config: RequestAuditConfig,
    ) -> web.StreamResponse:
        state = RequestAudit(new_record(request, info, user, config), sink, is_long_running(info), request)
        request[AUDIT] = state
        if not await state.emit(STAGE_REQUEST_RECEIVED):
            raise internal_error("failed to store audit event")
        body: CapturedBody | None = None
        try:
            body = await _maybe_capture(request, info, config)
            response = await handler(request)
        except StatusError as err:
            _log_request_body(state, info, body)
            state.record.log_response_object(err.code, err.status(), keep_object=True)
            await state.complete()
            raise
        except web.HTTPException as exc:
            _log_request_body(state, info, body)
            _log_response(state, info, exc)
            await state.complete()
            raise
        except (asyncio.CancelledError, ConnectionResetError):
            # The client went away or the server is stopping: the request still ends in the log.
            await asyncio.shield(state.complete())
            raise
        except Exception as exc:
            await state.panic(exc)
            raise
        _log_request_body(state, info, body)
        _log_response(state, info, response)
        await state.complete()
        return response

    return audit_request


def failed_authentication_audit(policy: Policy, sink: Sink) -> Middleware:
    """kube's WithFailedAuthenticationAudit: a 401 from authentication still gets an event.

    Placed just before the authentication filter. Without a user, rules naming users or groups do not
    match. kube emits this event only at ResponseStarted.
    """

    @web.middleware
    async def audit_failed_authentication(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        if response.status != 401 or request.get(USER) is not None or AUDIT in request:
            return response
        info = request_info_of(request)
        config = policy.evaluate(None, info)
        if config.level == LEVEL_NONE:
            return response
        record = new_record(request, info, None, config)
        record.response_status = response_status(401, {"message": _auth_methods(request)})
        state = RequestAudit(record, sink, False, request)
        _log_response(state, info, response)
        state.record.set_code(response.status)
        await state.emit(STAGE_RESPONSE_STARTED)
        return response

    return audit_failed_authentication


def _auth_methods(request: web.BaseRequest) -> str:
    methods = []
    auth = request.headers.get("Authorization", "").strip()
    scheme = auth.split(" ")[0].lower() if auth else ""
    if scheme == "basic":
        methods.append("basic")
    if len(auth.split(" ")) > 1 and scheme == "bearer":
        methods.append("bearer")
    if request.query.get("access_token", "").strip():
        methods.append("access_token")
    if peer_certificate(request) is not None:  # type: ignore[arg-type]
        methods.append("x509")
    if methods:
        return f"Authentication failed, attempted: {', '.join(methods)}"
    return "Authentication failed, no credentials provided"


async def _maybe_capture(
    request: web.Request, info: RequestInfo, config: RequestAuditConfig
) -> CapturedBody | None:
    if not info.is_resource_request or info.verb not in _BODY_VERBS:
        return None
    if level_rank(config.level) < level_rank(LEVEL_REQUEST) and info.verb not in _OBJECT_VERBS:
        return None  # at Metadata only a create/update body matters (it names the object)
    return await capture_request_body(request)


def _log_request_body(state: RequestAudit, info: RequestInfo, body: CapturedBody | None) -> None:
    if body is None or not body.consumed():
        return
    value = body.decoded()
    if value is not None:
        state.record.log_request_object(value, enrich_ref=info.verb in _OBJECT_VERBS)


def _log_response(state: RequestAudit, info: RequestInfo, response: web.StreamResponse) -> None:
    """Status bodies set responseStatus; API objects become responseObject (never streamed watches)."""
    state.record.set_code(response.status)
    if state.long_running:
        return
    keep_object = level_rank(state.record.level) >= level_rank(LEVEL_REQUEST_RESPONSE)
    value = response_body(response, only_status=not keep_object)
    if value is None:
        return
    is_status = isinstance(value, dict) and value.get("kind") == "Status"
    state.record.log_response_object(
        response.status, value, keep_object=info.is_resource_request or is_status
    )
