"""Durations written and printed the way Go's ``time`` package does ("1m30s", "500ms", "0").

Kube flags such as ``--request-timeout`` take Go durations, and operators copy values between kube
components and this server, so the same strings must mean the same thing here.
"""

from __future__ import annotations

_NANOS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # U+00B5 micro sign
    "\u03bcs": 1_000,  # U+03BC Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_LIMIT = 2**63  # Go's Duration is an int64 of nanoseconds; -2**63 is the one value this large


def parse_duration_ns(text: str) -> int:
    """Parse like Go's time.ParseDuration, returning nanoseconds; errors carry Go's messages.

    Mirrors Go's arithmetic, including the float64 step for fractions, so that values such as
    "0.3333333333333333333h" land on the same nanosecond as in kube.
    """
    invalid = ValueError(f"time: invalid duration {_quote(text)}")
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if not (rest[0] == "." or _is_digit(rest[0])):
            raise invalid
        whole_digits, rest = _leading_digits(rest)
        whole = int(whole_digits or "0")
        if whole > _LIMIT:
            raise invalid
        fraction, scale, fraction_digits = 0, 1.0, ""
        if rest[:1] == ".":
            fraction_digits, rest = _leading_digits(rest[1:])
            fraction, scale = _leading_fraction(fraction_digits)
        if not whole_digits and not fraction_digits:
            raise invalid
        unit_end = 0
        while unit_end < len(rest) and not (rest[unit_end] == "." or _is_digit(rest[unit_end])):
            unit_end += 1
        if unit_end == 0:
            raise ValueError(f"time: missing unit in duration {_quote(text)}")
        unit_name, rest = rest[:unit_end], rest[unit_end:]
        unit = _NANOS_PER_UNIT.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {_quote(unit_name)} in duration {_quote(text)}")
        if whole > _LIMIT // unit:
            raise invalid
        value = whole * unit
        if fraction > 0:
            value += int(float(fraction) * (float(unit) / scale))
            if value > _LIMIT:
                raise invalid
        total += value
        if total > _LIMIT:
            raise invalid
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise invalid
    return total


def _leading_fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: digits beyond int64 precision are dropped, not an error."""
    value, scale = 0, 1.0
    for char in digits:
        candidate = value * 10 + int(char)
        if candidate > _LIMIT:
            break
        value, scale = candidate, scale * 10
    return value, scale


def parse_duration(text: str) -> float:
    """Parse a Go duration into seconds (what asyncio timeouts take)."""
    return parse_duration_ns(text) / 1_000_000_000


def format_duration(seconds: float) -> str:
    """Render seconds like Go's Duration.String(): 60 → "1m0s", 0.5 → "500ms", 0 → "0s"."""
    nanos = round(seconds * 1_000_000_000)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_decimal(nanos, 1_000)}\u00b5s"
    if nanos < 1_000_000_000:
        return f"{sign}{_decimal(nanos, 1_000_000)}ms"
    hours, nanos = divmod(nanos, 3600 * 1_000_000_000)
    minutes, nanos = divmod(nanos, 60 * 1_000_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return f"{out}{_decimal(nanos, 1_000_000_000)}s"


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _leading_digits(text: str) -> tuple[str, str]:
    end = 0
    while end < len(text) and _is_digit(text[end]):
        end += 1
    return text[:end], text[end:]


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def _quote(text: str) -> str:
    # Not strconv.Quote (apis/goformat.go_quote) on purpose: ParseDuration's errors use the time
    # package's own quote, which in printable ASCII escapes only `"` and `\`, as this does. Beyond
    # printable ASCII it writes each UTF-8 byte as \xNN: strconv.Quote does not, and neither (yet) does this.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
