"""kube's named-format library (k8s.io/apiserver/pkg/cel/library/format.go).

`format.named(name)` returns `optional(kubernetes.NamedFormat)` and `<format>.validate(s)`
`optional(list(string))`, as in kube: declared with `optional_of`, they return `engine.NONE` or a
value here, and the expression gets a real CEL optional (`orValue`, `.?`, `== optional.none()`,
`type()` behave as kube's; see engine.Environment).
The validators are apimachinery's (apis/meta/names.py) and kube-openapi's strfmt checks, with
kube's messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apis.cel import objects
from apis.cel.engine import NONE, STRING, Function, Overload, list_of, optional_of
from apis.cel.library_url import request_uri_error
from apis.meta import names
from apis.schema.validate import _FORMAT_CHECKS as STRFMT  # kube-openapi's strfmt.Default, ported

Validator = Callable[[str], list[str]]


def _masked(validate: Validator) -> Validator:
    """The `...Prefix` formats: a generateName prefix may end in '-' (apimachinery's maskTrailingDash)."""

    def check(s: str) -> list[str]:
        return validate(s[: max(len(s) - 2, 0)] + "a" if len(s) > 1 and s.endswith("-") else s)

    return check


def _strfmt(name: str, message: str) -> Validator:
    return lambda s: [] if STRFMT[name](s) else [message]


def _uri(s: str) -> list[str]:
    error = request_uri_error(s)
    return [error] if error else []


# kube's ConstantFormats: the CEL name → (Name, validator).
FORMATS: dict[str, tuple[str, Validator]] = {
    "dns1123Label": ("DNS1123Label", names.is_dns1123_label),
    "dns1123Subdomain": ("DNS1123Subdomain", names.is_dns1123_subdomain),
    "dns1035Label": ("DNS1035Label", names.is_dns1035_label),
    "qualifiedName": ("QualifiedName", names.is_qualified_name),
    "dns1123LabelPrefix": ("DNS1123LabelPrefix", _masked(names.is_dns1123_label)),
    "dns1123SubdomainPrefix": ("DNS1123SubdomainPrefix", _masked(names.is_dns1123_subdomain)),
    "dns1035LabelPrefix": ("DNS1035LabelPrefix", _masked(names.is_dns1035_label)),
    "labelValue": ("LabelValue", names.is_valid_label_value),
    "uri": ("URI", _uri),
    "uuid": ("uuid", _strfmt("uuid", "does not match the UUID format")),
    "byte": ("byte", _strfmt("byte", "invalid base64")),
    "date": ("date", _strfmt("date", "invalid date")),
    "datetime": ("datetime", _strfmt("datetime", "invalid datetime")),
}
_BY_NAME = {name: validate for name, validate in FORMATS.values()}


def _format(cel_name: str) -> Any:
    return objects.new(objects.NAMED_FORMAT, name=FORMATS[cel_name][0])


def _named(cel_name: str) -> Any:
    return _format(cel_name) if cel_name in FORMATS else NONE


def _validate(f: Any, s: str) -> Any:
    errors = _BY_NAME[f.name](s)
    return errors if errors else NONE


_F = objects.NAMED_FORMAT

FORMAT_LIBRARY: tuple[Function, ...] = (
    Function("format.named", [Overload("format-named", [STRING], optional_of(_F), _named)]),
    *(
        Function(f"format.{name}", [Overload(f"format.{name}", [], _F, lambda n=name: _format(n))])
        for name in FORMATS
    ),
    Function(
        "validate",
        [Overload("format-validate", [_F, STRING], optional_of(list_of(STRING)), _validate, member=True)],
    ),
)
