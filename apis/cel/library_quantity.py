"""kube's quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go) over apimachinery's parser.

A quantity is parsed exactly as resource.ParseQuantity does (same grammar, suffixes, decimal
exponents, rounding up to nano precision, the BinarySI cap, the same error texts), then kept as its
exact value: kube's `==` is `Quantity.Equal` (same value, whatever the format), and no function of
the library shows the format, so the message carries only the normalized decimal value.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal
from typing import Any

from apis.cel import objects
from apis.cel.engine import BOOL, DOUBLE, INT, STRING, Function, Overload, ordering

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_BINARY = Decimal(2**63 - 1)  # apimachinery's maxAllowed
_NANO = Decimal("1e-9")
# Exact arithmetic: quantities are bounded by the schema's string lengths, far below this.
_CTX = decimal.Context(prec=5000, Emax=10**9, Emin=-(10**9), rounding=decimal.ROUND_UP)
_INT64 = (-(2**63), 2**63 - 1)


class QuantityError(ValueError):
    pass


_DIGITS = "0123456789"


def _split(text: str) -> tuple[bool, str, str, str]:
    """apimachinery's parseQuantityString: (positive, integer digits, fraction digits, suffix)."""
    positive, pos, end = True, 0, len(text)
    if text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    num = text[pos:i] or "0"
    if i >= end:
        return positive, num, "", ""
    pos, denom = i, ""
    if text[pos] == ".":
        pos += 1
        i = pos
        while i < end and text[i] in _DIGITS:
            i += 1
        denom = text[pos:i]
        if i >= end:
            return positive, num, denom, ""
        pos = i
    start = i = pos
    while i < end and text[i] in "eEinumkKMGTP":
        i += 1
    if i < end and text[i] in "+-":
        i += 1
    while i < end and text[i] in _DIGITS:
        i += 1
    if i < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, num, denom, text[start:]


def _interpret(suffix: str) -> tuple[int, int] | None:
    """(base, exponent) of a suffix, as apimachinery's suffixHandler.interpret."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        return 10, int(suffix[1:])
    return None


def parse(text: str) -> Decimal:
    """resource.ParseQuantity's value (the format is dropped: nothing in CEL can observe it)."""
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Decimal(0)
    positive, num, denom, suffix = _split(text)
    base_exp = _interpret(suffix)
    if base_exp is None:
        raise QuantityError(ERR_SUFFIX)
    base, exponent = base_exp
    try:
        amount = _CTX.create_decimal(num + ("." + denom if denom else ""))
        amount = _CTX.multiply(amount, Decimal(2**exponent)) if base == 2 else _CTX.scaleb(amount, exponent)
    except decimal.DecimalException:
        raise QuantityError(ERR_NUMERIC) from None
    exp = amount.as_tuple().exponent
    if amount != 0 and isinstance(exp, int) and exp < -9:
        amount = amount.quantize(_NANO, context=_CTX)  # inf.RoundUp: away from zero
    if base == 2 and amount > _MAX_BINARY:
        amount = _MAX_BINARY
    return amount if positive else -amount


def _new(value: Decimal) -> Any:
    return objects.new(objects.QUANTITY, value=str(value.normalize(_CTX)) if value else "0")


def _value(q: Any) -> Decimal:
    return _CTX.create_decimal(q.value)


def _to_quantity(text: str) -> Any:
    return _new(parse(text))


def _is_quantity(text: str) -> bool:
    try:
        parse(text)
    except QuantityError:
        return False
    return True


def _as_int64(q: Any) -> int | None:
    v = _value(q)
    if v != v.to_integral_value() or not _INT64[0] <= v <= _INT64[1]:
        return None
    return int(v)


def _as_integer(q: Any) -> int:
    v = _as_int64(q)
    if v is None:
        raise ValueError("cannot convert value to integer")
    return v


def _compare(a: Any, b: Any) -> int:
    x, y = _value(a), _value(b)
    return (x > y) - (x < y)


def _sign(q: Any) -> int:
    v = _value(q)
    return (v > 0) - (v < 0)


def _sum(q: Any, addend: Decimal) -> Any:
    """A new quantity: kube's add/sub work on a copy, the receiver is unchanged."""
    return _new(_CTX.add(_value(q), addend))


_Q = objects.QUANTITY

QUANTITY_LIBRARY: tuple[Function, ...] = (
    Function("quantity", [Overload("string_to_quantity", [STRING], _Q, _to_quantity)]),
    Function("isQuantity", [Overload("is_quantity_string", [STRING], BOOL, _is_quantity)]),
    # kube declares sign() as a global function, not a member: `sign(q)`.
    Function("sign", [Overload("quantity_sign", [_Q], INT, _sign)]),
    *ordering("quantity", _Q, _compare),
    Function(
        "asApproximateFloat",
        [Overload("quantity_get_float", [_Q], DOUBLE, lambda q: float(_value(q)), member=True)],
    ),
    Function("asInteger", [Overload("quantity_get_int", [_Q], INT, _as_integer, member=True)]),
    Function(
        "isInteger",
        [Overload("quantity_is_integer", [_Q], BOOL, lambda q: _as_int64(q) is not None, member=True)],
    ),
    Function(
        "add",
        [
            Overload("quantity_add", [_Q, _Q], _Q, lambda a, b: _sum(a, _value(b)), member=True),
            Overload("quantity_add_int", [_Q, INT], _Q, lambda a, n: _sum(a, Decimal(n)), member=True),
        ],
    ),
    Function(
        "sub",
        [
            Overload("quantity_sub", [_Q, _Q], _Q, lambda a, b: _sum(a, -_value(b)), member=True),
            Overload("quantity_sub_int", [_Q, INT], _Q, lambda a, n: _sum(a, -Decimal(n)), member=True),
        ],
    ),
)
