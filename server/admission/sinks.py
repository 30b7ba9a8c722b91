"""Where admission leaves what it learns about one request: audit annotations and warnings.

kube's admission Attributes carry both (AddAnnotation, and warning.AddWarning on the request context),
and they outlive a rejection: a denied request still has its webhook's warnings as `Warning` headers
and its annotations in the audit event. So they live on the request, not on the Attributes, and every
Attributes of the request (mutating, validating, retries) writes into the same two objects.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from server.request_state import ADMISSION_WARNINGS, AUDIT_ANNOTATIONS
from server.responses import add_warning

# kube's warning recorder: at most 4 Ki runes of warning text per response, duplicates dropped.
MAX_WARNING_RUNES = 4 * 1024


def request_sinks(request: web.Request) -> tuple[dict[str, str], list[str]]:
    """The request's audit-annotation dict (shared with the audit filter) and warning list."""
    annotations = request.get(AUDIT_ANNOTATIONS)
    if annotations is None:
        annotations = request[AUDIT_ANNOTATIONS] = {}
    warnings = request.get(ADMISSION_WARNINGS)
    if warnings is None:
        warnings = request[ADMISSION_WARNINGS] = []
    return annotations, warnings


def admission_options(kind: str, *, dry_run: bool, field_manager: str = "") -> dict[str, Any]:
    """The options object a webhook receives in `request.options` (meta.k8s.io/v1 *Options)."""
    options: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        options["dryRun"] = ["All"]
    if field_manager:
        options["fieldManager"] = field_manager
    return options


def admission_warning_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Part of the response hook (server/app.py): admission warnings become `Warning: 299 - "..."` headers."""
    warnings = request.get(ADMISSION_WARNINGS)
    if not warnings:
        return
    seen: set[str] = set()
    total = 0
    for text in warnings:
        if text in seen:
            continue
        seen.add(text)
        total += len(text)
        if total > MAX_WARNING_RUNES:
            break
        add_warning(response, text)
