"""One write request: what every write handler needs, built once (kube's RequestScope with the
request's options, as handlers/create.go, update.go, patch.go and delete.go each build them).

Create, update, patch, apply, /status, /scale and the deletes begin alike: the response type is
negotiated first (a 406 must never follow a write), the options are read and checked in kube's order
(the field manager, dryRun, fieldValidation; a 422 names the options' kind), and the user and the
request's audit-annotation and warning sinks are taken. `WriteRequest.begin` does that once. A
handler then decodes through `decode`, runs mutating admission through `admit(obj, old)`, hands the
Store `store` (registry/generic/options.WriteOptions: the version, dry run, field manager and this
request's validating admission) and answers through `respond`.

`RequestAdmission` is the request's one way into admission. Its mutating and validating plugins see
the same attributes and the same options object, as kube builds one admission.Attributes for both:
CreateOptions for a create (and for an update or apply that creates), UpdateOptions for an update, a
patch or a write to /scale, DeleteOptions for a delete; `fieldManager` and `dryRun` as the client
sent them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from apis.meta import errors
from apis.meta.user import ANONYMOUS, UserInfo
from apis.runtime.kinds import HubObject
from registry.generic.admission import Attributes, Operation
from registry.generic.managed_fields import FieldTracker
from registry.generic.options import WriteOptions
from server.admission.sinks import admission_options, request_sinks
from server.authz.interface import Authorizer, AuthzAttributes
from server.endpoints import field_manager as managers
from server.endpoints import protobuf
from server.endpoints.decode import Decoded, decode_write
from server.endpoints.negotiation import Output, negotiate_output
from server.endpoints.query import dry_run, field_validation
from server.endpoints.render import answer_object
from server.endpoints.scope import ResourceScope
from server.request_info import RequestInfo
from server.request_state import AUTHORIZER, USER
from server.responses import add_warning, object_response


def write_output(request: web.Request, scope: ResourceScope | None = None) -> Output:
    """kube negotiates the response type before anything else: a 406 must never follow a write.
    Without `scope` the answer is not the resource's kind (a Scale), which has no protobuf here."""
    if scope is None:
        return negotiate_output(request.headers.get("Accept"), allow_transforms=())
    return protobuf.negotiate(request.headers.get("Accept"), scope, ())


@dataclass(slots=True, eq=False)
class RequestAdmission:
    """Admission for one request: the attributes every plugin call of it shares, built in one place."""

    scope: ResourceScope
    info: RequestInfo
    user: UserInfo
    # The request's audit annotations and warnings (server/admission/sinks.py).
    sinks: tuple[dict[str, str], list[str]]
    dry_run: bool
    # The `fieldManager` parameter as sent (a delete has none).
    field_manager: str = ""
    deleting: bool = False
    # Authorizes the `create` an update, patch or apply turns into (None: built without authorization).
    authorizer: Authorizer | None = None

    def options(self, operation: Operation) -> dict[str, Any]:
        """The options object webhooks receive in `request.options` for `operation`."""
        if operation is Operation.DELETE:
            return admission_options("DeleteOptions", dry_run=self.dry_run)
        kind = "CreateOptions" if operation is Operation.CREATE else "UpdateOptions"
        return admission_options(kind, dry_run=self.dry_run, field_manager=self.field_manager)

    def attributes(self, operation: Operation, obj: HubObject | None, old: HubObject | None) -> Attributes:
        scope, info = self.scope, self.info
        annotations, warnings = self.sinks
        named = obj if obj is not None else old
        return Attributes(
            operation=operation,
            group=scope.group.group,
            version=scope.version,
            resource=scope.kind.resource,
            subresource=info.subresource,
            kind=scope.kind.kind,
            namespace=info.namespace,
            name=(named.metadata.get("name") if named is not None else None) or info.name,
            object=obj,
            old_object=old,
            user=self.user,
            dry_run=self.dry_run,
            codec=scope.codec,
            annotations=annotations,
            warnings=warnings,
            options=self.options(operation),
        )

    async def admit(self, obj: HubObject, old: HubObject | None) -> HubObject:
        """Mutating admission of `obj` (`old`: the stored object, None for a create), then the request
        version's defaults again if a webhook patched it (KEP-575: a patched object is decoded again,
        and decoding defaults). Returns the object to write."""
        operation = Operation.CREATE if old is None else Operation.UPDATE
        chain = self.scope.admission
        if not any(p.handles(operation) for p in chain.mutating):
            return obj
        attrs = self.attributes(operation, obj, old)
        await chain.admit(attrs)
        if not attrs.patched:
            return attrs.object
        return self.scope.codec.redefault(attrs.object, self.scope.version)

    async def validate(self, obj: HubObject, old: HubObject | None) -> None:
        """Validating admission as the Store runs it, against what it is about to write or delete.

        A delete is kube's AdmissionToValidateObjectDeleteFunc: mutating plugins (which may not change
        anything on a DELETE), then validating ones, against the object being deleted. An update,
        patch or apply that creates needs `create` too, checked here before validating admission
        (kube's withAuthorization: 403 `<resource> "<name>" is forbidden: <reason>`)."""
        chain = self.scope.admission
        if self.deleting:
            attrs = self.attributes(Operation.DELETE, None, old)
            await chain.admit(attrs)
            await chain.validate(attrs)
            return
        if old is None and self.info.verb != "create":
            await self._authorize_create()
        await chain.validate(self.attributes(Operation.CREATE if old is None else Operation.UPDATE, obj, old))

    async def _authorize_create(self) -> None:
        if self.authorizer is None:
            return  # an application built without the authorization filter authorizes nothing
        info = dataclasses.replace(self.info, verb="create")
        decision = await self.authorizer.authorize(AuthzAttributes(self.user, info))
        if decision.allowed:
            return
        if decision.error:
            raise errors.internal_error(decision.error)
        raise errors.forbidden(self.scope.resource, self.info.name, decision.reason)


def request_admission(
    request: web.Request, scope: ResourceScope, info: RequestInfo, *, dry_run: bool, deleting: bool = False
) -> RequestAdmission:
    """The admission of `request`: its user, sinks and authorizer, and the options it was sent."""
    field_manager = "" if deleting else managers.parameter(request)
    user, sinks = request.get(USER, ANONYMOUS), request_sinks(request)
    return RequestAdmission(
        scope, info, user, sinks, dry_run, field_manager, deleting, request.get(AUTHORIZER)
    )


@dataclass(slots=True, eq=False)
class WriteRequest:
    """A create, update, patch or apply of an object or of its /status or /scale."""

    request: web.Request
    scope: ResourceScope
    info: RequestInfo
    output: Output
    field_validation: str
    admission: RequestAdmission
    # What the Store reads of this request.
    store: WriteOptions

    @classmethod
    def begin(
        cls,
        request: web.Request,
        scope: ResourceScope,
        info: RequestInfo,
        options_kind: str,
        *,
        output: Output | None = None,
        manager: FieldTracker | None = None,
        manager_version: str = "",
    ) -> WriteRequest:
        """The output, then the `fieldManager` parameter (or the User-Agent, recorded in
        `manager_version`, the URL's version by default), then dryRun and fieldValidation, a 422 on
        `options_kind` for an invalid one. An apply negotiates `output` and checks its own manager
        first (required, with `force`) and passes both."""
        if output is None:
            output = write_output(request, scope)
        if manager is None:
            manager = managers.field_manager(request, info, options_kind, manager_version or scope.version)
        dry = dry_run(request.query, options_kind)
        validation = field_validation(request.query, options_kind)
        admission = request_admission(request, scope, info, dry_run=dry)
        store = WriteOptions(scope.version, dry, manager, admission.validate)
        return cls(request, scope, info, output, validation, admission, store)

    async def admit(self, obj: HubObject, old: HubObject | None) -> HubObject:
        """Mutating admission (RequestAdmission.admit): the handlers' one way into it."""
        return await self.admission.admit(obj, old)

    def decode(
        self,
        data: Any,
        *,
        field_validation: str | None = None,
        duplicates: Sequence[str] = (),
        patch: str | None = None,
    ) -> Decoded:
        """decode.decode_write in the URL's version, remembered for the Store: what decoding validated
        is not validated again, and its schema errors are reported with the rest."""
        decoded = decode_write(
            self.scope,
            data,
            field_validation=self.field_validation if field_validation is None else field_validation,
            duplicates=list(duplicates),
            patch=patch,
        )
        self.store.decoded = decoded
        return decoded

    def set_namespace(self, obj: HubObject) -> None:
        """kube's rest.EnsureObjectNamespaceMatchesRequestNamespace: the URL's namespace wins, a
        different one in the body is a 400."""
        if not self.scope.kind.namespaced:
            obj.metadata.pop("namespace", None)
            return
        body_ns = obj.metadata.get("namespace")
        if body_ns and body_ns != self.info.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        obj.metadata["namespace"] = self.info.namespace

    def respond(self, obj: HubObject, status: int, warnings: Sequence[str] = ()) -> web.Response:
        """The written object in the URL's version, with the decoding's `warnings` and then the
        registry's (ratcheted rule failures) as `Warning` headers."""
        output = self.output
        body = answer_object(self.scope, obj, output)
        response = object_response(body, status=status, content_type=output.content_type)
        for text in (*warnings, *self.store.warnings):
            add_warning(response, text)
        return response
