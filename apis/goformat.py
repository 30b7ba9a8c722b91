"""Go's own renderings of strings, floats and JSON, which kube's messages and field sets are made of.

One module, under `apis/` so that `apis/`, `registry/` and `server/` may all use it (`apis/` imports
nothing of the others):

- `go_quote`: strconv.Quote, i.e. ``%q`` of a string (field errors, authorization and audit messages);
- `go_float`: ``%v`` of a float64 (strconv.FormatFloat 'g', shortest digits);
- `go_json`: encoding/json's Marshal of a decoded JSON value (compact, sorted keys, HTML characters
  and U+2028/U+2029 escaped, Go's float format), and `smd_json`, structured-merge-diff's (through
  json-iterator) for fieldsV1 path elements, which differs in two details.

A Go string holds bytes, a Python string code points; the two meet at the surrogates, which no Go
string can hold. A surrogate in U+DC80..U+DCFF is a byte that was not UTF-8 (``surrogateescape``, as
request paths and headers are decoded): Go's Quote writes that byte as ``\\xNN``. Any other lone
surrogate can only come from a JSON escape such as ``"\\ud800"``, which Go's decoder turns into U+FFFD.

Not here: Go's time package quotes durations with its own rules (`server/duration.py`), and the
continue token's JSON is written in `storage/continuation.py`, which imports nothing of the others.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from json.encoder import encode_basestring
from typing import Any

_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """Go's strconv.Quote (``%q``).

    JSON quoting differs exactly where hostile input lives: Go writes a NUL as ``\\x00`` and DEL as
    ``\\x7f`` (JSON: ``\\u0000``, and DEL raw), so kube's message for a selector, name or path with
    control characters is only reproduced this way.
    """
    if text.isprintable():  # the common case (names, paths, user agents), at C speed
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[ch])
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:  # a lone surrogate from a JSON escape: U+FFFD in Go
            out.append("\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


# --- floats ---------------------------------------------------------------------------------------


def _digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits of |f| and the decimal point position (strconv's digs.d, digs.dp)."""
    t = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    return digits, len(digits) + int(t.exponent)


def _format_digits(f: float, digits: str, dp: int, exponent_form: bool) -> str:
    sign = "-" if f < 0 else ""
    if exponent_form:
        exp = dp - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return sign + digits + "0" * (dp - len(digits))
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def go_float(f: float) -> str:
    """fmt's %v of a float64 (strconv.FormatFloat(f, 'g', -1, 64)): 1e+06, 0.5, 100000, 1e-05."""
    if not math.isfinite(f):
        return "NaN" if math.isnan(f) else ("+Inf" if f > 0 else "-Inf")
    if f == 0:
        return "0"
    digits, dp = _digits(f)
    return _format_digits(f, digits, dp, dp - 1 < -4 or dp - 1 >= 6)


def _json_float(f: float, *, clean_exponent: bool) -> str:
    """A float64 as JSON encoders in Go write it: 'f' form from 1e-6 below 1e21, else 'e' form;
    encoding/json then shortens e-07 to e-7, json-iterator (structured-merge-diff) does not."""
    if f == 0:
        return "0"
    # Shortest digits, then zeros: 1.2345678901234567e20 is 123456789012345670000, not its exact value.
    digits, dp = _digits(f)
    text = _format_digits(f, digits, dp, abs(f) < 1e-6 or abs(f) >= 1e21)
    return re.sub(r"e([+-])0(\d)$", r"e\1\2", text) if clean_exponent else text


# --- JSON -----------------------------------------------------------------------------------------

# encoding/json escapes these although JSON does not require it (HTML safety, JavaScript line
# separators); a lone surrogate, which it cannot meet, is what its decoder made U+FFFD of.
_JSON_EXTRA = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_JSON_EXTRA_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _json_extra(match: re.Match[str]) -> str:
    return _JSON_EXTRA_ESCAPES.get(match[0], "\ufffd")


def go_json_string(text: str) -> str:
    """A JSON string literal as json.Marshal writes it (escapeHTML on; \\b and \\f short, as Go >= 1.22)."""
    quoted: str = encode_basestring(text)
    return quoted if _JSON_EXTRA.search(quoted) is None else _JSON_EXTRA.sub(_json_extra, quoted)


# An escape pair of json.Marshal's output that json-iterator writes otherwise (or, `\\\\`, keeps, so
# that a backslash followed by a "b" stays what it is).
_SHORT_BF = re.compile(r"\\[\\bf]")
_LONG_BF = {"\\b": "\\u0008", "\\f": "\\u000c"}


def _smd_json_string(text: str) -> str:
    """json-iterator's string (escapeHTML on): json.Marshal's, with \\b and \\f as \\u0008 and \\u000c."""
    quoted = go_json_string(text)
    if "\b" not in text and "\f" not in text:
        return quoted
    return _SHORT_BF.sub(lambda m: _LONG_BF.get(m[0], m[0]), quoted)


def _json(value: Any, string: Callable[[str], str], clean_exponent: bool) -> str:
    if isinstance(value, str):
        return string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # Go refuses NaN and the infinities; JSON's spelling of them keeps an error message printable.
        return (
            _json_float(value, clean_exponent=clean_exponent) if math.isfinite(value) else json.dumps(value)
        )
    if isinstance(value, dict):
        members = (f"{string(k)}:{_json(value[k], string, clean_exponent)}" for k in sorted(value))
        return "{" + ",".join(members) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_json(v, string, clean_exponent) for v in value) + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def go_json(value: Any) -> str:
    """encoding/json's Marshal of a decoded JSON value: compact, keys sorted, Go's float format
    (kube's messages that print a value as JSON: an enum's supported values)."""
    return _json(value, go_json_string, True)


def smd_json(value: Any) -> str:
    """structured-merge-diff's value.ToJSON (json-iterator, compatible with the standard library),
    which writes the keys and values of fieldsV1 path elements: as `go_json`, except that \\b and
    \\f are written \\u0008 and \\u000c and an exponent keeps its leading zero (1e-07)."""
    return _json(value, _smd_json_string, False)
