"""kube's semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go) over blang/semver's rules.

`semver.Parse` (strict `MAJOR.MINOR.PATCH[-pre][+build]`, no leading zeros, blang's error texts)
and `Compare` (semver 2.0 precedence) are ported; `semver(s, true)` normalizes as kube does
(`v` prefix, leading zeros, missing minor/patch). kube's `==` is `Version.EQ`, which ignores build
metadata and nothing reads it, so the message keeps major, minor, patch and the prerelease only.
"""

from __future__ import annotations

import json
from typing import Any

from apis.cel import objects
from apis.cel.engine import BOOL, INT, STRING, Function, Overload, ordering

_NUMBERS = "0123456789"
_ALPHANUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" + _NUMBERS
_UINT64_MAX = 2**64 - 1


def _contains_only(s: str, chars: str) -> bool:
    return all(c in chars for c in s)


def _leading_zeroes(s: str) -> bool:
    return len(s) > 1 and s[0] == "0"


def _parse_uint(s: str) -> int:
    if not s or not _contains_only(s, _NUMBERS):
        raise ValueError(f"strconv.ParseUint: parsing {json.dumps(s)}: invalid syntax")
    value = int(s)
    if value > _UINT64_MAX:
        raise ValueError(f"strconv.ParseUint: parsing {json.dumps(s)}: value out of range")
    return value


def _number(s: str, what: str) -> int:
    if not _contains_only(s, _NUMBERS):
        raise ValueError(f"Invalid character(s) found in {what.lower()} number {json.dumps(s)}")
    if _leading_zeroes(s):
        raise ValueError(f"{what} number must not contain leading zeroes {json.dumps(s)}")
    return _parse_uint(s)


def _prerelease(s: str) -> int | str:
    if not s:
        raise ValueError("Prerelease is empty")
    if _contains_only(s, _NUMBERS):
        if _leading_zeroes(s):
            raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {json.dumps(s)}")
        return _parse_uint(s)
    if _contains_only(s, _ALPHANUM):
        return s
    raise ValueError(f"Invalid character(s) found in prerelease {json.dumps(s)}")


def parse(s: str) -> tuple[int, int, int, str]:
    """blang/semver's Parse: (major, minor, patch, prerelease as written)."""
    if not s:
        raise ValueError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "Major"), _number(parts[1], "Minor")
    patch, plus, build = parts[2].partition("+")
    patch, dash, pre = patch.partition("-")
    number = _number(patch, "Patch")
    if dash:
        for p in pre.split("."):
            _prerelease(p)
    if plus:
        for b in build.split("."):
            if not b:
                raise ValueError("Build meta data is empty")
            if not _contains_only(b, _ALPHANUM):
                raise ValueError(f"Invalid character(s) found in build meta data {json.dumps(b)}")
    return major, minor, number, pre if dash else ""


def _normalize(s: str) -> str:
    """kube's normalizeAndParse: drop a `v`, leading zeros, and fill a missing minor/patch."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def _to_semver(s: str, normalize: bool = False) -> Any:
    major, minor, patch, pre = parse(_normalize(s) if normalize else s)
    return objects.new(objects.SEMVER, major=major, minor=minor, patch=patch, pre=pre)


def _is_semver(s: str, normalize: bool = False) -> bool:
    try:
        parse(_normalize(s) if normalize else s)
    except ValueError:
        return False
    return True


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _compare_pre(a: str, b: str) -> int:
    if not a or not b:
        return 0 if a == b else (1 if not a else -1)  # a release ranks above its prereleases
    xs, ys = [_prerelease(p) for p in a.split(".")], [_prerelease(p) for p in b.split(".")]
    for x, y in zip(xs, ys, strict=False):
        if isinstance(x, int) != isinstance(y, int):
            return -1 if isinstance(x, int) else 1  # numeric identifiers rank lower
        if x != y:
            return _cmp(x, y)
    return _cmp(len(xs), len(ys))


def compare(a: Any, b: Any) -> int:
    for x, y in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if x != y:
            return _cmp(x, y)
    return _compare_pre(a.pre, b.pre)


_S = objects.SEMVER

SEMVER_LIBRARY: tuple[Function, ...] = (
    Function(
        "semver",
        [
            Overload("string_to_semver", [STRING], _S, _to_semver),
            Overload("string_bool_to_semver", [STRING, BOOL], _S, _to_semver),
        ],
    ),
    Function(
        "isSemver",
        [
            Overload("is_semver_string", [STRING], BOOL, _is_semver),
            Overload("is_semver_string_bool", [STRING, BOOL], BOOL, _is_semver),
        ],
    ),
    *ordering("semver", _S, compare),
    Function("major", [Overload("semver_major", [_S], INT, lambda v: v.major, member=True)]),
    Function("minor", [Overload("semver_minor", [_S], INT, lambda v: v.minor, member=True)]),
    Function("patch", [Overload("semver_patch", [_S], INT, lambda v: v.patch, member=True)]),
)
