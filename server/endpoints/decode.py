"""A request body in some served version → a hub object, with kube's checks in kube's order.

apiVersion/kind checks → prune (unknown fields reported per `fieldValidation`) → defaults of the
URL's version → schema validation → conversion to the hub. The body must be written in the URL's
version: k8s.io/apiserver refuses another one, even another served version of the same group (its
decoder converts only into the version the endpoint was installed for).

A body that does not decode is a 400 `<Kind> in version "<v>" cannot be handled as a <Kind>:
<message>` (k8s.io/apiserver handlers/rest.go transformDecodeError), which custom resources get
too: apiextensions-apiserver serves them through the same handlers, its new objects typed with the
CRD's kind. Only a group of scheme types (`GroupInfo.scheme_types`) can fail to convert one kind into
another. Inside a patch the message is kube's 422 on `patch`, bare.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apis.goformat import go_quote
from apis.meta import errors
from apis.meta.errors import GroupKind, StatusError
from apis.meta.field import ErrorType, FieldError, invalid
from apis.meta.schemas import OBJECT_META
from apis.runtime.kinds import HubObject
from apis.schema.defaults import apply_defaults
from apis.schema.prune import prune
from apis.schema.validate import validate
from server.endpoints.scope import ResourceScope


class DecodingError(Exception):
    """A body the decoder refuses, with the kind and version the body claims."""

    def __init__(self, message: str, kind: str, version: str) -> None:
        super().__init__(message)
        self.message, self.kind, self.version = message, kind, version

    def status(self, scope: ResourceScope) -> StatusError:
        """The 400 kube's handlers answer, for custom resources as for scheme types."""
        return errors.bad_request(
            f"{self.kind} in version {go_quote(self.version)} cannot be handled as a {scope.kind.kind}: "
            + self.message
        )


def _strict_message(unknown: list[str], duplicates: list[str]) -> str:
    parts = [f'unknown field "{f}"' for f in unknown] + [f'duplicate field "{f}"' for f in duplicates]
    return "strict decoding error: " + ", ".join(parts)


def _check_other_kind(scope: ResourceScope, kind: str, api_version: str) -> None:
    """A body of another kind of a scheme-types group does not convert into the URL's kind; in a
    custom-resource-style group the `kind` check of validation refuses it (a 422, below)."""
    types = scope.group.scheme_types
    group, _, version = api_version.rpartition("/")
    other = scope.group.kind_named(kind)
    if types is None or group != scope.group.group or other is None or version not in other.versions:
        return
    into = f"{types.internal_package}.{scope.kind.kind}"
    raise DecodingError(f"converting ({version}.{kind}) to ({into}): unknown conversion", kind, version)


def check_type(scope: ResourceScope, data: Any) -> str:
    """Validate apiVersion/kind of a body and return its version, which is the URL's."""
    if not isinstance(data, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object, got {type(data).__name__}")
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not kind:
        raise errors.bad_request(f"Object 'Kind' is missing in '{_preview(data)}'")
    if not api_version:
        raise errors.bad_request(f"Object 'apiVersion' is missing in '{_preview(data)}'")
    if kind != scope.kind.kind:
        _check_other_kind(scope, str(kind), str(api_version))
    version = scope.codec.version_of(str(api_version))
    if version != scope.version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match "
            f"the expected API version ({scope.api_version})"
        )
    if kind != scope.kind.kind:
        name = (data.get("metadata") or {}).get("name", "") if isinstance(data.get("metadata"), dict) else ""
        raise errors.invalid(scope.group_kind, name, [invalid("kind", kind, f"must be {scope.kind.kind}")])
    return version


@dataclass(slots=True)
class Decoded:
    """A decoded write: the hub object, and the versioned data whose schema errors are still to be
    reported, with the strategy's and the CEL rules' in one 422 (kube validates a custom resource
    in its strategy, after defaulting, all in one list)."""

    hub: HubObject
    warnings: list[str]
    data: dict[str, Any]
    errors: list[FieldError] = field(default_factory=list)


def decode_write(
    scope: ResourceScope,
    data: Any,
    *,
    field_validation: str,
    duplicates: list[str] = (),  # type: ignore[assignment]
    patch: str | None = None,
) -> Decoded:
    """`patch` is the patched object as JSON when `data` is the result of a patch: kube's patch handler
    turns every decoding error of the patched object (strict or not) into a 422 with an empty kind
    and name and one cause `patch` carrying that JSON (handlers/patch.go applyPatchToCurrentObject).
    """
    try:
        return _decode(scope, data, field_validation, duplicates)
    except DecodingError as e:
        if patch is None:
            raise e.status(scope) from None
        raise errors.invalid(GroupKind("", ""), "", [invalid("patch", patch, e.message)]) from None
    except StatusError as e:
        if patch is None or e.code != 400:
            raise
        raise errors.invalid(GroupKind("", ""), "", [invalid("patch", patch, e.message)]) from None


def _name(data: Any) -> str:
    meta = data.get("metadata") if isinstance(data, dict) else None
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def _decode(scope: ResourceScope, data: Any, field_validation: str, duplicates: list[str]) -> Decoded:
    version = check_type(scope, data)
    schema = scope.kind.versions[version].schema
    unknown = prune(data, schema)
    warnings: list[str] = []
    if unknown or duplicates:
        if field_validation == "Strict":
            raise DecodingError(_strict_message(unknown, list(duplicates)), str(data["kind"]), version)
        if field_validation == "Warn":
            warnings = [f'unknown field "{f}"' for f in unknown] + [
                f'duplicate field "{f}"' for f in duplicates
            ]
    # kube defaults in the decoder and validates in the strategy: a null or missing field that has a
    # default is valid (KEP-1929), so defaults come first.
    apply_defaults(data, schema)
    _check_object_meta(data)
    errs = validate(data, schema)
    try:
        hub = scope.codec.from_version(data, version)
    except (TypeError, ValueError, KeyError, AttributeError):
        if not errs:
            raise
        # Too malformed to become a hub object: the schema errors are all that can be reported.
        raise errors.invalid(scope.group_kind, _name(data), errs) from None
    return Decoded(hub, warnings, data, errs)


def _check_object_meta(data: dict[str, Any]) -> None:
    """kube decodes a custom resource's metadata into the typed ObjectMeta before anything else, so a
    wrongly typed field (labels: 1, name: [..], a non-RFC 3339 timestamp) is a 400 decoding error,
    never something validation or the registry has to cope with."""
    meta = data.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise errors.bad_request(f"invalid metadata: expected object, got {_json_type(meta)}")
    errs = [
        e
        for e in validate(meta, OBJECT_META, "metadata", is_resource_root=False)
        if e.type is ErrorType.TYPE_INVALID
    ]
    if errs:
        raise errors.bad_request("invalid metadata: " + "; ".join(str(e) for e in errs))


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array"}
    return names.get(type(value), "null")


def _preview(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), default=str)
    return text if len(text) <= 200 else text[:200] + "..."
