"""Schema validation with the exact field errors kube-apiserver returns for a custom resource.

Two passes, in kube's order:

1. The OpenAPI value validation of k8s.io/kube-openapi pkg/validation/validate (schema.go runs the
   type, string, format, number, slice, enum and object validators in that order on every value),
   turned into field errors the way apiextensions-apiserver's kubeOpenAPIResultToFieldErrors
   (pkg/apiserver/validation/validation.go) does. Message texts are pkg/validation/errors/schema.go's
   (`<name> in body should be greater than or equal to 0`, `... must be of type number: "string"`).
2. The structural invariants checked after it: apiVersion/kind of x-kubernetes-embedded-resource
   objects (schema/objectmeta/validation.go) and uniqueness in x-kubernetes-list-type set/map lists
   (schema/listtype/validation.go), whose paths use `[key]` for map values as field.Path.Key does.

Go's quirks are kept where a client could see them: a whole float (1.0) is a valid integer; an integer
outside int64 arrives as a float; int32/int64 formats do not limit ranges (kube-openapi never checks
them for schemas); null fails any enum. Root metadata, apiVersion and kind are only type-checked:
ObjectMeta has its own validation.
"""

from __future__ import annotations

import calendar
import functools
import ipaddress
import math
import re
from collections.abc import Callable
from typing import Any

from apis.goformat import go_float, go_json, go_quote
from apis.meta import field
from apis.meta.field import ErrorType, FieldError
from apis.schema.memo import per_schema

Schema = dict[str, Any]

_META_FIELDS = ("apiVersion", "kind", "metadata")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_JSON_INT = 2**53 - 1  # swag.IsFloat64AJSONInteger's bounds

_UUID = {
    "uuid": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid3": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid4": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    "uuid5": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
}
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
# String formats CRDs support (apiextensions validation/formats.go), normalized without dashes.
_STRING_FORMATS = frozenset(
    {
        *("bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "byte", "password"),
        *("uuid", "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn"),
        *("hexcolor", "rgbcolor", "date", "duration", "datetime", "quantity", "k8sshortname", "k8slongname"),
    }
)


def validate(obj: Any, schema: Schema, path: str = "", *, is_resource_root: bool = True) -> list[FieldError]:
    """All field errors of `obj` against `schema`; `path` names `obj` itself (empty at the root)."""
    errs: list[FieldError] = []
    _value(obj, schema, path, errs, root=is_resource_root)
    embedded: list[FieldError] = []
    lists: list[FieldError] = []
    _structural(obj, schema, path, embedded, lists, root=is_resource_root)
    return errs + embedded + lists


# --- pass 1: kube-openapi value validation ---------------------------------------------------------


def _field(name: str) -> str:
    return name[1:] if name.startswith(".") else name


def _types(s: Schema) -> list[str]:
    if s.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    return [s["type"]] if s.get("type") else []


def _format(s: Schema) -> str:
    """The format kube keeps after StripUnsupportedFormatsPostProcess; others are ignored."""
    fmt = s.get("format") or ""
    kind = "" if s.get("x-kubernetes-int-or-string") else s.get("type", "")
    if not fmt:
        return ""
    if kind in ("", "string"):
        return fmt if fmt.replace("-", "") in _STRING_FORMATS else ""
    if kind == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if kind == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _is_json_integer(f: float) -> bool:
    if not math.isfinite(f) or abs(f) > _MAX_JSON_INT:
        return False
    if f == math.trunc(f):
        return True
    g = math.trunc(f)
    if f < 0 or g == 0:
        return False
    return (f - g) / (f + g) < 1e-9


def _kind(x: Any) -> tuple[str, str]:
    """(JSON type, Go format) of a decoded JSON value, as typeValidator.schemaInfoForType sees it."""
    if isinstance(x, bool):
        return "boolean", ""
    if isinstance(x, int):
        return "integer", "int64"
    if isinstance(x, float):
        return "number", "float64"
    if isinstance(x, str):
        return "string", ""
    if isinstance(x, list):
        return "array", ""
    return ("object", "") if isinstance(x, dict) else ("", "")


def _value(x: Any, s: Schema, name: str, errs: list[FieldError], *, root: bool = False) -> None:
    if isinstance(x, int) and not isinstance(x, bool) and not _INT64_MIN <= x <= _INT64_MAX:
        x = float(x)  # Go's JSON decoding falls back to float64 beyond int64
    _check_type(x, s, name, errs)
    if x is not None:
        if isinstance(x, str):
            _check_string(x, s, name, errs)
        elif _is_number(x):
            _check_number(x, s, name, errs)
        elif isinstance(x, list):
            _check_slice(x, s, name, errs)
    _check_enum(x, s, name, errs)
    if isinstance(x, dict):
        _check_object(x, s, name, errs, root=root)


def _type_error(name: str, value: str, type_name: str) -> FieldError:
    detail = f"{name} in body must be of type {type_name}: {go_quote(value)}"
    return field.type_invalid(_field(name), value, detail)


@per_schema
def _type_check(s: Schema) -> tuple[list[str], str]:
    return _types(s), _format(s)


# The JSON type of a decoded value whose type alone decides a format-less type check.
_PLAIN_KINDS: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _check_type(x: Any, s: Schema, name: str, errs: list[FieldError]) -> None:
    types, fmt = _type_check(s)
    if not types and not fmt:
        return
    if x is None:
        if types and not s.get("nullable", False):
            errs.append(_type_error(name, "null", ",".join(types)))
        return
    if not fmt and _PLAIN_KINDS.get(type(x)) in types:
        return  # the common case, decided without the conversions below
    kind, go_format = _kind(x)
    float_int = kind == "number" and _is_json_integer(x) and "integer" in types
    int_float = kind == "integer" and "number" in types
    stringish = isinstance(x, str | list)
    if not stringish and fmt and not (kind in types or go_format == fmt or float_int or int_float):
        errs.append(_type_error(name, go_format, fmt))
    elif not ("number" in types or "integer" in types) and fmt and stringish:
        return
    elif not (kind in types or float_int or int_float):
        errs.append(_type_error(name, kind, ",".join(types)))


def _check_string(x: str, s: Schema, name: str, errs: list[FieldError]) -> None:
    # kube-openapi's stringValidator stops at the first failure.
    if "maxLength" in s and len(x) > s["maxLength"]:
        errs.append(FieldError(ErrorType.TOO_LONG, _field(name), x, "value is too long"))
    elif "minLength" in s and len(x) < s["minLength"]:
        detail = f"{name} in body should be at least {s['minLength']} chars long"
        errs.append(field.invalid(_field(name), x, detail))
    elif s.get("pattern"):
        pattern = s["pattern"]
        try:
            if _regex(pattern).search(x) is None:
                errs.append(field.invalid(_field(name), x, f"{name} in body should match '{pattern}'"))
        except re.error as e:
            detail = f"{name} in body should match '{pattern}, but pattern is invalid: {e}'"
            errs.append(field.invalid(_field(name), x, detail))
    fmt = _format(s)
    check = _FORMAT_CHECKS.get(fmt.replace("-", ""))
    if check is not None and not check(x):
        errs.append(_type_error(name, x, fmt))


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _check_number(x: int | float, s: Schema, name: str, errs: list[FieldError]) -> None:
    # MultipleOf/Minimum/MaximumNativeType: an integer is compared with the bound truncated to int64.
    f = _field(name)
    native = int if isinstance(x, int) else float
    show = str if isinstance(x, int) else go_float
    if "multipleOf" in s:
        factor = native(s["multipleOf"])
        if factor < 0:
            detail = f"factor MultipleOf declared for {name} must be positive: {show(factor)}"
            errs.append(field.invalid(f, factor, detail))
        elif factor and not _multiple(x, factor):
            errs.append(field.invalid(f, x, f"{name} in body should be a multiple of {show(factor)}"))
    if "minimum" in s:
        low, excl = native(s["minimum"]), bool(s.get("exclusiveMinimum"))
        if x < low or (excl and x == low):
            op = "greater than" if excl else "greater than or equal to"
            errs.append(field.invalid(f, x, f"{name} in body should be {op} {show(low)}"))
    if "maximum" in s:
        high, excl = native(s["maximum"]), bool(s.get("exclusiveMaximum"))
        if x > high or (excl and x == high):
            op = "less than" if excl else "less than or equal to"
            errs.append(field.invalid(f, x, f"{name} in body should be {op} {show(high)}"))


def _multiple(x: int | float, factor: int | float) -> bool:
    if isinstance(x, int) and isinstance(factor, int):
        return x % factor == 0
    return _is_json_integer(1 / factor * x if factor < 1 else x / factor)


def _check_slice(x: list[Any], s: Schema, name: str, errs: list[FieldError]) -> None:
    items = s.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(x):
            _value(item, items, f"{name}[{i}]", errs)
    f, size = _field(name), len(x)
    if "minItems" in s and size < s["minItems"]:
        errs.append(field.invalid(f, size, f"{name} in body should have at least {s['minItems']} items"))
    if "maxItems" in s and size > s["maxItems"]:
        # kube-openapi does not pass the limit on, so field.TooMany falls back to this text.
        errs.append(FieldError(ErrorType.TOO_MANY, f, size, "has too many items"))
    if s.get("uniqueItems") and any(_same(a, b) for i, a in enumerate(x) for b in x[:i]):
        errs.append(field.invalid(f, "", f"{name} in body shouldn't contain duplicates"))


def _check_enum(x: Any, s: Schema, name: str, errs: list[FieldError]) -> None:
    enum = s.get("enum")
    if not enum or (x is not None and any(_enum_match(x, e) for e in enum)):
        return
    supported = [e if isinstance(e, str) else go_json(e) for e in enum]
    errs.append(field.not_supported(_field(name), x, supported))


def _check_object(x: dict[str, Any], s: Schema, name: str, errs: list[FieldError], *, root: bool) -> None:
    props: dict[str, Schema] = s.get("properties") or {}
    extra = s.get("additionalProperties")
    for key, value in x.items():
        if key in props:
            continue
        if extra is False:
            errs.append(field.invalid(_field(name), key, f"{name}.{key} in body is a forbidden property"))
        elif isinstance(extra, dict):
            _value(value, extra, f"{name}.{key}", errs)
    for key, prop in props.items():
        if key in x:
            child = f"{name}.{key}" if name else key
            if root and key in _META_FIELDS:
                _check_type(x[key], prop, child, errs)
            else:
                _value(x[key], prop, child, errs)
    for key in s.get("required") or []:
        if key not in x:
            errs.append(field.required(_field(f"{name}.{key}")))


def _same(a: Any, b: Any) -> bool:
    """reflect.DeepEqual on decoded JSON: 1 and 1.0 differ, and so do 1 and true."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _enum_match(x: Any, e: Any) -> bool:
    if _is_number(x) and _is_number(e):
        # Go converts the value to the enum value's type first: 7.5 becomes int64 7 for an enum of 7.
        return bool((math.trunc(x) if isinstance(e, int) else float(x)) == e)
    return _same(x, e)


def _valid_date(s: str) -> bool:
    m = _DATE.match(s)
    if not m:
        return False
    year, month, day = (int(g) for g in m.groups())
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year or 2000, month)[1]


def _valid_datetime(s: str) -> bool:
    """strfmt.IsDateTime: a date, a `t`, then hh:mm:ss[.frac](z|±hh:mm), case-insensitively."""
    parts = s.lower().split("t")
    if len(s) < 4 or len(parts) < 2 or not _valid_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _valid_ip(s: str, sep: str) -> bool:
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return sep in s and "%" not in s


def _valid_cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _matcher(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: rx.match(s) is not None


_FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "datetime": _valid_datetime,
    "date": _valid_date,
    "byte": lambda s: bool(_BASE64.match(s)),
    "ipv4": lambda s: _valid_ip(s, "."),
    "ipv6": lambda s: _valid_ip(s, ":"),
    "cidr": _valid_cidr,
    "password": lambda s: True,
    **{name: _matcher(re.compile(p)) for name, p in _UUID.items()},
}


# --- pass 2: embedded resources and list types -----------------------------------------------------


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _structural(
    x: Any,
    s: Schema | None,
    path: str,
    embedded: list[FieldError],
    lists: list[FieldError],
    *,
    root: bool = False,
) -> None:
    if s is None:
        return
    if isinstance(x, dict):
        if s.get("x-kubernetes-embedded-resource") and not root:
            _check_embedded(x, path, embedded)
        props: dict[str, Schema] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        for key, value in x.items():
            if root and key in _META_FIELDS:
                continue
            if key in props:
                _structural(value, props[key], _child(path, key), embedded, lists)
            elif isinstance(extra, dict):
                _structural(value, extra, f"{path}[{key}]", embedded, lists)
    elif isinstance(x, list):
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "set":
            lists.extend(field.duplicate(f"{path}[{i}]", x[i]) for i in _duplicates(x))
        elif list_type == "map":
            lists.extend(_check_list_map(x, s, path))
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(x):
                _structural(item, items, f"{path}[{i}]", embedded, lists)


def _check_embedded(x: dict[str, Any], path: str, errs: list[FieldError]) -> None:
    for key in ("apiVersion", "kind"):
        if key not in x:
            errs.append(field.required(_child(path, key)))
        elif not isinstance(x[key], str):
            errs.append(field.invalid(_child(path, key), x[key], "must be a string"))
        elif not x[key]:
            errs.append(field.required(_child(path, key)))


_UNSPECIFIED = object()


def _set_key(v: Any) -> Any:
    if v is _UNSPECIFIED:
        return ("unspecified",)
    if isinstance(v, dict | list):
        return ("compound", go_json(v))
    return ("scalar", type(v).__name__, v)


def _duplicates(values: list[Any]) -> list[int]:
    """Indices of each value's second occurrence, as listtype.validateListSet reports them."""
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, v in enumerate(values):
        key = _set_key(v)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(i)
    return out


def _check_list_map(x: list[Any], s: Schema, path: str) -> list[FieldError]:
    for i, item in enumerate(x):
        if item is not None and not isinstance(item, dict):
            return [field.invalid(f"{path}[{i}]", item, "must be an object for an array of list-type map")]
    if len(x) <= 1:
        return []
    key_fields: list[str] = s.get("x-kubernetes-list-map-keys") or []
    if len(key_fields) == 1:
        (name,) = key_fields
        keys = [_UNSPECIFIED if item is None or name not in item else item[name] for item in x]
        return [
            field.duplicate(f"{path}[{i}]", {} if keys[i] is _UNSPECIFIED else {name: keys[i]})
            for i in _duplicates(keys)
        ]
    maps = [{k: item[k] for k in key_fields if k in item} if item else {} for item in x]
    return [field.duplicate(f"{path}[{i}]", maps[i]) for i in _duplicates(maps)]
