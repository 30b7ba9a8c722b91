"""API errors as typed values that render to `Status` objects, like k8s.io/apimachinery/pkg/api/errors.

Every error a client sees leaves the server as one of these. Messages, reasons and `details` follow
kube-apiserver to the letter because kubectl and client-go branch on them (e.g. kubectl reads the uid
of a deleted object from `details`, client-go retries on `Conflict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from apis.meta.field import FieldError


@dataclass(frozen=True, slots=True)
class GroupResource:
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True, slots=True)
class GroupKind:
    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass(slots=True)
class StatusError(Exception):
    """An error with an HTTP code and a kube `Status` body."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    # Extra response headers (Retry-After for 429/503).
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:
            del body["reason"]  # metav1.Status's reason is omitempty (e.g. a webhook's denial without one)
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    d.update({k: v for k, v in extra.items() if v})
    return d


def not_found(gr: GroupResource, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{gr} "{name}" not found', _details(name, gr.group, gr.resource))


def already_exists(gr: GroupResource, name: str) -> StatusError:
    return StatusError(
        409, "AlreadyExists", f'{gr} "{name}" already exists', _details(name, gr.group, gr.resource)
    )


def conflict(gr: GroupResource, name: str, why: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {gr} "{name}": {why}',
        _details(name, gr.group, gr.resource),
    )


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(gk: GroupKind, name: str, errors: Sequence[FieldError]) -> StatusError:
    causes = [{"reason": e.type.reason, "message": e.body(), "field": e.field} for e in errors]
    agg = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    return StatusError(
        422, "Invalid", f'{gk} "{name}" is invalid: {agg}', _details(name, gk.group, gk.kind, causes=causes)
    )


def forbidden(gr: GroupResource, name: str, why: str) -> StatusError:
    subject = f'{gr} "{name}"' if name else str(gr)
    return StatusError(
        403, "Forbidden", f"{subject} is forbidden: {why}", _details(name, gr.group, gr.resource)
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def method_not_supported(gr: GroupResource, verb: str) -> StatusError:
    return StatusError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {gr}",
        _details("", gr.group, gr.resource),
    )


def method_not_allowed() -> StatusError:
    """go-restful's 405 for a method no route of the path takes, as kube's serviceErrorHandler
    renders it (NewGenericServerResponse: no resource named, so empty details)."""
    return StatusError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
    )


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {content_type}",
    )


def request_entity_too_large(message: str) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_many_requests(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(
        429,
        "TooManyRequests",
        message,
        {"retryAfterSeconds": retry_after},
        {"Retry-After": str(retry_after)},
    )


def service_unavailable(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(
        503,
        "ServiceUnavailable",
        message,
        {"retryAfterSeconds": retry_after},
        {"Retry-After": str(retry_after)},
    )


def timeout(message: str, retry_after: int = 0) -> StatusError:
    details = {"retryAfterSeconds": retry_after} if retry_after else None
    return StatusError(504, "Timeout", message, details)


def internal_error(message: str) -> StatusError:
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def success_status(details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `Status` a DELETE answers with when the object is gone at once."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body
