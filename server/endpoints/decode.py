"""A request body in some served version → a hub object, with kube's checks in kube's order.

apiVersion/kind checks → prune (unknown fields reported per `fieldValidation`) → schema validation →
defaults of the body's version → conversion to the hub. The body may be in any served version of
the group; the answer is always in the URL's version.
"""

from __future__ import annotations

import json
from typing import Any

from apis.meta import errors
from apis.meta.field import invalid
from apis.schema.defaults import apply_defaults
from apis.schema.prune import prune
from apis.schema.validate import validate
from server.endpoints.scope import ResourceScope


def _strict_message(unknown: list[str], duplicates: list[str]) -> str:
    parts = [f'unknown field "{f}"' for f in unknown] + [f'duplicate field "{f}"' for f in duplicates]
    return "strict decoding error: " + ", ".join(parts)


def warning_header(text: str) -> str:
    """RFC 7234 warning as kube sends it: 299 - "<quoted, escaped text>"."""
    return "299 - " + json.dumps(text)


def check_type(scope: ResourceScope, data: Any) -> str:
    """Validate apiVersion/kind of a body and return the served version it is written in."""
    if not isinstance(data, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object, got {type(data).__name__}")
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not kind:
        raise errors.bad_request(f"Object 'Kind' is missing in '{_preview(data)}'")
    if not api_version:
        raise errors.bad_request(f"Object 'apiVersion' is missing in '{_preview(data)}'")
    version = scope.codec.version_of(str(api_version))
    if version is None:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version ({scope.api_version})"
        )
    if kind != scope.kind.kind:
        name = (data.get("metadata") or {}).get("name", "") if isinstance(data.get("metadata"), dict) else ""
        raise errors.invalid(scope.group_kind, name, [invalid("kind", kind, f"must be {scope.kind.kind}")])
    return version


def decode_object(
    scope: ResourceScope,
    data: Any,
    *,
    field_validation: str,
    duplicates: list[str] = (),  # type: ignore[assignment]
    patch: str | None = None,
) -> tuple[Any, list[str]]:
    """Returns (hub, warnings). `patch` is the patch body when `data` is a patched object."""
    version = check_type(scope, data)
    schema = scope.kind.versions[version].schema
    name = data.get("metadata", {}).get("name", "") if isinstance(data.get("metadata"), dict) else ""
    unknown = prune(data, schema)
    warnings: list[str] = []
    if unknown or duplicates:
        if field_validation == "Strict":
            message = _strict_message(unknown, list(duplicates))
            if patch is not None:
                raise errors.invalid(scope.group_kind, name, [invalid("patch", patch, message)])
            raise errors.bad_request(message)
        if field_validation == "Warn":
            warnings = [f'unknown field "{f}"' for f in unknown] + [
                f'duplicate field "{f}"' for f in duplicates
            ]
    errs = validate(data, schema)
    if errs:
        raise errors.invalid(scope.group_kind, name, errs)
    apply_defaults(data, schema)
    return scope.codec.from_version(data, version), warnings


def _preview(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), default=str)
    return text if len(text) <= 200 else text[:200] + "..."
