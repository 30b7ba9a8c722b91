"""Field errors with paths, rendered exactly like k8s.io/apimachinery/pkg/util/validation/field.

Clients (kubectl, controllers, humans) parse and grep these strings, so the wording and the value
formatting follow the Go implementation rather than anything more Pythonic.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from apis.goformat import go_quote


class ErrorType(enum.Enum):
    # value = (cause reason, human text)
    NOT_FOUND = ("FieldValueNotFound", "Not found")
    REQUIRED = ("FieldValueRequired", "Required value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    INTERNAL = ("InternalError", "Internal error")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")

    @property
    def reason(self) -> str:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


_OMIT = object()
# Types whose bad value Go never prints (they carry only a type and a detail).
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


def format_value(value: Any) -> str:
    """Render a bad value the way Go's field.Error does for JSON-ish values."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class FieldError:
    type: ErrorType
    field: str
    bad_value: Any = _OMIT
    detail: str = ""

    def body(self) -> str:
        if self.type in _VALUELESS or self.bad_value is _OMIT:
            text = self.type.text
        else:
            text = f"{self.type.text}: {format_value(self.bad_value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()


class Path:
    """An immutable field path: Path("spec").child("toppings").index(0) → spec.toppings[0]."""

    __slots__ = ("_text",)

    def __init__(self, *names: str) -> None:
        self._text = ".".join(names)

    @classmethod
    def _of(cls, text: str) -> Path:
        p = cls()
        p._text = text
        return p

    def child(self, name: str, *more: str) -> Path:
        text = ".".join(n for n in (self._text, name, *more) if n)
        return Path._of(text)

    def index(self, i: int) -> Path:
        return Path._of(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path._of(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"


def required(path: Path | str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, str(path), detail=detail)


def invalid(path: Path | str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, str(path), value, detail)


def duplicate(path: Path | str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, str(path), value)


def not_supported(path: Path | str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
    return FieldError(ErrorType.NOT_SUPPORTED, str(path), value, detail)


def forbidden(path: Path | str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, str(path), detail=detail)


def too_long(path: Path | str, max_length: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, str(path), detail=f"may not be more than {max_length} bytes")


def too_many(path: Path | str, actual: int, max_items: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, str(path), actual, f"must have at most {max_items} items")


def type_invalid(path: Path | str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, str(path), value, detail)


def not_found(path: Path | str, value: Any) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, str(path), value)
