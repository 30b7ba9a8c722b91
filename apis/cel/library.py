"""The Kubernetes CEL libraries (k8s.io/apiserver/pkg/cel/library) the engine can carry.

Carried: lists (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), regex (`find`,
`findAll`), sets (`sets.contains`, `sets.equivalent`, `sets.intersects`), and, in their own
modules, quantity (`library_quantity`), URLs (`library_url`), IP and CIDR (`library_net`), semver
(`library_semver`), named formats (`library_format`); the engine itself brings optionals and the
strings extension with `format`. The object types of those libraries (`kubernetes.Quantity`, `net.IP`, …) are
protobuf messages to the engine, since it cannot return an opaque value from a Python function
(see apis/cel/objects.py). The authorizer library is `library_authz` (admission only). The engine's
overloads are resolved at runtime by CEL kind only, so list functions are declared over
`list(dyn)` and return `dyn`: kube's checker would reject `['a'].sum()` at compile time, ours
fails it at evaluation.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from apis.cel.engine import BOOL, DYN, INT, STRING, Function, Overload, list_of
from apis.cel.library_format import FORMAT_LIBRARY
from apis.cel.library_net import NET_LIBRARY
from apis.cel.library_quantity import QUANTITY_LIBRARY
from apis.cel.library_semver import SEMVER_LIBRARY
from apis.cel.library_url import URL_LIBRARY

_LIST = list_of(DYN)


def _comparable(values: list[Any]) -> list[Any]:
    kinds = {type(v) for v in values}
    if len(kinds) > 1 and not kinds <= {int, float}:
        raise ValueError("no such overload: list elements are not of one comparable type")
    if any(isinstance(v, list | dict | bool) for v in values):
        raise ValueError("no such overload: list elements are not comparable")
    return values


def _sum(values: list[Any]) -> Any:
    if not values:
        return 0  # kube: an empty list sums to 0 (int)
    kinds = {type(v) for v in values}
    if not kinds <= {int, float} or len(kinds) > 1:
        raise ValueError("no such overload: sum() of a list that is not all int or all double")
    return sum(values)


def _extreme(name: str, pick: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def impl(values: list[Any]) -> Any:
        if not values:
            raise ValueError(f"{name}(list) called on empty list")
        return pick(_comparable(values))

    return impl


def _is_sorted(values: list[Any]) -> bool:
    items = _comparable(values)
    return all(a <= b for a, b in itertools.pairwise(items))


def _index_of(values: list[Any], item: Any) -> int:
    for i, v in enumerate(values):
        if v == item and type(v) is type(item):
            return i
    return -1


def _last_index_of(values: list[Any], item: Any) -> int:
    for i in range(len(values) - 1, -1, -1):
        if values[i] == item and type(values[i]) is type(item):
            return i
    return -1


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    # RE2 and Python's re agree on the syntax rules use; a pattern Python refuses is an eval error.
    return re.compile(pattern)


def _find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


def _contains(a: list[Any], b: list[Any]) -> bool:
    return all(any(x == y and type(x) is type(y) for x in a) for y in b)


_LISTS_REGEX_SETS: tuple[Function, ...] = (
    Function("isSorted", [Overload("list_is_sorted", [_LIST], BOOL, _is_sorted, member=True)]),
    Function("sum", [Overload("list_sum", [_LIST], DYN, _sum, member=True)]),
    Function("min", [Overload("list_min", [_LIST], DYN, _extreme("min", min), member=True)]),
    Function("max", [Overload("list_max", [_LIST], DYN, _extreme("max", max), member=True)]),
    Function("indexOf", [Overload("list_index_of", [_LIST, DYN], INT, _index_of, member=True)]),
    Function("lastIndexOf", [Overload("list_last_index_of", [_LIST, DYN], INT, _last_index_of, member=True)]),
    Function("find", [Overload("string_find", [STRING, STRING], STRING, _find, member=True)]),
    Function(
        "findAll",
        [
            Overload("string_find_all", [STRING, STRING], list_of(STRING), _find_all, member=True),
            Overload("string_find_all_n", [STRING, STRING, INT], list_of(STRING), _find_all, member=True),
        ],
    ),
    Function("sets.contains", [Overload("list_sets_contains", [_LIST, _LIST], BOOL, _contains)]),
    Function(
        "sets.equivalent",
        [
            Overload(
                "list_sets_equivalent", [_LIST, _LIST], BOOL, lambda a, b: _contains(a, b) and _contains(b, a)
            )
        ],
    ),
    Function(
        "sets.intersects",
        [
            Overload(
                "list_sets_intersects", [_LIST, _LIST], BOOL, lambda a, b: any(_contains(a, [y]) for y in b)
            )
        ],
    ),
)

KUBERNETES_LIBRARY: tuple[Function, ...] = (
    _LISTS_REGEX_SETS + QUANTITY_LIBRARY + URL_LIBRARY + NET_LIBRARY + SEMVER_LIBRARY + FORMAT_LIBRARY
)
