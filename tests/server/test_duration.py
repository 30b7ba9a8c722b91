"""Durations parse and print as Go's time package does (cases taken from Go's time_test.go)."""

from __future__ import annotations

import pytest

from server.duration import format_duration, parse_duration, parse_duration_ns

S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("5s", 5 * S),
        ("30s", 30 * S),
        ("1478s", 1478 * S),
        ("-5s", -5 * S),
        ("+5s", 5 * S),
        ("-0", 0),
        ("+0", 0),
        ("5.0s", 5 * S),
        ("5.6s", 5 * S + 600_000_000),
        ("5.s", 5 * S),
        (".5s", S // 2),
        ("1.0s", S),
        ("1.00s", S),
        ("1.004s", S + 4_000_000),
        ("100.00100s", 100 * S + 1_000_000),
        ("10ns", 10),
        ("11us", 11_000),
        ("12\u00b5s", 12_000),
        ("12\u03bcs", 12_000),
        ("13ms", 13_000_000),
        ("14s", 14 * S),
        ("15m", 15 * 60 * S),
        ("16h", 16 * 3600 * S),
        ("3h30m", (3 * 3600 + 30 * 60) * S),
        ("10.5s4m", 4 * 60 * S + 10 * S + S // 2),
        ("-2m3.4s", -(2 * 60 * S + 3 * S + 400_000_000)),
        ("1h2m3s4ms5us6ns", 3600 * S + 2 * 60 * S + 3 * S + 4_000_000 + 5_000 + 6),
        ("39h9m14.425s", (39 * 3600 + 9 * 60 + 14) * S + 425_000_000),
        ("52763797000ns", 52763797000),
        ("0.3333333333333333333h", 1200 * S),
        ("9223372036854775807ns", 2**63 - 1),
        ("-9223372036854775808ns", -(2**63)),
    ],
)
def test_parses_like_go(text: str, nanos: int) -> None:
    assert parse_duration_ns(text) == nanos


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("3", 'time: missing unit in duration "3"'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1.5 s", 'time: unknown unit " s" in duration "1.5 s"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("3000000h", 'time: invalid duration "3000000h"'),
    ],
)
def test_rejects_like_go(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_duration(text)
    assert str(err.value) == message


def test_seconds_view() -> None:
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("500ms") == 0.5


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1e-9, "1ns"),
        (1.1e-6, "1.1\u00b5s"),
        (0.0022, "2.2ms"),
        (0.5, "500ms"),
        (2, "2s"),
        (3.3, "3.3s"),
        (60, "1m0s"),
        (90, "1m30s"),
        (300, "5m0s"),
        (1800, "30m0s"),
        (3600, "1h0m0s"),
        (4 * 60 + 5.001, "4m5.001s"),
        (5 * 3600 + 6 * 60 + 7.001, "5h6m7.001s"),
        (-60, "-1m0s"),
    ],
)
def test_formats_like_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
