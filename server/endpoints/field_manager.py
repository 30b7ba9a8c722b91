"""Who a write is recorded as: the `fieldManager` parameter, checked as kube checks it, else the
User-Agent's product (kube's managerOrUserAgent); an apply must name its manager.

One function for every non-apply write, the kind's own endpoints (write.py) and the /scale
subresource (scale.py) alike, so both answer the same 422 for the same parameters; they differ only
in the version the manager's fields are recorded in. One for every apply (apply.py, scale_apply.py).
"""

from __future__ import annotations

from aiohttp import web

from apis.meta import errors
from apis.meta.errors import GroupKind
from apis.meta.field import FieldError, Path, forbidden, required
from apis.meta.validation import validate_field_manager
from registry.generic.managed_fields import FieldManager, manager_from_user_agent
from server.request_info import RequestInfo


def parameter(request: web.Request) -> str:
    """The `fieldManager` query parameter as the client sent it ("" when absent): what webhooks see in
    the options of the write."""
    return request.query.get("fieldManager", "")


def field_manager(request: web.Request, info: RequestInfo, options_kind: str, version: str) -> FieldManager:
    """ValidateFieldManager on the parameter (422 on `options_kind`, like kube), `force` refused on a
    non-apply patch, then kube's default from the User-Agent; recorded in `version`."""
    name = parameter(request)
    errs: list[FieldError] = []
    if options_kind == "PatchOptions" and "force" in request.query:
        errs.append(forbidden("force", "may not be specified for non-apply patch"))
    errs += validate_field_manager(name, Path("fieldManager"))
    if errs:
        raise errors.invalid(GroupKind("meta.k8s.io", options_kind), "", errs)
    name = name or manager_from_user_agent(request.headers.get("User-Agent", ""))
    return FieldManager(name, version, info.subresource)


def apply_manager(request: web.Request) -> str:
    """ValidatePatchOptions for an apply patch: `fieldManager` is required and checked."""
    name = parameter(request)
    errs: list[FieldError] = []
    if not name:
        errs.append(required(Path("fieldManager"), "is required for apply patch"))
    errs += validate_field_manager(name, Path("fieldManager"))
    if errs:
        raise errors.invalid(GroupKind("meta.k8s.io", "PatchOptions"), "", errs)
    return name
